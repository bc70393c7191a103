// metal2vk runtime: runs compiled modules (docs/ABI.md) with Metal's dispatch semantics on a Vulkan 1.3 device.
//
// Recording model (Metal terms -> Vulkan terms), all in this header:
//   Device  - VkInstance + VkPhysicalDevice + VkDevice + one compute queue. Owns the pipeline caches.
//   Buffer  - a VkBuffer with a 64-bit device address (MTLBuffer): device-local, or shared (host-visible and mapped,
//             MTLStorageModeShared). Reference counted: a Stream keeps every buffer it recorded alive until the GPU
//             has finished with it, so dropping a Buffer early is safe.
//   Kernel  - SPIR-V module + KernelReflection (MTLFunction). Pipelines (MTLComputePipelineState) are created lazily at
//             dispatch time, one per (module hash, workgroup size, function constants, threadgroup lengths); threads
//             recording on their own streams build different pipelines at once, the same one once.
//   Stream  - command queue + command buffer + compute encoder in one object. Commands (dispatch, upload, fill,
//             copy, readback) are recorded into a VkCommandBuffer; every `batchSize` dispatches (or at commit /
//             synchronize) the batch is submitted and signals the stream's timeline semaphore with the next value.
//             The host blocks ONLY in synchronize(), wait(value) and readback(); nothing on the recording path waits.
//             Pipeline barriers are inserted only when a command touches a buffer range that an earlier, not yet
//             barriered command wrote (or writes a range it read); with StreamOptions::explicitBarriers only where
//             barrier() is called (Metal's concurrent encoder).
//   Event   - a timeline semaphore (MTLSharedEvent): host signal/wait, and signalled by a submission at commit.
//
// Errors: UsageError (bad arguments), UnsupportedError (the device cannot run the kernel as the ABI requires),
// DeviceError (timeout, device lost, other Vulkan failures). All derive from m2v::RuntimeError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "metal2vk/reflection.h"

namespace m2v {

// ---------------------------------------------------------------------------------------------------------------
// Errors
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The caller asked for something invalid: missing binding, threadgroup too large, out-of-range copy, ...
class UsageError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};
// The device cannot provide what the module requires (e.g. 32-wide subgroups, Int64). Never silently ignored.
class UnsupportedError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};
// The device failed: timeout, device lost, out of memory, unexpected VkResult. After a timeout or a lost device the
// Device is "faulted": further submissions throw, and teardown leaks the Vulkan objects instead of hanging on them.
// Recovery is a new Device (Device::faulted() tells when one is needed): the fault stays with the work that caused
// it, and the new device runs what comes next.
class DeviceError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};
class TimeoutError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};
class DeviceLostError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// ---------------------------------------------------------------------------------------------------------------
// Device
struct DeviceOptions {
  // Index ("1") or case-insensitive name substring ("llvmpipe"). Empty: env M2V_DEVICE, else device 0.
  std::string selector;
  // -1: env M2V_VALIDATION=1 decides; 0/1 force off/on. Needs VK_LAYER_KHRONOS_validation installed.
  int validation = -1;
  // Directory for the persisted VkPipelineCache. Empty: env M2V_CACHE_DIR, else ~/.cache/metal2vk. "-" disables.
  std::string cacheDir;
  // Host wait limit for synchronize()/readback() in ms. 0: env M2V_TIMEOUT_MS, else a budget for the device's type:
  // 10 s on a GPU, 120 s on a CPU device (lavapipe is tens of times slower, more on a small or busy machine).
  uint32_t timeoutMs = 0;
};

