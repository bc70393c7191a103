// MTL::Device: a Vulkan device (m2v::Device) seen through Metal's device interface.
#pragma once

#include <functional>

#include "MTLCommandQueue.hpp"
#include "MTLLibrary.hpp"
#include "MTLResource.hpp"
#include "MTLTypes.hpp"

namespace MTL {

class ComputePipelineReflection;

// Metal's GPU architecture name. metal2vk names a Vulkan device "vulkan_<class>" in the form MLX parses: two
// generation digits then a size letter; see docs/METAL_API.md for how the class is chosen.
class Architecture : public NS::Referencing<Architecture> {
 public:
  NS::String* name() const;

 protected:
  Architecture() = default;
};

class Device : public NS::Referencing<Device> {
 public:
  NS::String* name() const;
  Architecture* architecture() const;
  uint64_t registryID() const;
  DeviceLocation location() const;
  NS::UInteger locationNumber() const;
  bool lowPower() const;
  bool headless() const;
  bool removable() const;
  bool hasUnifiedMemory() const;  // true when shared buffers live in device-local memory (see MTLResource.hpp)
  uint64_t recommendedMaxWorkingSetSize() const;
  NS::UInteger currentAllocatedSize() const;
  NS::UInteger maxBufferLength() const;
  NS::UInteger maxThreadgroupMemoryLength() const;
  Size maxThreadsPerThreadgroup() const;
  bool supportsFamily(GPUFamily family) const;
  // One line: the Vulkan device, its driver, and where shared buffers live.
  NS::String* description() const;

  CommandQueue* newCommandQueue();
  CommandQueue* newCommandQueue(NS::UInteger maxCommandBufferCount);
  Buffer* newBuffer(NS::UInteger length, ResourceOptions options);
  Buffer* newBuffer(const void* pointer, NS::UInteger length, ResourceOptions options);
  // newBufferWithBytesNoCopy: a shared buffer over the caller's memory (VK_EXT_external_memory_host: the pages
  // around it), which the GPU reads and writes in place; `deallocator` runs once the GPU no longer holds it. nil
  // where the device cannot import host memory (callers copy instead). On a discrete GPU the kernels reach such a
  // buffer over the bus: a copy serves data the GPU reads many times better.
  Buffer* newBuffer(const void* pointer, NS::UInteger length, ResourceOptions options,
                    const std::function<void(void*, NS::UInteger)>& deallocator);
  Heap* newHeap(const HeapDescriptor* descriptor);
  Library* newDefaultLibrary();  // the library file default.metallib next to the executable, or nil
  Library* newLibrary(const NS::String* filepath, NS::Error** error);
  Library* newLibrary(const NS::URL* url, NS::Error** error);
  Library* newLibrary(const NS::String* source, const CompileOptions* options, NS::Error** error);
  ComputePipelineState* newComputePipelineState(const Function* function, NS::Error** error);
  ComputePipelineState* newComputePipelineState(const Function* function, PipelineOption options,
                                                ComputePipelineReflection** reflection, NS::Error** error);
  ComputePipelineState* newComputePipelineState(const ComputePipelineDescriptor* descriptor, PipelineOption options,
                                                ComputePipelineReflection** reflection, NS::Error** error);
  Fence* newFence();
  Event* newEvent();
  SharedEvent* newSharedEvent();
  ResidencySet* newResidencySet(const ResidencySetDescriptor* descriptor, NS::Error** error);

 protected:
  Device() = default;
};

// The default device: the runtime's device selection (M2V_DEVICE, else the first Vulkan 1.3 device). One
// MTL::Device per Vulkan device per process; nil when there is none.
Device* CreateSystemDefaultDevice();
// Every Vulkan 1.3 device (owned array).
NS::Array* CopyAllDevices();

}  // namespace MTL
