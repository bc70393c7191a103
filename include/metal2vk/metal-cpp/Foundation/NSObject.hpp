// Foundation's object model as metal-cpp presents it: reference-counted objects handled through raw pointers,
// with alloc/init/retain/release/autorelease and NS::SharedPtr. metal2vk implements it in C++ (m2v_metal).
//
// Ownership follows Cocoa's rules: objects returned by alloc, new*, copy* and Copy* functions are owned by the
// caller (+1) and must be released; objects returned by other class methods (NS::String::string,
// MTL::FunctionDescriptor::functionDescriptor, ...) are autoreleased: they live until the innermost
// NS::AutoreleasePool of the calling thread is drained (a thread without a pool drains when it exits).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace NS {

using Integer = std::intptr_t;
using UInteger = std::uintptr_t;
using TimeInterval = double;
constexpr Integer IntegerMax = INTPTR_MAX;
constexpr Integer IntegerMin = INTPTR_MIN;
constexpr UInteger UIntegerMax = UINTPTR_MAX;
constexpr UInteger NotFound = IntegerMax;

struct Range {
  UInteger location = 0;
  UInteger length = 0;
  Range() = default;
  Range(UInteger loc, UInteger len) : location(loc), length(len) {}
  static Range Make(UInteger loc, UInteger len) { return Range(loc, len); }
  bool Equal(const Range& other) const { return location == other.location && length == other.length; }
  UInteger Max() const { return location + length; }
};

class String;

// Base of every object. Objects are created by the library (alloc/new*), never on the stack.
class Object {
 public:
  Object* retain();
  void release();
  Object* autorelease();
  UInteger retainCount() const;
  UInteger hash() const;
  bool isEqual(const Object* other) const;
  String* description() const;
  String* debugDescription() const;

  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

 protected:
  Object() = default;
  virtual ~Object();
  // One line naming the object, for description().
  virtual const char* className() const;

 private:
  mutable std::atomic<UInteger> retainCount_{1};
};

// metal-cpp's CRTP bases: retain and autorelease return the derived type.
template <class Class, class Base = Object>
class Referencing : public Base {
 public:
  Class* retain() { return static_cast<Class*>(Base::retain()); }
  Class* autorelease() { return static_cast<Class*>(Base::autorelease()); }
};

}  // namespace NS