struct DeviceInfo {
  std::string name;
  uint32_t index = 0;
  uint32_t vendorId = 0, deviceId = 0;
  std::string type;        // "discrete", "integrated", "cpu", "virtual", "other"
  uint32_t apiVersion = 0;  // VK_MAKE_API_VERSION packed
  std::string driver;      // driver name + info
  uint32_t subgroupSize = 0, minSubgroupSize = 0, maxSubgroupSize = 0;
  bool requiredSubgroupSizeInCompute = false;  // subgroupSizeControl + compute in requiredSubgroupSizeStages
  uint32_t maxWorkgroupInvocations = 0;
  uint32_t maxWorkgroupSize[3] = {0, 0, 0};
  // Multi-dimensional threadgroups run as one-dimensional workgroups of the same size (the module recovers Metal's
  // positions, docs/ABI.md). On the H200 a (32, 1, 8) workgroup made MLX's gemv 1.23-1.35x slower than the same
  // threads in a (256, 1, 1) one (bench/gemv-workgroup-*-h200.md). M2V_LINEAR_WORKGROUPS=0 keeps Metal's shape.
  bool linearWorkgroups = true;
  uint32_t maxWorkgroupCount[3] = {0, 0, 0};
  uint32_t maxSharedMemoryBytes = 0;
  uint32_t maxPushConstantsSize = 0;
  uint32_t maxComputeWorkgroupSubgroups = 0;
  double timestampPeriodNs = 0;  // 0: no compute timestamps
  // Optional features, enabled when present.
  bool shaderInt64 = false, shaderInt16 = false, shaderInt8 = false, shaderFloat16 = false;
  bool storageBuffer8Bit = false, storageBuffer16Bit = false;
  bool atomicFloat = false, atomicFloat2 = false, cooperativeMatrix = false;
  std::vector<std::string> cooperativeMatrixShapes;  // subgroup scope, "MxNxK A*B+C", e.g. "16x8x8 f16*f16+f32"
  bool bfloat16CooperativeMatrix = false;            // VK_KHR_shader_bfloat16: bfloat cooperative matrices
  bool bfloat16Type = false;  // VK_KHR_shader_bfloat16's shaderBFloat16Type: the bfloat16 type in shaders
  bool roundingModeRTEFloat16 = false;  // float controls: a module may ask 16-bit results to round to nearest even
  // VK_EXT_external_memory_host's minImportedHostPointerAlignment: host memory at addresses aligned to it can back
  // buffers without a copy (Device::importHostMemory). 0: the device cannot import host memory.
  uint64_t hostImportAlignment = 0;
  bool validationEnabled = false;

  // Whether kernels run their native-bfloat16 builds (CompiledModule::nativeBfloat16) on this device: it has
  // bfloat16Type and roundingModeRTEFloat16 and the environment variable M2V_NATIVE_BFLOAT16 is "1".
  bool runsNativeBfloat16() const;

  // Whether VK_KHR_cooperative_matrix offers `shape` at subgroup scope (as cooperativeMatrixShapes names it).
  bool offersCooperativeMatrix(const std::string& shape) const;
  std::string describe() const;  // one line for the CLI: "device 0: llvmpipe (...) [cpu, Vulkan 1.3.230, ...]"
};

struct DeviceStats {
  uint64_t pipelinesCreated = 0;      // vkCreateComputePipelines calls
  double pipelineBuildSeconds = 0;    // their wall time, summed (threads building at once each count theirs)
  uint64_t pipelineMemoryHits = 0;    // lookups served by the in-memory cache (device-wide)
  uint64_t diskCacheBytesLoaded = 0;  // size of the VkPipelineCache blob read at startup (0: none)
  std::string diskCachePath;          // empty when the disk cache is disabled
};

class Buffer;
class Event;
class Kernel;
class Stream;
struct StreamOptions;
struct DeviceState;
struct BufferObject;
struct KernelObject;
struct StreamState;

class Device {
 public:
  explicit Device(const DeviceOptions& options = {});
  ~Device();
  Device(Device&&) noexcept;
  Device& operator=(Device&&) noexcept;

  // "index: name [type]" for every Vulkan 1.3 capable device.
  static std::vector<std::string> list();

  const DeviceInfo& info() const;
  std::string describe() const { return info().describe(); }
  // The host wait budget of this device's streams (DeviceOptions::timeoutMs, resolved).
  uint32_t timeoutMs() const;
  // True after a timeout or a lost device: nothing more runs on this Device; create a new one to go on.
  bool faulted() const;
  std::string faultReason() const;  // empty unless faulted
  DeviceStats stats() const;

