// NS::SharedPtr: a smart pointer that retains on copy and releases on destruction. TransferPtr adopts an owned
// (+1) object without retaining it; RetainPtr retains a borrowed one.
#pragma once

#include <cstddef>
#include <utility>

namespace NS {

template <class T>
class SharedPtr {
 public:
  SharedPtr() = default;
  SharedPtr(std::nullptr_t) {}
  ~SharedPtr() { reset(); }
  SharedPtr(const SharedPtr& other) : object_(other.object_) {
    if (object_) object_->retain();
  }
  template <class U>
  SharedPtr(const SharedPtr<U>& other) : object_(other.get()) {
    if (object_) object_->retain();
  }
  SharedPtr(SharedPtr&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  template <class U>
  SharedPtr(SharedPtr<U>&& other) noexcept : object_(other.detach()) {}
  SharedPtr& operator=(const SharedPtr& other) {
    if (other.object_) other.object_->retain();
    reset();
    object_ = other.object_;
    return *this;
  }
  SharedPtr& operator=(SharedPtr&& other) noexcept {
    if (this != &other) {
      reset();
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  SharedPtr& operator=(std::nullptr_t) {
    reset();
    return *this;
  }

  T* get() const { return object_; }
  T* operator->() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }
  void reset() {
    if (T* old = std::exchange(object_, nullptr)) old->release();
  }
  // Gives up ownership without releasing.
  T* detach() { return std::exchange(object_, nullptr); }

 private:
  template <class U>
  friend SharedPtr<U> TransferPtr(U* object);
  T* object_ = nullptr;
};

template <class T>
SharedPtr<T> TransferPtr(T* object) {
  SharedPtr<T> p;
  p.object_ = object;
  return p;
}

template <class T>
SharedPtr<T> RetainPtr(T* object) {
  if (object) object->retain();
  return TransferPtr(object);
}

template <class T, class U>
bool operator==(const SharedPtr<T>& a, const SharedPtr<U>& b) {
  return a.get() == b.get();
}
template <class T, class U>
bool operator!=(const SharedPtr<T>& a, const SharedPtr<U>& b) {
  return a.get() != b.get();
}
template <class T>
bool operator==(const SharedPtr<T>& a, std::nullptr_t) {
  return a.get() == nullptr;
}
template <class T>
bool operator!=(const SharedPtr<T>& a, std::nullptr_t) {
  return a.get() != nullptr;
}

}  // namespace NS
