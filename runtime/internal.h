// Internal state behind the public handles of runtime.h.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "metal2vk/runtime.h"
#include "vk_util.h"

namespace m2v {

// Default host wait budgets (DeviceOptions::timeoutMs, M2V_TIMEOUT_MS override them).
constexpr uint32_t kGpuDeviceTimeoutMs = 10000;
constexpr uint32_t kCpuDeviceTimeoutMs = 120000;
uint32_t resolveTimeoutMs(uint32_t requested, const std::string& deviceType);

struct DeviceState {
  DeviceInfo info;
  uint32_t timeoutMs = 10000;

  // Validation log: written from the debug callback (any thread), read by tests.
  mutable std::mutex logMutex;
  std::vector<std::string> validationLog;

  // Declaration order is destruction order reversed: the instance and device outlive everything below them.
  UniqueInstance instance;
  UniqueDebugMessenger messenger;
  VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;
  UniqueDevice device;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkPhysicalDeviceMemoryProperties memoryProperties{};
  uint8_t pipelineCacheUuid[VK_UUID_SIZE] = {};
  std::mutex queueMutex;  // vkQueueSubmit2 needs external synchronisation of the queue

  // After a timeout or device loss: further submissions throw, teardown leaks instead of destroying in-use objects.
  std::atomic<bool> faulted{false};
  std::mutex faultMutex;
  std::string faultReason;
  void markFaulted(const std::string& reason);
  std::string faultMessage();

  // Pipelines: in-memory map keyed by module hash + specialisation, backed by a VkPipelineCache persisted to disk.
  // The driver builds a pipeline outside the mutex (seconds for a large module), so threads build different ones at
  // once; a thread that wants one being built waits on pipelineBuilt.
  std::mutex pipelineMutex;
  std::condition_variable pipelineBuilt;
  std::unordered_set<std::string> pipelinesBuilding;
  UniquePipelineCache pipelineCache;
  std::string pipelineCachePath;
  uint64_t diskCacheBytesLoaded = 0;
  bool pipelineCacheDirty = false;
  std::unordered_map<uint32_t, UniquePipelineLayout> layoutsByPushSize;
  std::unordered_map<std::string, UniquePipeline> pipelines;
  uint64_t pipelinesCreated = 0;
  uint64_t pipelineBuildNs = 0;
  std::atomic<uint64_t> pipelineMemoryHits{0};

  // Required subgroup size -> lanes the probe kernel actually saw (see Device::createKernel).
  std::mutex subgroupProbeMutex;
  std::vector<std::pair<uint32_t, uint32_t>> measuredSubgroupWidths;

  // M2V_PIPELINE_STATISTICS: each new pipeline's driver statistics (VK_KHR_pipeline_executable_properties: registers,
  // instructions, ... as the driver names them) go to stderr, for finding where a kernel's time goes.
  bool pipelineStatistics = false;

