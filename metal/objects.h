// The objects behind metal-cpp's pointers: each public class of include/metal2vk/metal-cpp is implemented by one
// final class here that derives from it and holds the state. Shared by the files of m2v_metal; not installed.
#pragma once

#include <Metal/Metal.hpp>

#include "metal2vk/metal_statistics.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "metal2vk/compiler.h"
#include "metal2vk/deferred_source.h"
#include "metal2vk/runtime.h"

namespace m2v::metal {

// The implementation object of a public pointer (every public object is created by this library as its Impl).
template <class Impl, class Public>
Impl* impl(Public* object) {
  return static_cast<Impl*>(const_cast<std::remove_const_t<Public>*>(object));
}

// Objective-C answers a message to nil with zero (nil, 0, false) and does nothing else; Metal code relies on it (MLX
// asks the null buffer of an empty array for its length). The methods that such code sends to possibly-nil objects
// (resources, buffers, NS::Object's reference counting) begin with `if (isNil(this)) return {};`; m2v_metal is built
// with -fno-delete-null-pointer-checks so that the compiler keeps these tests.
template <class T>
inline bool isNil(const T* self) {
  return self == nullptr;
}

// Counters of metal2vk/metal_statistics.h, bumped where commands reach the runtime.
struct StatisticsCounters {
  std::atomic<uint64_t> commandBuffersCommitted{0}, dispatches{0}, barriers{0};
};
StatisticsCounters& statisticsCounters();
// Adds one completed command buffer's dispatch timings to the profile (metal_statistics.h: profiling()).
void recordTimings(const std::vector<m2v::DispatchTiming>& timings);

// Error domains, as Metal names them.
inline constexpr const char* kLibraryErrorDomain = "MTLLibraryErrorDomain";
inline constexpr const char* kCommandBufferErrorDomain = "MTLCommandBufferErrorDomain";
inline constexpr const char* kCaptureErrorDomain = "MTLCaptureErrorDomain";
inline constexpr const char* kPipelineErrorDomain = "MTLComputePipelineErrorDomain";

NS::String* newString(std::string text);  // owned (+1)
NS::String* makeString(std::string text);  // autoreleased
const std::string& stringText(const NS::String* string);  // "" for nil
NS::Error* newError(const char* domain, NS::Integer code, std::string message);  // owned
// Stores an autoreleased error in *out when out is not null.
void setError(NS::Error** out, const char* domain, NS::Integer code, std::string message);

// An object with a label (most Metal objects have one).
struct Labelled {
  NS::SharedPtr<NS::String> label;
  NS::String* get() const { return label.get(); }
  void set(const NS::String* text) { label = NS::TransferPtr(newString(stringText(text))); }
};

class DeviceImpl;
class HeapImpl;
class CommandBufferImpl;
class BufferImpl;

class ArchitectureImpl final : public MTL::Architecture {
 public:
  explicit ArchitectureImpl(std::string name) : name_(NS::TransferPtr(newString(std::move(name)))) {}
  NS::String* name() const { return name_.get(); }

 private:
  NS::SharedPtr<NS::String> name_;
};

class DeviceImpl final : public MTL::Device {
 public:
  explicit DeviceImpl(m2v::Device device);
  // The runtime device in use. After a timeout or a lost device (m2v::Device::faulted) the next call opens a new
  // Vulkan device on the same physical device and counts a new generation: objects made from then on use it;
  // buffers, heaps and events of an earlier generation make the command buffers that use them fail.
  std::shared_ptr<m2v::Device> runtime();
  uint64_t generation();
  // "" while `generation` is current, else why its device was replaced.
  std::string staleReason(uint64_t generation);
  NS::SharedPtr<NS::String> nameString, descriptionString;
  NS::SharedPtr<ArchitectureImpl> architecture;
  m2v::Device::SharedMemory shared;
  uint64_t workingSetBytes = 0;      // recommendedMaxWorkingSetSize
  uint64_t maxBufferBytes = 0;       // maxBufferLength
  uint64_t maxAllocations = 0;       // maxMemoryAllocationCount
  std::atomic<uint64_t> allocatedBytes{0};
  // Shared buffers get a host mirror (host_mirror.cpp): set where the CPU would read them uncached (a discrete GPU's
  // PCIe BAR); M2V_HOST_MIRROR=1 or 0 overrides.
  bool mirrorsSharedBuffers = false;
  const DeviceInfo& info() const { return info_; }
  // Copies each buffer's device copy to its host mirror on the GPU, and waits (write-backs after the writer ran).
  void writeBackNow(const std::vector<NS::SharedPtr<BufferImpl>>& buffers);
  // Copies each buffer's host mirror to its device copy on the GPU, after the work submitted so far; returns the
  // signal a submission waits for to come after the copies (uploads of what the CPU wrote after it was recorded).
  m2v::Stream::EventSignal uploadNow(const std::vector<NS::SharedPtr<BufferImpl>>& buffers);

