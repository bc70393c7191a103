// Buffers, heaps and residency sets.
#include <algorithm>
#include <cstring>

#include "objects.h"

namespace m2v::metal {
namespace {

constexpr size_t kPageBytes = 4096;

size_t roundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

MTL::StorageMode storageOf(MTL::ResourceOptions options) {
  return MTL::StorageMode((options & MTL::ResourceStorageModeMask) >> MTL::ResourceStorageModeShift);
}

// Shared and managed storage are host-visible (managed storage's CPU and GPU copies are one coherent allocation);
// private storage is device-local; memoryless storage exists only for render targets.
std::optional<m2v::Device::Memory> memoryFor(MTL::ResourceOptions options) {
  switch (storageOf(options)) {
    case MTL::StorageModeShared:
    case MTL::StorageModeManaged: return m2v::Device::Memory::Shared;
    case MTL::StorageModePrivate: return m2v::Device::Memory::DeviceLocal;
    default: return std::nullopt;
  }
}

// A buffer of its own (not a heap's) over `backing`, counted in the device's allocated size.
BufferImpl* newDeviceBuffer(DeviceImpl* device, m2v::Buffer backing, uint64_t generation, size_t length,
                            size_t allocated, MTL::ResourceOptions options) {
  auto* buffer = new BufferImpl;
  buffer->device = NS::RetainPtr(device);
  buffer->backing = std::move(backing);
  buffer->generation = generation;
  buffer->length = length;
  buffer->allocated = allocated;
  buffer->options = options;
  device->allocatedBytes.fetch_add(allocated);
  return buffer;
}

}  // namespace

BufferImpl::~BufferImpl() {
  if (heap) {
    heap->free(offset / HeapImpl::kGranule, allocated / HeapImpl::kGranule);
  } else if (device) {
    device->allocatedBytes.fetch_sub(allocated);
  }
}

HeapImpl::~HeapImpl() {
  if (device) device->allocatedBytes.fetch_sub(size);
}

size_t HeapImpl::allocate(size_t granules) {
  std::lock_guard lock(mutex);
  size_t run = 0;
  for (size_t i = 0; i < used.size(); ++i) {
    run = used[i] ? 0 : run + 1;
    if (run == granules) {
      size_t first = i + 1 - granules;
      std::fill(used.begin() + first, used.begin() + i + 1, true);
      usedGranules += granules;
      return first;
    }
  }
  return SIZE_MAX;
}

void HeapImpl::free(size_t first, size_t granules) {
  std::lock_guard lock(mutex);
  std::fill(used.begin() + first, used.begin() + first + granules, false);
  usedGranules -= granules;
}

}  // namespace m2v::metal

using namespace m2v::metal;

