// Memory: allocations, resources, buffers, heaps and residency sets.
//
// Shared storage (ResourceStorageModeShared) is memory the CPU and the GPU both address: contents() is a
// persistent, coherent mapping, as on Apple GPUs. metal2vk places it in device-local host-visible memory where one
// Vulkan memory type covers the whole device-local heap (resizable BAR, unified memory), otherwise in host memory
// (MTL::Device::description says which). Private storage is device-local and has no contents().
#pragma once

#include <functional>

#include "MTLTypes.hpp"

namespace MTL {

class Device;
class Heap;

class Allocation : public NS::Referencing<Allocation> {
 public:
  NS::UInteger allocatedSize() const { return allocatedBytes(); }

 protected:
  Allocation() = default;
  virtual NS::UInteger allocatedBytes() const = 0;  // buffers and heaps answer for themselves
};

class Resource : public NS::Referencing<Resource, Allocation> {
 public:
  NS::String* label() const;
  void setLabel(const NS::String* label);
  Device* device() const;
  CPUCacheMode cpuCacheMode() const;
  StorageMode storageMode() const;
  HazardTrackingMode hazardTrackingMode() const;
  ResourceOptions resourceOptions() const;
  PurgeableState setPurgeableState(PurgeableState state);
  Heap* heap() const;  // the heap it was made from, or nil
  NS::UInteger heapOffset() const;
  bool isAliasable();
  void makeAliasable();

 protected:
  Resource() = default;
};

class Buffer : public NS::Referencing<Buffer, Resource> {
 public:
  NS::UInteger length() const;
  void* contents();  // nil for private storage
  void didModifyRange(NS::Range range);  // shared storage is coherent: nothing to flush
  uint64_t gpuAddress() const;

 protected:
  Buffer() = default;
};

class HeapDescriptor : public NS::Referencing<HeapDescriptor> {
 public:
  static HeapDescriptor* alloc();
  HeapDescriptor* init();
  NS::UInteger size() const;
  void setSize(NS::UInteger size);
  StorageMode storageMode() const;
  void setStorageMode(StorageMode mode);
  CPUCacheMode cpuCacheMode() const;
  void setCpuCacheMode(CPUCacheMode mode);
  HazardTrackingMode hazardTrackingMode() const;
  void setHazardTrackingMode(HazardTrackingMode mode);
  ResourceOptions resourceOptions() const;
  void setResourceOptions(ResourceOptions options);
  HeapType type() const;
  void setType(HeapType type);  // only HeapTypeAutomatic is supported (newHeap returns nil for others)

 protected:
  HeapDescriptor() = default;
};

// A heap is one allocation that buffers are sub-allocated from (256-byte granules).
class Heap : public NS::Referencing<Heap, Allocation> {
 public:
  NS::String* label() const;
  void setLabel(const NS::String* label);
  Device* device() const;
  StorageMode storageMode() const;
  CPUCacheMode cpuCacheMode() const;
  HazardTrackingMode hazardTrackingMode() const;
  ResourceOptions resourceOptions() const;
  HeapType type() const;
  NS::UInteger size() const;
  NS::UInteger usedSize() const;
  NS::UInteger currentAllocatedSize() const;
  NS::UInteger maxAvailableSize(NS::UInteger alignment);
  // nil when the heap has no room, or when the options ask for another storage mode than the heap's.
  Buffer* newBuffer(NS::UInteger length, ResourceOptions options);

 protected:
  Heap() = default;
};

class ResidencySetDescriptor : public NS::Referencing<ResidencySetDescriptor> {
 public:
  static ResidencySetDescriptor* alloc();
  ResidencySetDescriptor* init();
  NS::String* label() const;
  void setLabel(const NS::String* label);
  NS::UInteger initialCapacity() const;
  void setInitialCapacity(NS::UInteger capacity);

 protected:
  ResidencySetDescriptor() = default;
};

// Vulkan memory stays resident while it is allocated, so a residency set is bookkeeping: it records its
// allocations (allAllocations, containsAllocation, allocatedSize after commit) and residency requests change nothing.
class ResidencySet : public NS::Referencing<ResidencySet> {
 public:
  Device* device() const;
  NS::String* label() const;
  uint64_t allocatedSize() const;  // of the committed allocations
  void requestResidency();
  void endResidency();
  void addAllocation(const Allocation* allocation);
  void addAllocations(const Allocation* const allocations[], NS::UInteger count);
  void removeAllocation(const Allocation* allocation);
  void removeAllocations(const Allocation* const allocations[], NS::UInteger count);
  void removeAllAllocations();
  bool containsAllocation(const Allocation* allocation) const;
  NS::Array* allAllocations() const;
  NS::UInteger allocationCount() const;
  void commit();

 protected:
  ResidencySet() = default;
};

}  // namespace MTL