 private:
  m2v::Stream& transferStream();  // under transferMutex_
  std::mutex transferMutex_;
  std::optional<m2v::Stream> transfer_;
  uint64_t transferGeneration_ = 0;
  m2v::Event uploadsDone_;  // of transfer_'s device; uploadNow signals its next value
  uint64_t uploadsSignalled_ = 0;
  std::mutex runtimeMutex_;
  std::shared_ptr<m2v::Device> runtime_;
  DeviceInfo info_;
  uint64_t generation_ = 0;
  std::string replacedBecause_;  // the fault that ended the previous generation
};

// A shared buffer's host copy on a GPU whose shared memory the CPU reads uncached (DeviceImpl::mirrorsSharedBuffers):
// the GPU uses the device-local `backing`, contents() returns `host`, and copies recorded where Metal's rules need
// them keep the two coherent (host_mirror.cpp says when).
struct HostMirror {
  std::mutex mutex;
  m2v::Buffer host;                         // host-cached memory, made at the first contents()
  std::unique_ptr<uint8_t[]> orphan;        // contents() of a buffer whose device was replaced before it had `host`
  bool hostStale = false;                   // the GPU recorded a write that `host` does not have yet
  NS::SharedPtr<CommandBufferImpl> writer;  // the command buffer that recorded it (while hostStale)
  size_t writerSegment = 0;
  bool hostMayBeNewer = false;          // contents() was called since the last upload: the CPU may have written
  uint64_t writebackCommandBuffer = 0;  // serial and segment of the command buffer that contents() asked for a
  size_t writebackSegment = 0;          // write-back at its segment's end (0: none)
};

// Buffers: a range of a runtime buffer (the whole of it, or a piece of a heap's).
class BufferImpl final : public MTL::Buffer {
 public:
  ~BufferImpl() override;
  NS::SharedPtr<DeviceImpl> device;
  m2v::Buffer backing;
  std::unique_ptr<HostMirror> mirror;  // shared, non-heap buffers where the device mirrors them
  uint64_t generation = 0;             // of the device that made `backing`
  size_t offset = 0, length = 0, allocated = 0;
  MTL::ResourceOptions options = 0;
  NS::SharedPtr<HeapImpl> heap;
  Labelled label;
  MTL::StorageMode storageMode() const {
    return MTL::StorageMode((options & MTL::ResourceStorageModeMask) >> MTL::ResourceStorageModeShift);
  }
  NS::UInteger allocatedBytes() const override { return allocated; }
};

class HeapImpl final : public MTL::Heap {
 public:
  ~HeapImpl() override;
  NS::SharedPtr<DeviceImpl> device;
  m2v::Buffer backing;
  uint64_t generation = 0;
  size_t size = 0;
  MTL::ResourceOptions options = 0;
  Labelled label;
  static constexpr size_t kGranule = 256;
  std::mutex mutex;
  std::vector<bool> used;  // one flag per granule
  size_t usedGranules = 0;
  // First fit; returns the granule index or SIZE_MAX.
  size_t allocate(size_t granules);
  void free(size_t first, size_t granules);
  NS::UInteger allocatedBytes() const override { return size; }
};

class HeapDescriptorImpl final : public MTL::HeapDescriptor {
 public:
  size_t size = 0;
  MTL::ResourceOptions options = 0;
  MTL::HeapType type = MTL::HeapTypeAutomatic;
};

class ResidencySetDescriptorImpl final : public MTL::ResidencySetDescriptor {
 public:
  Labelled label;
  NS::UInteger initialCapacity = 0;
};

class ResidencySetImpl final : public MTL::ResidencySet {
 public:
  NS::SharedPtr<DeviceImpl> device;
  Labelled label;
  mutable std::mutex mutex;
  std::vector<const MTL::Allocation*> pending, committed;  // Metal: additions take effect at commit()
};

// Libraries and functions.
class CompileOptionsImpl final : public MTL::CompileOptions {
 public:
  bool macrosGiven = false;
  MTL::MathMode mathMode = MTL::MathModeSafe;
  bool fastMathSet = false;  // setFastMathEnabled called (Metal's default is fast math)
  MTL::MathFloatingPointFunctions floatingPointFunctions = MTL::MathFloatingPointFunctionsFast;
  MTL::LanguageVersion languageVersion = MTL::LanguageVersion3_2;
  MTL::LibraryType libraryType = MTL::LibraryTypeExecutable;
  bool preserveInvariance = false, enableLogging = false;
  MTL::LibraryOptimizationLevel optimizationLevel = MTL::LibraryOptimizationLevelDefault;
  NS::UInteger maxThreads = 0;
};

class LibraryImpl final : public MTL::Library {
 public:
  NS::SharedPtr<DeviceImpl> device;
  // Every entry point, in the library's order: compiled ones from the start, deferred ones (a library file's
  // deferred sources, deferred_source.h) compiled when first asked for.
  struct Entry {
    std::string name;
    std::shared_ptr<const CompiledKernel> compiled;  // null until a deferred entry is compiled (under compileMutex)
    std::shared_ptr<const m2v::DeferredSource> source;
    size_t sourceEntry = 0;  // its index in source->entries
  };
  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> byName;
  Labelled label;
  // Runtime kernels (VkShaderModules) made on first use, shared by every function and pipeline of one entry.
  std::mutex kernelMutex;
  std::unordered_map<size_t, m2v::Kernel> runtimeKernels;
  uint64_t kernelsGeneration = 0;  // the device generation runtimeKernels belong to
  std::mutex compileMutex;

