// Command submission: queues, command buffers, compute encoders, fences and events.
//
// A command buffer records into a Vulkan command buffer and is submitted on commit(), in commit order per queue
// (later command buffers wait, on the host and off the committing thread, for the events an earlier one waits
// on). Completed handlers run on the queue's completion thread once the GPU has finished, in commit order, before
// waitUntilCompleted() returns. A command buffer that fails (an encoding error, a GPU timeout, a lost device)
// reports CommandBufferStatusError and an NS::Error; the queue goes on with the next one.
#pragma once

#include <functional>

#include "MTLTypes.hpp"

namespace MTL {

class Buffer;
class CommandBuffer;
class CommandQueue;
class ComputePipelineState;
class Device;
class Heap;
class Resource;
class ResidencySet;

class Fence : public NS::Referencing<Fence> {
 public:
  Device* device() const;
  NS::String* label() const;
  void setLabel(const NS::String* label);

 protected:
  Fence() = default;
};

class Event : public NS::Referencing<Event> {
 public:
  Device* device() const;
  NS::String* label() const;
  void setLabel(const NS::String* label);

 protected:
  Event() = default;
};

// A 64-bit counter that GPU and CPU signal and wait on (a Vulkan timeline semaphore). Values only grow: setting a
// value at or below the current one leaves it unchanged.
class SharedEvent : public NS::Referencing<SharedEvent, Event> {
 public:
  uint64_t signaledValue() const;
  void setSignaledValue(uint64_t value);
  // True when the value was reached within `milliseconds` (UINT64_MAX: no limit).
  bool waitUntilSignaledValue(uint64_t value, uint64_t milliseconds);

 protected:
  SharedEvent() = default;
};

class CommandEncoder : public NS::Referencing<CommandEncoder> {
 public:
  Device* device() const;
  NS::String* label() const;
  void setLabel(const NS::String* label);
  void endEncoding();
  void insertDebugSignpost(const NS::String* string);
  void pushDebugGroup(const NS::String* string);
  void popDebugGroup();

 protected:
  CommandEncoder() = default;
};

// Records compute commands. Its commands reach the command buffer at endEncoding(), after the fence waits that
// Metal places at the start of an encoder, wherever in the encoding waitForFence was called.
class ComputeCommandEncoder : public NS::Referencing<ComputeCommandEncoder, CommandEncoder> {
 public:
  DispatchType dispatchType() const;
  void setComputePipelineState(const ComputePipelineState* state);
  void setBytes(const void* bytes, NS::UInteger length, NS::UInteger index);
  void setBuffer(const Buffer* buffer, NS::UInteger offset, NS::UInteger index);
  void setBufferOffset(NS::UInteger offset, NS::UInteger index);
  void setBuffers(const Buffer* const buffers[], const NS::UInteger offsets[], NS::Range range);
  void setThreadgroupMemoryLength(NS::UInteger length, NS::UInteger index);
  void dispatchThreadgroups(Size threadgroupsPerGrid, Size threadsPerThreadgroup);
  void dispatchThreads(Size threadsPerGrid, Size threadsPerThreadgroup);
  void updateFence(const Fence* fence);
  void waitForFence(const Fence* fence);
  // Vulkan memory is always resident: recorded, nothing to do.
  void useResource(const Resource* resource, ResourceUsage usage);
  void useResources(const Resource* const resources[], NS::UInteger count, ResourceUsage usage);
  void useHeap(const Heap* heap);
  void useHeaps(const Heap* const heaps[], NS::UInteger count);
  // A barrier between the commands before and after it. With DispatchTypeSerial every dispatch is followed by one.
  void memoryBarrier(BarrierScope scope);
  void memoryBarrier(const Resource* const resources[], NS::UInteger count);

 protected:
  ComputeCommandEncoder() = default;
};

using HandlerFunction = std::function<void(CommandBuffer*)>;
using CommandBufferHandler = HandlerFunction;

class CommandBuffer : public NS::Referencing<CommandBuffer> {
 public:
  Device* device() const;
  CommandQueue* commandQueue() const;
  bool retainedReferences() const;
  NS::String* label() const;
  void setLabel(const NS::String* label);
  CommandBufferStatus status() const;
  NS::Error* error() const;  // nil unless status() is CommandBufferStatusError
  double GPUStartTime() const;
  double GPUEndTime() const;

  // Only while no encoder of this command buffer is open; nil otherwise (Metal asserts there).
  ComputeCommandEncoder* computeCommandEncoder();
  ComputeCommandEncoder* computeCommandEncoder(DispatchType dispatchType);
  void encodeSignalEvent(const Event* event, uint64_t value);
  void encodeWait(const Event* event, uint64_t value);
  void useResidencySet(const ResidencySet* set);
  void useResidencySets(const ResidencySet* const sets[], NS::UInteger count);

  void addScheduledHandler(const HandlerFunction& handler);
  void addCompletedHandler(const HandlerFunction& handler);
  void enqueue();
  void commit();
  void waitUntilScheduled();
  void waitUntilCompleted();
  void pushDebugGroup(const NS::String* string);
  void popDebugGroup();

 protected:
  CommandBuffer() = default;
};

class CommandQueue : public NS::Referencing<CommandQueue> {
 public:
  Device* device() const;
  NS::String* label() const;
  void setLabel(const NS::String* label);
  CommandBuffer* commandBuffer();
  CommandBuffer* commandBufferWithUnretainedReferences();
  void addResidencySet(const ResidencySet* set);
  void addResidencySets(const ResidencySet* const sets[], NS::UInteger count);
  void removeResidencySet(const ResidencySet* set);
  void removeResidencySets(const ResidencySet* const sets[], NS::UInteger count);
  void insertDebugCaptureBoundary();

 protected:
  CommandQueue() = default;
};

}  // namespace MTL