namespace MTL {

// --- Device: buffers and heaps ---
Buffer* Device::newBuffer(NS::UInteger length, ResourceOptions options) {
  auto* device = impl<DeviceImpl>(this);
  std::optional<m2v::Device::Memory> memory = memoryFor(options);
  if (!memory || length == 0 || length > device->maxBufferBytes) return nullptr;
  m2v::Buffer backing;
  uint64_t generation = device->generation();
  // A mirrored buffer's GPU copy needs no host mapping; the host copy is made when the CPU first asks for it.
  const bool mirrored = *memory == m2v::Device::Memory::Shared && device->mirrorsSharedBuffers;
  try {
    backing = device->runtime()->createBuffer(length, mirrored ? m2v::Device::Memory::DeviceLocal : *memory);
  } catch (const std::exception&) {
    return nullptr;  // out of memory: Metal returns nil
  }
  BufferImpl* buffer =
      newDeviceBuffer(device, std::move(backing), generation, length, roundUp(length, kPageBytes), options);
  if (mirrored) buffer->mirror = std::make_unique<HostMirror>();
  return buffer;
}

Buffer* Device::newBuffer(const void* pointer, NS::UInteger length, ResourceOptions options) {
  // The initial contents are copied through the host mapping, so only host-visible storage modes can take them.
  if (!pointer || storageOf(options) == StorageModePrivate) return nullptr;
  Buffer* buffer = newBuffer(length, options);
  if (buffer) std::memcpy(buffer->contents(), pointer, length);
  return buffer;
}

Buffer* Device::newBuffer(const void* pointer, NS::UInteger length, ResourceOptions options,
                          const std::function<void(void*, NS::UInteger)>& deallocator) {
  auto* device = impl<DeviceImpl>(this);
  const size_t alignment = device->info().hostImportAlignment;
  if (!pointer || length == 0 || !alignment || memoryFor(options) != m2v::Device::Memory::Shared) return nullptr;
  // Apple documents page-aligned pointers, but MLX wraps any host array (its tests wrap a std::vector and NumPy
  // arrays): the buffer imports the whole pages around the memory and starts at the pointer within them.
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  const uintptr_t first = address / alignment * alignment;
  const size_t span = roundUp(address + length - first, alignment);
  std::function<void()> released;
  if (deallocator)
    released = [deallocator, memory = const_cast<void*>(pointer), length] { deallocator(memory, length); };
  m2v::Buffer backing;
  uint64_t generation = device->generation();
  try {
    backing = device->runtime()->importHostMemory(reinterpret_cast<void*>(first), span, std::move(released));
  } catch (const std::exception&) {
    return nullptr;  // the driver would not import it: nil, as Metal answers for memory it cannot wrap
  }
  BufferImpl* buffer = newDeviceBuffer(device, std::move(backing), generation, length, span, options);
  buffer->offset = address - first;
  return buffer;
}

Heap* Device::newHeap(const HeapDescriptor* descriptor) {
  auto* device = impl<DeviceImpl>(this);
  auto* d = impl<const HeapDescriptorImpl>(descriptor);
  std::optional<m2v::Device::Memory> memory = d ? memoryFor(d->options) : std::nullopt;
  if (!memory || d->type != HeapTypeAutomatic || d->size == 0 || d->size > device->maxBufferBytes) return nullptr;
  size_t size = roundUp(d->size, HeapImpl::kGranule);
  m2v::Buffer backing;
  uint64_t generation = device->generation();
  try {
    backing = device->runtime()->createBuffer(size, *memory);
  } catch (const std::exception&) {
    return nullptr;
  }
  auto* heap = new HeapImpl;
  heap->device = NS::RetainPtr(device);
  heap->backing = std::move(backing);
  heap->generation = generation;
  heap->size = size;
  heap->options = d->options;
  heap->used.assign(size / HeapImpl::kGranule, false);
  device->allocatedBytes.fetch_add(size);
  return heap;
}

// --- Resource / Buffer ---
// Each answers nil as Objective-C does (isNil, objects.h): zero, nil, or nothing done.
NS::String* Resource::label() const { return isNil(this) ? nullptr : impl<const BufferImpl>(this)->label.get(); }
void Resource::setLabel(const NS::String* label) {
  if (!isNil(this)) impl<BufferImpl>(this)->label.set(label);
}
Device* Resource::device() const { return isNil(this) ? nullptr : impl<const BufferImpl>(this)->device.get(); }
CPUCacheMode Resource::cpuCacheMode() const {
  if (isNil(this)) return CPUCacheModeDefaultCache;
  return CPUCacheMode(impl<const BufferImpl>(this)->options & ResourceCPUCacheModeMask);
}
StorageMode Resource::storageMode() const {
  return isNil(this) ? StorageModeShared : impl<const BufferImpl>(this)->storageMode();
}
HazardTrackingMode Resource::hazardTrackingMode() const {
  if (isNil(this)) return HazardTrackingModeDefault;
  NS::UInteger mode = (impl<const BufferImpl>(this)->options & ResourceHazardTrackingModeMask) >>
                      ResourceHazardTrackingModeShift;
  return mode == 0 ? (heap() ? HazardTrackingModeUntracked : HazardTrackingModeTracked) : HazardTrackingMode(mode);
}
ResourceOptions Resource::resourceOptions() const {
  return isNil(this) ? ResourceOptions(0) : impl<const BufferImpl>(this)->options;
}
PurgeableState Resource::setPurgeableState(PurgeableState) {
  return isNil(this) ? PurgeableState(0) : PurgeableStateNonVolatile;  // never purged
}
Heap* Resource::heap() const { return isNil(this) ? nullptr : impl<const BufferImpl>(this)->heap.get(); }
NS::UInteger Resource::heapOffset() const {
  if (isNil(this)) return 0;
  auto* b = impl<const BufferImpl>(this);
  return b->heap ? b->offset : 0;
}
bool Resource::isAliasable() { return false; }
void Resource::makeAliasable() {}  // heap memory is returned when the buffer is released

NS::UInteger Buffer::length() const { return isNil(this) ? 0 : impl<const BufferImpl>(this)->length; }
void* Buffer::contents() {
  if (isNil(this)) return nullptr;
  auto* b = impl<BufferImpl>(this);
  if (b->mirror) return mirroredContents(b);
  void* base = b->backing.contents();
  return base ? static_cast<uint8_t*>(base) + b->offset : nullptr;
}
void Buffer::didModifyRange(NS::Range) {}
uint64_t Buffer::gpuAddress() const {
  if (isNil(this)) return 0;
  auto* b = impl<const BufferImpl>(this);
  return b->backing.deviceAddress() + b->offset;
}

// --- HeapDescriptor ---
HeapDescriptor* HeapDescriptor::alloc() { return new HeapDescriptorImpl; }
HeapDescriptor* HeapDescriptor::init() { return this; }
NS::UInteger HeapDescriptor::size() const { return impl<const HeapDescriptorImpl>(this)->size; }
void HeapDescriptor::setSize(NS::UInteger size) { impl<HeapDescriptorImpl>(this)->size = size; }
StorageMode HeapDescriptor::storageMode() const { return storageOf(impl<const HeapDescriptorImpl>(this)->options); }
void HeapDescriptor::setStorageMode(StorageMode mode) {
  auto& o = impl<HeapDescriptorImpl>(this)->options;
  o = (o & ~ResourceStorageModeMask) | (NS::UInteger(mode) << ResourceStorageModeShift);
}
CPUCacheMode HeapDescriptor::cpuCacheMode() const {
  return CPUCacheMode(impl<const HeapDescriptorImpl>(this)->options & ResourceCPUCacheModeMask);
}
void HeapDescriptor::setCpuCacheMode(CPUCacheMode mode) {
  auto& o = impl<HeapDescriptorImpl>(this)->options;
  o = (o & ~ResourceCPUCacheModeMask) | NS::UInteger(mode);
}
HazardTrackingMode HeapDescriptor::hazardTrackingMode() const {
  return HazardTrackingMode((impl<const HeapDescriptorImpl>(this)->options & ResourceHazardTrackingModeMask) >>
                            ResourceHazardTrackingModeShift);
}
void HeapDescriptor::setHazardTrackingMode(HazardTrackingMode mode) {
  auto& o = impl<HeapDescriptorImpl>(this)->options;
  o = (o & ~ResourceHazardTrackingModeMask) | (NS::UInteger(mode) << ResourceHazardTrackingModeShift);
}
ResourceOptions HeapDescriptor::resourceOptions() const { return impl<const HeapDescriptorImpl>(this)->options; }
void HeapDescriptor::setResourceOptions(ResourceOptions options) { impl<HeapDescriptorImpl>(this)->options = options; }
HeapType HeapDescriptor::type() const { return impl<const HeapDescriptorImpl>(this)->type; }
void HeapDescriptor::setType(HeapType type) { impl<HeapDescriptorImpl>(this)->type = type; }

// --- Heap ---
NS::String* Heap::label() const { return impl<const HeapImpl>(this)->label.get(); }
void Heap::setLabel(const NS::String* label) { impl<HeapImpl>(this)->label.set(label); }
Device* Heap::device() const { return impl<const HeapImpl>(this)->device.get(); }
StorageMode Heap::storageMode() const { return storageOf(impl<const HeapImpl>(this)->options); }
CPUCacheMode Heap::cpuCacheMode() const {
  return CPUCacheMode(impl<const HeapImpl>(this)->options & ResourceCPUCacheModeMask);
}
HazardTrackingMode Heap::hazardTrackingMode() const {
  NS::UInteger mode = (impl<const HeapImpl>(this)->options & ResourceHazardTrackingModeMask) >>
                      ResourceHazardTrackingModeShift;
  return mode == 0 ? HazardTrackingModeUntracked : HazardTrackingMode(mode);  // heaps default to untracked
}
ResourceOptions Heap::resourceOptions() const { return impl<const HeapImpl>(this)->options; }
HeapType Heap::type() const { return HeapTypeAutomatic; }
NS::UInteger Heap::size() const { return impl<const HeapImpl>(this)->size; }
NS::UInteger Heap::usedSize() const {
  auto* h = impl<HeapImpl>(this);
  std::lock_guard lock(h->mutex);
  return h->usedGranules * HeapImpl::kGranule;
}
NS::UInteger Heap::currentAllocatedSize() const { return size(); }
NS::UInteger Heap::maxAvailableSize(NS::UInteger alignment) {
  auto* h = impl<HeapImpl>(this);
  if (alignment > HeapImpl::kGranule) return 0;  // sub-allocations are 256-byte aligned
  std::lock_guard lock(h->mutex);
  size_t run = 0, best = 0;
  for (bool u : h->used) {
    run = u ? 0 : run + 1;
    best = std::max(best, run);
  }
  return best * HeapImpl::kGranule;
}
Buffer* Heap::newBuffer(NS::UInteger length, ResourceOptions options) {
  auto* h = impl<HeapImpl>(this);
  if (length == 0 || storageOf(options) != storageOf(h->options)) return nullptr;
  // A heap of a replaced device has no usable memory: nil, so that callers allocate from the device instead.
  if (h->generation != h->device->generation()) return nullptr;
  size_t granules = (length + HeapImpl::kGranule - 1) / HeapImpl::kGranule;
  size_t first = h->allocate(granules);
  if (first == SIZE_MAX) return nullptr;
  auto* buffer = new BufferImpl;
  buffer->device = h->device;
  buffer->backing = h->backing;
  buffer->heap = NS::RetainPtr(h);
  buffer->generation = h->generation;
  buffer->offset = first * HeapImpl::kGranule;
  buffer->length = length;
  buffer->allocated = granules * HeapImpl::kGranule;
  buffer->options = options;
  return buffer;
}

// --- Residency sets ---
ResidencySetDescriptor* ResidencySetDescriptor::alloc() { return new ResidencySetDescriptorImpl; }
ResidencySetDescriptor* ResidencySetDescriptor::init() { return this; }
NS::String* ResidencySetDescriptor::label() const { return impl<const ResidencySetDescriptorImpl>(this)->label.get(); }
void ResidencySetDescriptor::setLabel(const NS::String* label) {
  impl<ResidencySetDescriptorImpl>(this)->label.set(label);
}
NS::UInteger ResidencySetDescriptor::initialCapacity() const {
  return impl<const ResidencySetDescriptorImpl>(this)->initialCapacity;
}
void ResidencySetDescriptor::setInitialCapacity(NS::UInteger capacity) {
  impl<ResidencySetDescriptorImpl>(this)->initialCapacity = capacity;
}

ResidencySet* Device::newResidencySet(const ResidencySetDescriptor* descriptor, NS::Error**) {
  auto* set = new ResidencySetImpl;
  set->device = NS::RetainPtr(impl<DeviceImpl>(this));
  if (descriptor) set->label.set(descriptor->label());
  return set;
}

Device* ResidencySet::device() const { return impl<const ResidencySetImpl>(this)->device.get(); }
NS::String* ResidencySet::label() const { return impl<const ResidencySetImpl>(this)->label.get(); }
uint64_t ResidencySet::allocatedSize() const {
  auto* s = impl<const ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  uint64_t total = 0;
  for (const Allocation* a : s->committed) total += a->allocatedSize();
  return total;
}
void ResidencySet::requestResidency() {}  // Vulkan memory is resident while allocated
void ResidencySet::endResidency() {}
void ResidencySet::addAllocation(const Allocation* allocation) { addAllocations(&allocation, 1); }
void ResidencySet::addAllocations(const Allocation* const allocations[], NS::UInteger count) {
  auto* s = impl<ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  for (NS::UInteger i = 0; i < count; ++i)
    if (std::find(s->pending.begin(), s->pending.end(), allocations[i]) == s->pending.end())
      s->pending.push_back(allocations[i]);
}
void ResidencySet::removeAllocation(const Allocation* allocation) { removeAllocations(&allocation, 1); }
void ResidencySet::removeAllocations(const Allocation* const allocations[], NS::UInteger count) {
  auto* s = impl<ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  for (NS::UInteger i = 0; i < count; ++i) std::erase(s->pending, allocations[i]);
}
void ResidencySet::removeAllAllocations() {
  auto* s = impl<ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  s->pending.clear();
}
bool ResidencySet::containsAllocation(const Allocation* allocation) const {
  auto* s = impl<const ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  return std::find(s->pending.begin(), s->pending.end(), allocation) != s->pending.end();
}
NS::Array* ResidencySet::allAllocations() const {
  auto* s = impl<const ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  std::vector<const NS::Object*> objects(s->pending.begin(), s->pending.end());
  return NS::Array::array(objects.data(), objects.size());
}
NS::UInteger ResidencySet::allocationCount() const {
  auto* s = impl<const ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  return s->pending.size();
}
void ResidencySet::commit() {
  auto* s = impl<ResidencySetImpl>(this);
  std::lock_guard lock(s->mutex);
  s->committed = s->pending;
}

}  // namespace MTL