  void addKernels(std::shared_ptr<const std::vector<CompiledKernel>> kernels);
  void addSource(std::shared_ptr<const m2v::DeferredSource> source);
  // The compiled kernel of entry `index`, a deferred one compiled (through the module cache) on first use; throws
  // m2v::mlx::CompileError when it does not compile.
  const CompiledKernel& kernel(size_t index);
  // The runtime kernel of entry `index` on the current device; throws m2v::RuntimeError (e.g. 32-wide simdgroups
  // unavailable).
  m2v::Kernel runtimeKernel(size_t index);
};

// A function constant value as the host gave it, converted to the runtime's kinds.
struct ConstantSetting {
  enum class Kind : uint8_t { Bool, Int, UInt, Float } kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
};

class FunctionConstantValuesImpl final : public MTL::FunctionConstantValues {
 public:
  struct Entry {
    std::optional<NS::UInteger> index;
    std::string name;
    MTL::DataType type = MTL::DataTypeNone;
    ConstantSetting value;
  };
  std::vector<Entry> entries;
};

class FunctionDescriptorImpl final : public MTL::FunctionDescriptor {
 public:
  NS::SharedPtr<NS::String> name, specializedName;
  NS::SharedPtr<MTL::FunctionConstantValues> constants;
  MTL::FunctionOptions options = 0;
};

class FunctionImpl final : public MTL::Function {
 public:
  NS::SharedPtr<LibraryImpl> library;
  size_t kernelIndex = 0;
  NS::SharedPtr<NS::String> name;
  std::vector<std::pair<uint32_t, ConstantSetting>> constants;  // by Metal index
  Labelled label;
  const CompiledKernel& kernel() const { return library->kernel(kernelIndex); }
};

class LinkedFunctionsImpl final : public MTL::LinkedFunctions {
 public:
  NS::SharedPtr<NS::Array> functions, binaryFunctions, privateFunctions;
};

class ComputePipelineDescriptorImpl final : public MTL::ComputePipelineDescriptor {
 public:
  Labelled label;
  NS::SharedPtr<MTL::Function> function;
  NS::SharedPtr<MTL::LinkedFunctions> linked;
  bool multipleOfExecutionWidth = false;
  NS::UInteger maxThreads = 0;
};

class ComputePipelineStateImpl final : public MTL::ComputePipelineState {
 public:
  NS::SharedPtr<DeviceImpl> device;
  NS::SharedPtr<FunctionImpl> function;
  Labelled label;
  NS::UInteger maxThreads = 0, executionWidth = 0, staticThreadgroupBytes = 0;
  // The kernel on the current device (made again after the device was replaced).
  m2v::Kernel kernel() const { return function->library->runtimeKernel(function->kernelIndex); }
};

// Synchronisation objects.
class FenceImpl final : public MTL::Fence {
 public:
  NS::SharedPtr<DeviceImpl> device;
  Labelled label;
};

// Every MTL::Event is one of these: a GPU-only event (newEvent) behaves as a shared event nobody reads on the host.
class SharedEventImpl final : public MTL::SharedEvent {
 public:
  NS::SharedPtr<DeviceImpl> device;
  m2v::Event event;
  uint64_t generation = 0;
  Labelled label;