  ~DeviceState();
  VkDevice vk() const { return device.get(); }
  // Memory type with all `required` flags (and `preferred` ones when possible); throws when none fits.
  uint32_t findMemoryType(uint32_t typeBits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;
  VkPipelineLayout layoutForPushSize(uint32_t pushSize);  // caller holds pipelineMutex
  void savePipelineCache();
};

// A VkBuffer + its memory, with a device address. `hostPointer` is set for host-visible (staging) buffers.
struct RawBuffer {
  UniqueMemory memory;
  UniqueBuffer buffer;
  VkDeviceSize size = 0;
  uint64_t address = 0;
  void* hostPointer = nullptr;
};
RawBuffer createRawBuffer(DeviceState& device, VkDeviceSize size, bool hostVisible);
// Host-written memory the GPU reads (setBytes data, argument buffers, upload staging): the shared buffers' device-local
// host-visible type where the device has one (resizable BAR, unified memory), host memory otherwise.
// M2V_ARENA_IN_HOST_MEMORY=1 keeps it in host memory (a measurement knob).
RawBuffer createDeviceReadStaging(DeviceState& device, VkDeviceSize size);
// The same in the memory type `memoryType` picks for the buffer's requirements, mapped for the host when `map`.
// With `importHostPointer`, the memory is the host's pages at that address (VK_EXT_external_memory_host; `size` a
// multiple of DeviceInfo::hostImportAlignment), and hostPointer is that address.
RawBuffer createRawBuffer(DeviceState& device, VkDeviceSize size,
                          const std::function<uint32_t(const VkMemoryRequirements&)>& memoryType, bool map,
                          void* importHostPointer = nullptr);

struct BufferObject {
  ~BufferObject() {
    raw.buffer = {};  // before its memory
    raw.memory = {};
    if (released) released();
  }
  std::shared_ptr<DeviceState> device;
  RawBuffer raw;
  std::function<void()> released;  // imported host memory: tells its owner once Vulkan no longer holds it
  // Last batch (globally unique serial) that took a reference: lets a stream keep each buffer alive once per batch.
  std::atomic<uint64_t> keptByBatch{0};
};

// A timeline semaphore (Event).
struct EventObject {
  std::shared_ptr<DeviceState> device;
  UniqueSemaphore semaphore;
  std::mutex signalMutex;  // host signals compare with the current value first: Vulkan requires growth
};

// Value of a function constant as set by the host; converted to the reflected type when the pipeline is built.
struct ConstantValue {
  enum class Kind : uint8_t { Bool, Int, Float } kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
};

struct KernelArg {
  uint32_t bufferIndex = 0;
  uint32_t offset = 0;      // in the push block, or in the argument buffer
  bool readOnly = false;    // `const` / constant address space: no write hazard
  bool optional = false;    // guarded by a function constant: may be unbound (address 0)
};

struct KernelObject {
  std::shared_ptr<DeviceState> device;
  KernelReflection reflection;
  UniqueShaderModule module;
  std::array<uint64_t, 2> moduleHash{};  // two independent 64-bit hashes of the words
  std::vector<KernelArg> args;
  uint32_t argumentBufferSize = 0;  // bytes, when reflection.argumentBuffer
  // Byte size of each specialization constant the module declares (SpecId -> size; OpSpecConstantTrue/False: 4).
  // Specialization data is fitted to it, so a module that declares e.g. a bool function constant as an 8-bit
  // integer still gets entries of the size Vulkan requires; ids the module does not declare are not passed.
  std::unordered_map<uint32_t, uint32_t> specConstantBytes;
  // Runs the module's emulated simdgroups (KernelReflection::emulatedSimdgroups): no subgroup size required.
  bool emulatesSimdgroups = false;
  uint32_t requiredSubgroupSize() const { return emulatesSimdgroups ? 0 : reflection.requiredSubgroupSize; }
  // Set on a cooperative-matrix build: the portable build, which dispatches with partial threadgroups run.
  std::shared_ptr<KernelObject> portable;

  // One-dimensional workgroups: a threadgroup needs one when Metal's shape exceeds a per-axis limit of the device
  // (Metal allows 1x1x1024; NVIDIA's z stops at 64); the module can run one when it carries kThreadgroupShapeSpecBase;
  // a multi-dimensional threadgroup runs as one when it needs one or the device runs linear workgroups
  // (DeviceInfo::linearWorkgroups), and the module can.
  bool needsRelayout(const Size3& threadgroup) const;
  bool canRelayout(const Size3& threadgroup) const;
  bool runsLinear(const Size3& threadgroup) const;
  // Pipeline for one specialisation; created on first use and cached device-wide. Throws UsageError when the
  // threadgroup does not fit the pipeline (size limits, threadgroup memory, subgroups per workgroup).
  // `threadgroup` is the workgroup size of this dispatch region; `nominal` the threadgroup size the host asked for.
  VkPipeline pipelineFor(const Size3& threadgroup, const Size3& nominal, const std::vector<std::pair<uint32_t, ConstantValue>>& constants,
                         const std::vector<std::pair<uint32_t, uint32_t>>& threadgroupLengths,
                         VkPipelineLayout* layout);
};

}  // namespace m2v
