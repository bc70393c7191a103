// Foundation: reference counting, autorelease pools, strings, URLs, errors, arrays and bundles.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "objects.h"

namespace fs = std::filesystem;

namespace m2v::metal {
namespace {

class StringImpl final : public NS::String {
 public:
  std::string text;
};

class URLImpl final : public NS::URL {
 public:
  std::string path;  // a local path (file URL) or the URL text
  bool isFile = true;
};

class ErrorImpl final : public NS::Error {
 public:
  NS::SharedPtr<NS::String> domain, description;
  NS::Integer code = 0;
};

class ArrayImpl final : public NS::Array {
 public:
  ~ArrayImpl() override {
    for (NS::Object* o : items) o->release();
  }
  std::vector<NS::Object*> items;  // retained
};

class BundleImpl final : public NS::Bundle {
 public:
  NS::SharedPtr<NS::URL> url;
  NS::SharedPtr<NS::String> path;
};

// The autorelease pools of one thread, innermost last. Objects autoreleased with no pool open go to `outermost`.
struct PoolStack {
  std::vector<std::vector<NS::Object*>> pools;
  std::vector<NS::Object*> outermost;
  void drainTop() {
    std::vector<NS::Object*> objects = std::move(pools.back());
    pools.pop_back();
    for (NS::Object* o : objects) o->release();
  }
};

// The stack is reached through a trivially destructible pointer, so that it stays usable while other thread_local
// objects are destroyed at thread exit (their destructors may open pools and autorelease: MLX's per-thread command
// encoders do). The owner drains it when the thread ends; what is autoreleased after that (in another thread_local
// destructor) goes to a new stack that is never drained: it leaks rather than touching destroyed state.
thread_local PoolStack* threadPoolStack = nullptr;
thread_local bool threadPoolStackRetired = false;

struct PoolStackOwner {
  ~PoolStackOwner() {
    PoolStack* stack = threadPoolStack;
    threadPoolStack = nullptr;
    threadPoolStackRetired = true;
    while (!stack->pools.empty()) stack->drainTop();
    for (NS::Object* o : stack->outermost) o->release();
    delete stack;
  }
};

PoolStack& threadPools() {
  if (!threadPoolStack) {
    threadPoolStack = new PoolStack;
    if (!threadPoolStackRetired) {
      thread_local PoolStackOwner owner;  // constructed on the thread's first use, destroyed when it exits
      (void)owner;
    }
  }
  return *threadPoolStack;
}

class AutoreleasePoolImpl final : public NS::AutoreleasePool {
 public:
  AutoreleasePoolImpl() {
    threadPools().pools.emplace_back();
    depth = threadPools().pools.size();
  }
  ~AutoreleasePoolImpl() override { drainThrough(); }
  // Drains this pool and any inner pool still open (Foundation does the same when an outer pool is drained).
  void drainThrough() {
    PoolStack& stack = threadPools();
    while (stack.pools.size() >= depth && !stack.pools.empty()) stack.drainTop();
  }
  size_t depth = 0;
};

URLImpl* newFileURL(const std::string& path) {
  auto* url = new URLImpl;
  url->path = path;
  return url;
}

}  // namespace

NS::String* newString(std::string text) {
  auto* s = new StringImpl;
  s->text = std::move(text);
  return s;
}

NS::String* makeString(std::string text) { return newString(std::move(text))->autorelease(); }

const std::string& stringText(const NS::String* string) {
  static const std::string empty;
  return string ? impl<const StringImpl>(string)->text : empty;
}

NS::Error* newError(const char* domain, NS::Integer code, std::string message) {
  auto* e = new ErrorImpl;
  e->domain = NS::TransferPtr(newString(domain));
  e->description = NS::TransferPtr(newString(std::move(message)));
  e->code = code;
  return e;
}

void setError(NS::Error** out, const char* domain, NS::Integer code, std::string message) {
  if (out) *out = newError(domain, code, std::move(message))->autorelease();
}

}  // namespace m2v::metal

using namespace m2v::metal;