  // A host wait for a value returns once the completed handlers of the committed command buffers that signal up to
  // that value have run, not only once the GPU signalled it (except signals a later event wait of their own command
  // buffer follows: CommandBufferImpl::forEachSignalAwaitingHandlers). MLX's eval returns on an event, and the handler
  // of the command buffer that signalled it releases the arrays its kernels read: an operation recorded right after
  // must find them released to reuse (donate) their memory, as it does on Apple's GPUs, whose handlers run promptly.
  void expectHandlers(uint64_t value);  // at commit, per signal
  void handlersRan(uint64_t value);     // after the command buffer's completed handlers
  // Waits (until `deadline`) for the handlers of signals up to `value`; false on timeout.
  bool waitForHandlers(uint64_t value, std::chrono::steady_clock::time_point deadline);
  // `signalled` (the timeline's value) less what still awaits its command buffer's handlers: what signaledValue()
  // reports, so that a poll (MLX's array::is_available) sees a value only when a wait for it would return.
  uint64_t settled(uint64_t signalled);

 private:
  std::mutex handlersMutex_;
  std::condition_variable handlersDone_;
  std::multiset<uint64_t> signalsAwaitingHandlers_;
};

// Commands of an open encoder, replayed into the command buffer's stream at endEncoding (after the fence waits
// that Metal places at the encoder's start).
struct EncodedCommand {
  enum class Op : uint8_t { Pipeline, Buffer, Bytes, ThreadgroupMemory, DispatchThreads, DispatchThreadgroups, Barrier };
  Op op = Op::Barrier;
  uint32_t index = 0;
  const void* object = nullptr;  // ComputePipelineStateImpl* or BufferImpl* (kept alive by the encoder)
  uint64_t offset = 0;            // buffer offset, byte offset into the encoder's bytes, threadgroup length
  uint64_t length = 0;            // setBytes length
  m2v::Size3 a, b;                // grid or groups, threadgroup
};

class ComputeCommandEncoderImpl final : public MTL::ComputeCommandEncoder {
 public:
  NS::SharedPtr<CommandBufferImpl> commandBuffer;
  MTL::DispatchType dispatchType = MTL::DispatchTypeSerial;
  std::vector<EncodedCommand> commands;
  std::vector<uint8_t> bytes;
  std::vector<std::pair<const void*, uint64_t>> boundBuffers;  // by index, for setBufferOffset
  std::vector<NS::SharedPtr<NS::Object>> kept;  // pipelines (always) and buffers (retained-reference buffers)
  bool waitsForFence = false, ended = false;
  Labelled label;
};

class QueueCore;

class CommandBufferImpl final : public MTL::CommandBuffer {
 public:
  ~CommandBufferImpl() override;
  const uint64_t serial;  // unique in the process, never 0
  CommandBufferImpl();
  std::shared_ptr<QueueCore> queue;
  bool holdsSlot = false;  // counted among the queue's uncompleted command buffers
  MTL::CommandQueue* queueObject = nullptr;  // commandQueue(); the core, not the object, is kept alive
  bool retainsReferences = true;
  Labelled label;
  // Event waits and signals split the command buffer into segments, each its own submission: a segment's waits
  // are met (on the host) before it is submitted, and its signals are set when it and everything submitted before
  // it on the device's queue have completed: where Metal's GPU would wait and signal.
  struct Segment {
    std::vector<std::pair<NS::SharedPtr<SharedEventImpl>, uint64_t>> waits, signals;
    std::optional<m2v::Stream> stream;  // taken from the queue's pool when the segment records its first command
    uint64_t streamGeneration = 0;      // device generation of `stream`
    uint64_t value = 0;                 // the stream's timeline value once submitted; 0: nothing submitted
    std::vector<NS::SharedPtr<BufferImpl>> writebacks;  // host mirrors to update at the segment's end (under mutex)
    std::vector<NS::SharedPtr<BufferImpl>> mirroredUses;  // buffers with host mirrors its dispatches bind
  };
  std::vector<Segment> segments{1};
  NS::SharedPtr<ComputeCommandEncoderImpl> openEncoder;
  std::vector<NS::SharedPtr<NS::Object>> kept;  // objects the GPU uses, for retained-reference command buffers
  std::vector<MTL::HandlerFunction> scheduledHandlers, completedHandlers;
  std::string failure;  // first error; the command buffer then reports CommandBufferStatusError
  MTL::CommandBufferError failureCode = MTL::CommandBufferErrorNone;
  double startTime = 0, endTime = 0;