  // Validation messages (warnings and errors) recorded since the device was created or last cleared.
  size_t validationMessageCount() const;
  std::vector<std::string> validationMessages() const;
  void clearValidationMessages();

  Buffer createBuffer(size_t bytes);
  // Where a buffer's memory lives. DeviceLocal: the GPU's memory, no host mapping (createBuffer(bytes)). Shared:
  // host-visible, coherent and persistently mapped (Buffer::contents()), as Metal's shared storage; device-local
  // too where one memory type spans the whole device-local heap (sharedMemory() says which). HostCached: host
  // memory, cached for the CPU where the device offers it, mapped; the GPU reaches it over the bus (copies to and
  // from device-local memory).
  enum class Memory { DeviceLocal, Shared, HostCached };
  Buffer createBuffer(size_t bytes, Memory memory);
  struct SharedMemory {
    bool deviceLocal = false;  // shared buffers live in device-local memory (resizable BAR, unified memory)
    uint32_t memoryType = 0;   // Vulkan memory type index they are allocated from
    uint64_t heapBytes = 0;    // size of that type's heap
    bool hostCached = false;   // the CPU reads them through its caches (false: uncached reads, e.g. a PCIe BAR)
  };
  SharedMemory sharedMemory() const;
  // A buffer over host memory the caller owns, without a copy (Metal's newBufferWithBytesNoCopy): the GPU reads and
  // writes the caller's pages, coherent with the CPU as Memory::Shared is. `pointer` must be aligned to
  // info().hostImportAlignment; the buffer spans `bytes` rounded up to that alignment, so the pages must stay mapped
  // that far. contents() is `pointer`. `released` runs once Vulkan no longer holds the memory (after the last
  // Buffer and every command that used it are gone): the caller may free it then. Throws UnsupportedError where the
  // device cannot import this memory (no VK_EXT_external_memory_host, misaligned, or the driver refuses it).
  Buffer importHostMemory(void* pointer, size_t bytes, std::function<void()> released = {});
  // A timeline counter the host and the GPU (Stream::commit with signals) advance; starts at `initialValue`.
  Event createEvent(uint64_t initialValue = 0);
  // Throws UnsupportedError when the device cannot honour the reflection (required subgroup size, capabilities).
  // A required subgroup size is verified once per device by running a probe kernel (drivers have been seen to
  // report 32 and execute 16 lanes); that is a host wait, at kernel creation only.
  Kernel createKernel(std::span<const uint32_t> spirv, const KernelReflection& reflection);
  // The cooperative-matrix build of `portable`'s kernel (CompiledModule::cooperative; docs/SIMDGROUP_MATRIX.md).
  // Throws UnsupportedError unless the device offers every shape reflection.cooperativeMatrixShapes names (16x8x8
  // f16 when it names none). Dispatches with partial threadgroups run `portable`: cooperative-matrix operations
  // need every lane of a subgroup.
  Kernel createCooperativeKernel(std::span<const uint32_t> spirv, const KernelReflection& reflection,
                                 const Kernel& portable);
  Stream createStream(const StreamOptions& options);
  Stream createStream();

  // Writes the VkPipelineCache to disk now (also done on destruction). Atomic: temp file + rename.
  void savePipelineCache();

  // Raw handles for benchmarks and interop (VkInstance, VkPhysicalDevice, VkDevice, VkQueue as opaque pointers).
  struct Native {
    void* instance = nullptr;
    void* physicalDevice = nullptr;
    void* device = nullptr;
    void* queue = nullptr;
    uint32_t queueFamily = 0;
  };
  Native native() const;

  const std::shared_ptr<DeviceState>& state() const { return state_; }

 private:
  Kernel createKernelUnchecked(std::span<const uint32_t> spirv, const KernelReflection& reflection,
                               bool emulateSimdgroups = false);
  uint32_t measureSubgroupWidth(uint32_t requested);

  std::shared_ptr<DeviceState> state_;
};

