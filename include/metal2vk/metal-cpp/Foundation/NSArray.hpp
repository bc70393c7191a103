// NS::Array (an immutable array that retains its elements), NS::Dictionary (opaque) and NS::AutoreleasePool.
#pragma once

#include "NSObject.hpp"

namespace NS {

class Array : public Referencing<Array> {
 public:
  static Array* alloc();
  Array* init();
  Array* init(const Object* const* objects, UInteger count);

  static Array* array();
  static Array* array(const Object* object);
  static Array* array(const Object* const* objects, UInteger count);

  UInteger count() const;
  template <class T = Object>
  T* object(UInteger index) const {
    return static_cast<T*>(objectAtIndex(index));
  }

 protected:
  Array() = default;

 private:
  Object* objectAtIndex(UInteger index) const;  // nullptr past the end (Foundation raises NSRangeException)
};

// Dictionaries are not used by the Metal API that metal2vk implements (CompileOptions::preprocessorMacros is
// refused); the type exists so signatures that mention it compile.
class Dictionary : public Referencing<Dictionary> {
 protected:
  Dictionary() = default;
};

// A pool of autoreleased objects, per thread and nested: autorelease() hands an object to the innermost pool of
// the calling thread; drain() or the pool's last release() releases them.
class AutoreleasePool : public Object {
 public:
  static AutoreleasePool* alloc();
  AutoreleasePool* init();
  void drain();
  void addObject(Object* object);
  static void showPools();

 protected:
  AutoreleasePool() = default;
};

}  // namespace NS