  std::atomic<MTL::CommandBufferStatus> status{MTL::CommandBufferStatusNotEnqueued};
  NS::SharedPtr<NS::Error> error;
  std::mutex mutex;
  std::condition_variable done;  // scheduled and completed (after the handlers ran)
  bool scheduledSignalled = false, completedSignalled = false;
  bool handlersTaken = false;  // the completion thread has taken the handlers to run them
  // Host mirrors asked for after commit: written back once the GPU has finished, before the handlers run; closed
  // from then on (the caller copies itself).
  std::vector<NS::SharedPtr<BufferImpl>> completionWritebacks;
  bool completionWritebacksClosed = false;

  m2v::Stream& ensureStream();
  // Whether the GPU has finished segment `index` (submitted and its timeline value reached). Under `mutex`, before
  // completionWritebacksClosed (the completion thread gives the streams back after that).
  bool segmentCompleted(size_t index);
  void fail(MTL::CommandBufferError code, const std::string& message);
  bool failed();
  // The signals whose host waits also wait for this command buffer's handlers (SharedEventImpl::expectHandlers):
  // those of its segments from the last one that waits for an event. An earlier signal's waiter may be what a later
  // wait of the same command buffer waits for (MLX's CPU stream between two GPU operations of one command buffer):
  // it gets the value when the GPU signals it, as on Metal, whose handlers run after the whole command buffer.
  template <class F>
  void forEachSignalAwaitingHandlers(F&& f) {
    size_t first = 0;
    for (size_t i = 0; i < segments.size(); ++i)
      if (!segments[i].waits.empty()) first = i;
    for (size_t i = first; i < segments.size(); ++i)
      for (const auto& [event, value] : segments[i].signals) f(*event.get(), value);
  }
};

// Host mirrors (host_mirror.cpp).
// contents() of a mirrored buffer: brings the GPU's recorded writes to the host copy first (at the end of the
// writer's segment when it is not committed yet, else after it completes) and returns the host copy.
void* mirroredContents(BufferImpl* buffer);
// Before a dispatch of `commandBuffer` that binds `buffer`: uploads what the CPU may have written, and notes a write.
void recordUse(CommandBufferImpl* commandBuffer, m2v::Stream& stream, BufferImpl* buffer, bool writes);
// At commit: records the write-backs contents() asked for at the end of each segment.
void recordWritebacks(CommandBufferImpl* commandBuffer);
// When segment `segment` is submitted (its event waits met): uploads what the CPU may have written since the
// segment was recorded into the buffers it binds (MLX's CPU task writes its output through a contents() pointer it
// takes when it runs, after the GPU work that reads the output was recorded). The signal to wait for, if any.
std::optional<m2v::Stream::EventSignal> uploadCpuWrites(CommandBufferImpl* commandBuffer, size_t segment);
// On the completion thread, once the GPU has finished the command buffer: the write-backs asked for after commit.
void completeWritebacks(CommandBufferImpl* commandBuffer);

// Submission: command buffers are submitted in commit order (on the committing thread, or on the queue's
// submission thread when one waits for events), and retired in that order on the completion thread. Command
// buffers share this with their queue, so that it (and its threads) outlive the last of them; the threads never
// hold the public queue object, so it is never destroyed on one of them.
class QueueCore {
 public:
  QueueCore(DeviceImpl* device, size_t maxUncompleted);
  NS::SharedPtr<DeviceImpl> device;