// ---------------------------------------------------------------------------------------------------------------
// Buffer: device-local, device address, shared ownership.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<BufferObject> object) : object_(std::move(object)) {}
  size_t size() const;
  uint64_t deviceAddress() const;
  void* contents() const;  // the persistent host mapping of a Memory::Shared buffer; nullptr otherwise
  explicit operator bool() const { return object_ != nullptr; }
  const std::shared_ptr<BufferObject>& object() const { return object_; }

 private:
  std::shared_ptr<BufferObject> object_;
};

// ---------------------------------------------------------------------------------------------------------------
// Event: a timeline semaphore (Metal's MTLSharedEvent). Values only grow. Cheap to copy (shared).
struct EventObject;
class Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<EventObject> object) : object_(std::move(object)) {}
  uint64_t value() const;         // non-blocking
  void signal(uint64_t value);    // from the host; a value at or below the current one is ignored
  // Host wait until the value reaches `value`; false after `timeoutNs` (UINT64_MAX: no limit). Throws DeviceError.
  bool wait(uint64_t value, uint64_t timeoutNs) const;
  explicit operator bool() const { return object_ != nullptr; }
  const std::shared_ptr<EventObject>& object() const { return object_; }

 private:
  std::shared_ptr<EventObject> object_;
};

// ---------------------------------------------------------------------------------------------------------------
// Kernel: module + reflection. Cheap to copy (shared).
class Kernel {
 public:
  Kernel() = default;
  explicit Kernel(std::shared_ptr<KernelObject> object) : object_(std::move(object)) {}
  const KernelReflection& reflection() const;
  // Whether the kernel runs its emulated simdgroups (32 lanes over the device's subgroups) rather than native
  // 32-wide subgroups: chosen at creation, where the device has no 32-wide subgroups or M2V_SIMDGROUPS=emulated.
  bool emulatesSimdgroups() const;
  // Whether a dispatch may write the buffer bound at [[buffer(index)]]: a parameter the module addresses that is
  // not `const` or `constant` (one the kernel does not take is not written).
  bool mayWriteBuffer(uint32_t index) const;
  explicit operator bool() const { return object_ != nullptr; }
  const std::shared_ptr<KernelObject>& object() const { return object_; }

 private:
  std::shared_ptr<KernelObject> object_;
};

// ---------------------------------------------------------------------------------------------------------------
// Stream
struct StreamOptions {
  uint32_t batchSize = 256;  // dispatches per submitted command buffer
  bool timestamps = false;   // GPU time per dispatch, reported by takeTimings() after synchronize()
  // Metal's concurrent compute encoder: no barriers from buffer ranges; the caller places them with barrier().
  // Every submission ends with a barrier that makes GPU writes visible to host reads after the wait.
  bool explicitBarriers = false;
  uint32_t timeoutMs = 0;    // host wait budget; 0: the device's (Device::timeoutMs)
};

struct Size3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct DispatchTiming {
  std::string kernel;  // reflection entry
  uint64_t sequence = 0;  // dispatch number in the stream, from 0
  double gpuNs = 0;
  // GPU clock at the dispatch's start and end timestamps, in ns (an arbitrary origin, the same for one device): the
  // span of a run of dispatches is last.endNs - first.startNs.
  double startNs = 0, endNs = 0;
};

class Stream {
 public:
  Stream() = default;
  explicit Stream(std::unique_ptr<StreamState> state);
  ~Stream();  // waits (with the device timeout) for this stream's work, then releases it
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;