namespace NS {

// --- Object ---
Object::~Object() = default;
const char* Object::className() const { return "NSObject"; }
// Reference counting of nil does nothing, as in Objective-C (isNil, objects.h).
Object* Object::retain() {
  if (isNil(this)) return nullptr;
  retainCount_.fetch_add(1, std::memory_order_relaxed);
  return this;
}
void Object::release() {
  if (isNil(this)) return;
  if (retainCount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}
Object* Object::autorelease() {
  if (isNil(this)) return nullptr;
  PoolStack& stack = threadPools();
  if (stack.pools.empty())
    stack.outermost.push_back(this);
  else
    stack.pools.back().push_back(this);
  return this;
}
UInteger Object::retainCount() const { return isNil(this) ? 0 : retainCount_.load(std::memory_order_relaxed); }
UInteger Object::hash() const { return reinterpret_cast<UInteger>(this); }
bool Object::isEqual(const Object* other) const { return this == other; }
String* Object::description() const {
  char text[64];
  std::snprintf(text, sizeof text, "<%s: %p>", className(), static_cast<const void*>(this));
  return makeString(text);
}
String* Object::debugDescription() const { return description(); }

// --- AutoreleasePool ---
AutoreleasePool* AutoreleasePool::alloc() { return new AutoreleasePoolImpl; }
AutoreleasePool* AutoreleasePool::init() { return this; }
void AutoreleasePool::drain() { release(); }
void AutoreleasePool::addObject(Object* object) {
  if (object) object->autorelease();
}
void AutoreleasePool::showPools() {
  const PoolStack& stack = threadPools();
  std::fprintf(stderr, "autorelease pools of this thread: %zu open\n", stack.pools.size());
  for (size_t i = 0; i < stack.pools.size(); ++i)
    std::fprintf(stderr, "  pool %zu: %zu objects\n", i, stack.pools[i].size());
}

// --- String ---
String* String::alloc() { return new StringImpl; }
String* String::init() { return this; }
String* String::init(const char* cString, StringEncoding encoding) {
  if (!cString || (encoding != UTF8StringEncoding && encoding != ASCIIStringEncoding)) {
    release();
    return nullptr;
  }
  impl<StringImpl>(this)->text = cString;
  return this;
}
String* String::init(const String* other) {
  impl<StringImpl>(this)->text = stringText(other);
  return this;
}
String* String::string() { return makeString(""); }
String* String::string(const String* other) { return makeString(stringText(other)); }
String* String::string(const char* cString, StringEncoding encoding) {
  String* s = alloc()->init(cString, encoding);
  return s ? s->autorelease() : nullptr;
}
const char* String::utf8String() const { return impl<const StringImpl>(this)->text.c_str(); }
const char* String::cString(StringEncoding encoding) const {
  return encoding == UTF8StringEncoding || encoding == ASCIIStringEncoding ? utf8String() : nullptr;
}
UInteger String::length() const { return impl<const StringImpl>(this)->text.size(); }
UInteger String::lengthOfBytes(StringEncoding encoding) const {
  return encoding == UTF8StringEncoding || encoding == ASCIIStringEncoding ? length() : 0;
}
UInteger String::maximumLengthOfBytes(StringEncoding encoding) const { return lengthOfBytes(encoding); }
bool String::isEqualToString(const String* other) const { return other && stringText(this) == stringText(other); }
String* String::stringByAppendingString(const String* other) const {
  return makeString(stringText(this) + stringText(other));
}

// --- URL ---
URL* URL::alloc() { return new URLImpl; }
URL* URL::init() { return this; }
URL* URL::init(const String* string) {
  const std::string& text = stringText(string);
  auto* self = impl<URLImpl>(this);
  if (text.rfind("file://", 0) == 0) {
    self->path = text.substr(7);
  } else {
    self->path = text;
    self->isFile = false;
  }
  return this;
}
URL* URL::initFileURLWithPath(const String* path) {
  impl<URLImpl>(this)->path = stringText(path);
  return this;
}
URL* URL::fileURLWithPath(const String* path) { return newFileURL(stringText(path))->autorelease(); }
const char* URL::fileSystemRepresentation() const {
  auto* self = impl<const URLImpl>(this);
  return self->isFile ? self->path.c_str() : nullptr;
}
String* URL::absoluteString() const {
  auto* self = impl<const URLImpl>(this);
  return makeString(self->isFile ? "file://" + self->path : self->path);
}
String* URL::path() const { return makeString(impl<const URLImpl>(this)->path); }

// --- Error ---
Error* Error::error(ErrorDomain domain, Integer code, Dictionary*) {
  return newError(stringText(domain).c_str(), code, "")->autorelease();
}
Error* Error::alloc() { return new ErrorImpl; }
Error* Error::init() { return init(nullptr, 0, nullptr); }
Error* Error::init(ErrorDomain domain, Integer code, Dictionary*) {
  auto* self = impl<ErrorImpl>(this);
  self->domain = NS::TransferPtr(newString(stringText(domain)));
  self->description = NS::TransferPtr(newString("The operation couldn't be completed. (" + stringText(domain) +
                                                " error " + std::to_string(code) + ".)"));
  self->code = code;
  return this;
}
Integer Error::code() const { return impl<const ErrorImpl>(this)->code; }
ErrorDomain Error::domain() const { return impl<const ErrorImpl>(this)->domain.get(); }
Dictionary* Error::userInfo() const { return nullptr; }
String* Error::localizedDescription() const { return impl<const ErrorImpl>(this)->description.get(); }
String* Error::localizedFailureReason() const { return nullptr; }
String* Error::localizedRecoverySuggestion() const { return nullptr; }

// --- Array ---
Array* Array::alloc() { return new ArrayImpl; }
Array* Array::init() { return this; }
Array* Array::init(const Object* const* objects, UInteger count) {
  auto* self = impl<ArrayImpl>(this);
  for (UInteger i = 0; i < count; ++i)
    if (objects[i]) self->items.push_back(const_cast<Object*>(objects[i])->retain());
  return this;
}
Array* Array::array() { return alloc()->init()->autorelease(); }
Array* Array::array(const Object* object) { return alloc()->init(&object, 1)->autorelease(); }
Array* Array::array(const Object* const* objects, UInteger count) {
  return alloc()->init(objects, count)->autorelease();
}
UInteger Array::count() const { return impl<const ArrayImpl>(this)->items.size(); }
Object* Array::objectAtIndex(UInteger index) const {
  const auto& items = impl<const ArrayImpl>(this)->items;
  return index < items.size() ? items[index] : nullptr;
}

// --- Bundle ---
static std::string executableDirectory() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path(ec).string() : exe.parent_path().string();
}

Bundle* Bundle::mainBundle() {
  static Bundle* main = alloc()->init(makeString(executableDirectory()));
  return main;
}
Bundle* Bundle::bundle(const String* path) {
  Bundle* b = alloc()->init(path);
  return b ? b->autorelease() : nullptr;
}
Bundle* Bundle::bundle(const URL* url) {
  Bundle* b = alloc()->init(url);
  return b ? b->autorelease() : nullptr;
}
Array* Bundle::allBundles() {
  const Object* main = mainBundle();
  return Array::array(&main, 1);
}
Array* Bundle::allFrameworks() { return Array::array(); }
Bundle* Bundle::alloc() { return new BundleImpl; }
Bundle* Bundle::init(const String* path) {
  std::error_code ec;
  const std::string& text = stringText(path);
  if (text.empty() || !fs::is_directory(text, ec)) {
    release();
    return nullptr;
  }
  auto* self = impl<BundleImpl>(this);
  self->path = NS::TransferPtr(newString(text));
  self->url = NS::TransferPtr(static_cast<URL*>(newFileURL(text)));
  return this;
}
Bundle* Bundle::init(const URL* url) {
  const char* path = url ? url->fileSystemRepresentation() : nullptr;
  if (!path) {
    release();
    return nullptr;
  }
  return init(makeString(path));
}
URL* Bundle::bundleURL() const { return impl<const BundleImpl>(this)->url.get(); }
URL* Bundle::resourceURL() const { return impl<const BundleImpl>(this)->url.get(); }
URL* Bundle::executableURL() const {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? nullptr : newFileURL(exe.string())->autorelease();
}
String* Bundle::bundlePath() const { return impl<const BundleImpl>(this)->path.get(); }
String* Bundle::resourcePath() const { return impl<const BundleImpl>(this)->path.get(); }
String* Bundle::bundleIdentifier() const { return nullptr; }

}  // namespace NS