  // Metal's limit on uncompleted command buffers per queue (newCommandQueue(maxCommandBufferCount), 64 by
  // default): making one more blocks until one completes. It also bounds the streams (and their memory) in flight.
  void acquireSlot();
  void releaseSlot();

  void commit(CommandBufferImpl* buffer);
  // A stream of the current device, and its generation in *generation.
  m2v::Stream takeStream(uint64_t* generation);
  void returnStream(m2v::Stream stream, uint64_t generation);
  // Finishes what was submitted and ends the threads (the queue's destructor).
  void stop();

 private:
  // Submits the segments from `first` on; returns the index of a segment whose waits are not met yet (the
  // submission thread waits for them), or segments.size() when all are submitted.
  size_t submitSegments(CommandBufferImpl* buffer, size_t first);
  void retire(CommandBufferImpl* buffer);  // hands a fully submitted command buffer to the completion thread
  void submissionLoop();
  void completionLoop();

  std::mutex slotMutex_;
  std::condition_variable slotFreed_;
  size_t uncompleted_ = 0;
  const size_t maxUncompleted_;

  std::mutex poolMutex_;
  std::vector<m2v::Stream> spareStreams_;
  uint64_t poolGeneration_ = 0;  // device generation of the spare streams

  std::mutex submitMutex_;
  std::condition_variable submitReady_;
  std::deque<std::pair<CommandBufferImpl*, size_t>> toSubmit_;  // retained; next segment to submit
  bool submitting_ = false;  // the submission thread holds a command buffer
  bool stopSubmitting_ = false;
  std::thread submitter_;

  std::mutex completeMutex_;
  std::condition_variable completeReady_;
  std::deque<CommandBufferImpl*> toComplete_;  // retained
  bool stopCompleting_ = false;
  std::thread completer_;
};

class CommandQueueImpl final : public MTL::CommandQueue {
 public:
  CommandQueueImpl(DeviceImpl* device, size_t maxUncompleted)
      : core(std::make_shared<QueueCore>(device, maxUncompleted)) {}
  ~CommandQueueImpl() override { core->stop(); }
  std::shared_ptr<QueueCore> core;
  Labelled label;
  std::vector<const MTL::ResidencySet*> residencySets;
};

class CaptureDescriptorImpl final : public MTL::CaptureDescriptor {
 public:
  NS::SharedPtr<NS::Object> object;
  MTL::CaptureDestination destination = MTL::CaptureDestinationDeveloperTools;
  NS::SharedPtr<NS::URL> url;
};

class CaptureManagerImpl final : public MTL::CaptureManager {};

}  // namespace m2v::metal