  // --- compute encoder state (persists across dispatches, like an MTLComputeCommandEncoder) ---
  // setKernel clears the function constants and threadgroup memory lengths (they belong to the pipeline);
  // buffer bindings persist.
  void setKernel(const Kernel& kernel);
  // Hazard tracking assumes the kernel may touch [offset, end of buffer) (Metal gives no extent); bindings of
  // slices of one buffer therefore look dependent. setBufferRange narrows that to [offset, offset + length).
  void setBuffer(const Buffer& buffer, size_t offset, uint32_t index);
  void setBufferRange(const Buffer& buffer, size_t offset, size_t length, uint32_t index);
  // Copies `length` bytes now into a stream-owned upload arena (device-local host-visible memory where the device
  // maps it, as argument buffers: a kernel reads its arguments before anything else); the kernel receives its
  // device address.
  void setBytes(const void* data, size_t length, uint32_t index);
  void setThreadgroupMemoryLength(uint32_t length, uint32_t index);
  // Unbinds every buffer and setBytes argument (a new Metal encoder starts with none bound).
  void clearBindings();
  // Function constant by Metal index; converted to the type the reflection declares (bool, int, float, half, ...).
  void setFunctionConstant(uint32_t index, bool value);
  void setFunctionConstant(uint32_t index, int32_t value);
  void setFunctionConstant(uint32_t index, uint32_t value);
  void setFunctionConstant(uint32_t index, int64_t value);
  void setFunctionConstant(uint32_t index, float value);
  void setFunctionConstant(uint32_t index, double value);

  // Metal dispatchThreads: ceil(grid / threadgroup) workgroups, grid passed in push constants.
  void dispatchThreads(Size3 grid, Size3 threadgroup);
  // Metal dispatchThreadgroups: `groups` workgroups, grid = groups * threadgroup.
  void dispatchThreadgroups(Size3 groups, Size3 threadgroup);

  // --- blit commands (recorded in order with the dispatches) ---
  // Copies `size` bytes from `data` into staging now; the GPU copy runs in order with the other commands.
  void upload(const Buffer& dst, size_t dstOffset, const void* data, size_t size);
  // Fills with a repeated 32-bit pattern; offset and size must be multiples of 4.
  void fill(const Buffer& dst, size_t offset, size_t size, uint32_t pattern);
  void fillBytes(const Buffer& dst, size_t offset, size_t size, uint8_t value);
  void copy(const Buffer& src, size_t srcOffset, const Buffer& dst, size_t dstOffset, size_t size);
  // Asynchronous readback: `dst` is written during the next synchronize() (or wait() past this command).
  // `dst` must stay valid until then.
  void enqueueReadback(const Buffer& src, size_t srcOffset, void* dst, size_t size);
  // Blocking readback: enqueueReadback + synchronize.
  void readback(const Buffer& src, size_t srcOffset, void* dst, size_t size);

  // --- submission and completion ---
  // Submits what has been recorded (Metal commit). Returns the timeline value that marks its completion.
  uint64_t commit();
  // Also sets each event to its value when this submission completes (Metal's encodeSignalEvent; the stream keeps
  // the event alive, and wait() waits for it, until its signal has happened), and makes the
  // submission wait on the GPU for each of `waits` (a memory dependency on the work that signalled it). A wait
  // for a value that work submitted later will signal can stall the queue: callers wait on the host first.
  struct EventSignal {
    Event event;
    uint64_t value = 0;
  };
  uint64_t commit(std::span<const EventSignal> signals, std::span<const EventSignal> waits = {});
  // A memory barrier between the commands recorded before and after it (StreamOptions::explicitBarriers).
  void barrier();
  // Commits and waits for everything recorded so far. Throws TimeoutError / DeviceLostError.
  void synchronize();
  // Waits until the timeline reaches `value` (from commit()).
  void wait(uint64_t value);
  uint64_t completedValue() const;  // non-blocking
  // Host wait budget from now on (e.g. per piece of work known to be long); 0: the device's. A wait past it throws
  // TimeoutError and faults the device.
  void setTimeoutMs(uint32_t ms);
  uint32_t timeoutMs() const;

  // Per-dispatch GPU timings collected so far (StreamOptions::timestamps); clears the list.
  std::vector<DispatchTiming> takeTimings();

  struct Stats {
    uint64_t dispatches = 0;
    uint64_t barriers = 0;     // pipeline barriers inserted for hazards
    uint64_t submissions = 0;  // vkQueueSubmit2 calls
    uint64_t hostWaits = 0;    // blocking waits on the timeline (vkWaitSemaphores): only synchronize/wait/readback
  };
  Stats stats() const;

 private:
  std::unique_ptr<StreamState> state_;
};

}  // namespace m2v
