// Stream: Metal command queue + command buffer + compute encoder on one VkQueue, with a timeline semaphore.
//
// Async policy: nothing in the recording path (set*, dispatch*, upload, fill, copy, enqueueReadback, commit) waits on
// the host. Completed work is reclaimed by polling the timeline value (vkGetSemaphoreCounterValue, non-blocking);
// when nothing is free yet a new command buffer / arena chunk is created instead of waiting.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>

#include "internal.h"

namespace m2v {

namespace {

constexpr VkDeviceSize kArenaChunkBytes = VkDeviceSize(1) << 20;
// Pending (unbarriered) accesses kept for hazard checks; past this a barrier is cheaper than scanning.
constexpr size_t kMaxPendingAccesses = 64;
constexpr uint32_t kMaxBufferIndex = 4096;
// Abort words (docs/ABI.md): one 32-bit word per batch object, allocated in chunks of this many.
constexpr uint32_t kAbortWordsPerChunk = 256;
constexpr uint32_t kGpuAbortGraceMs = 2000, kCpuAbortGraceMs = 20000;

std::atomic<uint64_t> gNextBatchSerial{1};

// Host-visible memory the stream writes for the GPU to read (setBytes data, argument buffers, upload staging:
// device-local where the device can map it) or the GPU writes for the host to read (readbacks: host memory, cached).
enum class ArenaUse { DeviceReads, HostReads };

struct ArenaChunk {
  RawBuffer raw;
  ArenaUse use = ArenaUse::DeviceReads;
  VkDeviceSize used = 0;
  uint64_t lastUse = 0;  // timeline value of the last batch that references it
};

struct ArenaSlice {
  ArenaChunk* chunk = nullptr;
  VkDeviceSize offset = 0;
  uint8_t* host = nullptr;
  uint64_t address = 0;
};

// A byte range of a buffer that a recorded command reads or writes.
struct Access {
  const BufferObject* buffer = nullptr;
  uint64_t begin = 0, end = 0;
  bool write = false;
};

struct PendingReadback {
  const uint8_t* staging = nullptr;
  void* destination = nullptr;
  size_t size = 0;
};

struct TimingLabel {
  std::string kernel;
  uint64_t sequence = 0;
};

// One command buffer and what must stay alive until the timeline reaches `signalValue`.
// Timestamp queries come in pools of this many dispatches (two queries each), added as a batch grows: a batch may
// hold any number of dispatches (the Metal API records a whole command buffer as one).
constexpr uint32_t kTimedDispatchesPerPool = 256;

struct Batch {
  VkCommandBuffer commandBuffer = VK_NULL_HANDLE;
  std::vector<UniqueQueryPool> queryPools;  // kept across reuses of the batch
  uint32_t queryPoolsReset = 0;             // pools reset in the command buffer being recorded
  uint64_t serial = 0;
  uint64_t signalValue = 0;
  std::chrono::steady_clock::time_point submittedAt;  // for the timeout message: how long the work had run
  uint32_t dispatches = 0;
  uint32_t otherCommands = 0;
  bool needsHostBarrier = false;
  // This batch's abort word: kernels with abort checks read it (docs/ABI.md); the host sets it to stop them.
  uint32_t* abortWord = nullptr;
  uint64_t abortWordAddress = 0;
  bool abortable = false;  // a dispatch of it reads the abort word
  std::string spinWaits;   // "; kernel 'k' waits ..." for each kernel with spin-waits it dispatches (timeout message)
  std::vector<std::shared_ptr<BufferObject>> keepAlive;
  std::vector<std::shared_ptr<EventObject>> events;  // semaphores the submission waits on
  // Semaphores the submission signals besides the timeline, with their values. The signal operations of one
  // submission are not ordered, so these may reach their values a moment after the timeline does: the batch is
  // retired (and may drop the last reference to one) only once they have.
  std::vector<std::pair<std::shared_ptr<EventObject>, uint64_t>> signaledEvents;
  std::vector<PendingReadback> readbacks;
  std::vector<TimingLabel> timings;
};

uint64_t alignUp(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace

struct StreamState {
  std::shared_ptr<DeviceState> device;
  StreamOptions options;
  uint32_t timeoutMs = 0;  // host wait budget; 0: the device's
  UniqueCommandPool commandPool;
  UniqueSemaphore timeline;
  uint64_t submittedValue = 0;  // value signalled by the last submitted batch
  uint64_t completedValue = 0;  // last value observed on the timeline

  std::unique_ptr<Batch> recording;
  std::deque<std::unique_ptr<Batch>> inFlight;
  std::vector<std::unique_ptr<Batch>> spareBatches;
  std::vector<std::unique_ptr<ArenaChunk>> arena;
  std::vector<RawBuffer> abortWordChunks;  // kAbortWordsPerChunk words each, one per batch object
  uint32_t abortWordsTaken = 0;
  ArenaChunk* currentChunk[2] = {nullptr, nullptr};  // by ArenaUse
  std::vector<Access> pendingAccesses;
  std::vector<VkSemaphoreSubmitInfo> eventSignals;  // added to the next submission (Stream::commit(signals))
  std::vector<VkSemaphoreSubmitInfo> eventWaits;    // likewise

  // Encoder state.
  std::shared_ptr<KernelObject> kernel;
  struct Binding {
    std::shared_ptr<BufferObject> buffer;  // null for setBytes data
    uint64_t address = 0;
    uint64_t offset = 0;
    uint64_t end = 0;  // hazard range end
    ArenaChunk* bytesChunk = nullptr;
    bool bound = false;
  };
  std::vector<Binding> bindings;
  std::vector<std::pair<uint32_t, ConstantValue>> constants;
  std::vector<std::pair<uint32_t, uint32_t>> threadgroupLengths;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  Size3 pipelineThreadgroup;
  bool pipelineValid = false;
  VkPipeline boundPipeline = VK_NULL_HANDLE;  // in the recording command buffer

  std::vector<DispatchTiming> timings;
  Stream::Stats stats;
  uint64_t dispatchSequence = 0;
  std::vector<Access> scratchAccesses;
  std::vector<uint64_t> scratchAddresses;  // one device address per kernel buffer argument (up to Metal's 31)

  VkDevice vk() const { return device->vk(); }

  void throwIfFaulted() {
    if (device->faulted.load(std::memory_order_relaxed)) throw DeviceError(device->faultMessage());
  }

  Batch& ensureRecording() {
    if (recording) return *recording;
    throwIfFaulted();
    std::unique_ptr<Batch> batch;
    if (!spareBatches.empty()) {
      batch = std::move(spareBatches.back());
      spareBatches.pop_back();
    } else {
      batch = std::make_unique<Batch>();
      VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      info.commandPool = commandPool.get();
      info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      info.commandBufferCount = 1;
      vkCheck(vkAllocateCommandBuffers(vk(), &info, &batch->commandBuffer), "vkAllocateCommandBuffers", device.get());
      takeAbortWord(*batch);
    }
    batch->serial = gNextBatchSerial.fetch_add(1, std::memory_order_relaxed);
    batch->signalValue = submittedValue + 1;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkCheck(vkBeginCommandBuffer(batch->commandBuffer, &begin), "vkBeginCommandBuffer", device.get());
    batch->queryPoolsReset = 0;
    // Before the submission: the queue's host-write dependency makes the cleared word visible to its kernels.
    std::atomic_ref<uint32_t>(*batch->abortWord).store(0, std::memory_order_relaxed);
    batch->abortable = false;
    batch->spinWaits.clear();
    boundPipeline = VK_NULL_HANDLE;
    recording = std::move(batch);
    return *recording;
  }

  static void noteSpinWaits(Batch& batch, const KernelReflection& r) {
    const std::string kernelName = "kernel '" + r.entry + "'";
    if (batch.spinWaits.find(kernelName) != std::string::npos) return;
    std::string at;
    for (const std::string& w : r.spinWaits) at += (at.empty() ? "" : ", ") + w;
    batch.spinWaits += "; " + kernelName + " waits for values other threads store (" + at +
                       "), which ends only if the threadgroups it waits for run at the same time";
  }

  void takeAbortWord(Batch& batch) {
    const uint32_t slot = abortWordsTaken % kAbortWordsPerChunk;
    if (slot == 0) abortWordChunks.push_back(createDeviceReadStaging(*device, kAbortWordsPerChunk * 4));
    const RawBuffer& chunk = abortWordChunks.back();
    batch.abortWord = static_cast<uint32_t*>(chunk.hostPointer) + slot;
    batch.abortWordAddress = chunk.address + 4 * slot;
    ++abortWordsTaken;
  }

  // Non-blocking: retire batches the timeline has passed (readbacks copied out, timings collected, memory freed).
  void reclaim() {
    uint64_t value = 0;
    vkCheck(vkGetSemaphoreCounterValue(vk(), timeline.get(), &value), "vkGetSemaphoreCounterValue", device.get());
    completedValue = std::max(completedValue, value);
    while (!inFlight.empty() && inFlight.front()->signalValue <= completedValue &&
           eventsSignalled(*inFlight.front())) {
      std::unique_ptr<Batch> batch = std::move(inFlight.front());
      inFlight.pop_front();
      for (const PendingReadback& r : batch->readbacks) std::memcpy(r.destination, r.staging, r.size);
      if (!batch->timings.empty()) collectTimings(*batch);
      batch->keepAlive.clear();
      batch->events.clear();
      batch->signaledEvents.clear();
      batch->readbacks.clear();
      batch->timings.clear();
      batch->dispatches = batch->otherCommands = 0;
      batch->needsHostBarrier = false;
      spareBatches.push_back(std::move(batch));
    }
  }

  bool eventsSignalled(const Batch& batch) const {
    for (const auto& [event, value] : batch.signaledEvents) {
      uint64_t reached = 0;
      vkCheck(vkGetSemaphoreCounterValue(vk(), event->semaphore.get(), &reached), "vkGetSemaphoreCounterValue",
              device.get());
      if (reached < value) return false;
    }
    return true;
  }

  // After the timeline reached `value`: waits for the other semaphores the batches up to it signal (see Batch).
  void waitForEventSignals(uint64_t value, uint64_t timeoutNs) {
    std::vector<VkSemaphore> semaphores;
    std::vector<uint64_t> values;
    for (const auto& batch : inFlight)
      if (batch->signalValue <= value)
        for (const auto& [event, v] : batch->signaledEvents) {
          semaphores.push_back(event->semaphore.get());
          values.push_back(v);
        }
    if (semaphores.empty()) return;
    VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    info.semaphoreCount = uint32_t(semaphores.size());
    info.pSemaphores = semaphores.data();
    info.pValues = values.data();
    vkCheck(vkWaitSemaphores(vk(), &info, timeoutNs), "vkWaitSemaphores (event signals)", device.get());
  }

  // The query pool and first query of a batch's dispatch `index`; resets (and first creates) the pool in the
  // command buffer when the batch reaches it.
  std::pair<VkQueryPool, uint32_t> timingQueries(Batch& batch, uint32_t index) {
    const uint32_t pool = index / kTimedDispatchesPerPool;
    if (pool >= batch.queryPoolsReset) {
      if (pool >= batch.queryPools.size()) {
        VkQueryPoolCreateInfo q{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        q.queryType = VK_QUERY_TYPE_TIMESTAMP;
        q.queryCount = 2 * kTimedDispatchesPerPool;
        VkQueryPool created = VK_NULL_HANDLE;
        vkCheck(vkCreateQueryPool(vk(), &q, nullptr, &created), "vkCreateQueryPool", device.get());
        batch.queryPools.emplace_back(vk(), created);
      }
      vkCmdResetQueryPool(batch.commandBuffer, batch.queryPools[pool].get(), 0, 2 * kTimedDispatchesPerPool);
      batch.queryPoolsReset = pool + 1;
    }
    return {batch.queryPools[pool].get(), 2 * (index % kTimedDispatchesPerPool)};
  }

  void collectTimings(Batch& batch) {
    const uint32_t count = uint32_t(batch.timings.size()) * 2;
    std::vector<uint64_t> ticks(count);
    for (uint32_t first = 0; first < count; first += 2 * kTimedDispatchesPerPool) {
      const uint32_t n = std::min(count - first, 2 * kTimedDispatchesPerPool);
      VkResult r = vkGetQueryPoolResults(vk(), batch.queryPools[first / (2 * kTimedDispatchesPerPool)].get(), 0, n,
                                         n * 8, ticks.data() + first, 8, VK_QUERY_RESULT_64_BIT);
      if (r != VK_SUCCESS) return;  // VK_NOT_READY cannot happen after completion; never block here
    }
    for (size_t i = 0; i < batch.timings.size(); ++i) {
      const double period = device->info.timestampPeriodNs;
      double ns = double(ticks[2 * i + 1] - ticks[2 * i]) * period;
      timings.push_back({std::move(batch.timings[i].kernel), batch.timings[i].sequence, ns,
                         double(ticks[2 * i]) * period, double(ticks[2 * i + 1]) * period});
    }
  }

  // setBytes data stays bound (and may be dispatched again later), so its chunk is not recycled while bound.
  bool heldByBinding(const ArenaChunk* chunk) const {
    for (const Binding& b : bindings)
      if (b.bound && b.bytesChunk == chunk) return true;
    return false;
  }

  // Host-visible memory valid until the batch now being recorded completes.
  ArenaSlice allocate(VkDeviceSize size, VkDeviceSize alignment, ArenaUse use = ArenaUse::DeviceReads) {
    uint64_t useValue = submittedValue + 1;
    ArenaChunk*& currentChunk = this->currentChunk[int(use)];
    if (!currentChunk || alignUp(currentChunk->used, alignment) + size > currentChunk->raw.size) {
      currentChunk = nullptr;
      for (auto& chunk : arena)
        if (chunk->use == use && chunk->lastUse <= completedValue && chunk->raw.size >= size &&
            !heldByBinding(chunk.get())) {
          chunk->used = 0;
          currentChunk = chunk.get();
          break;
        }
      if (!currentChunk) {
        auto chunk = std::make_unique<ArenaChunk>();
        const VkDeviceSize bytes = std::max(kArenaChunkBytes, alignUp(size, 256));
        chunk->raw = use == ArenaUse::HostReads ? createRawBuffer(*device, bytes, true)
                                                : createDeviceReadStaging(*device, bytes);
        chunk->use = use;
        currentChunk = chunk.get();
        arena.push_back(std::move(chunk));
      }
    }
    ArenaSlice slice;
    slice.chunk = currentChunk;
    slice.offset = alignUp(currentChunk->used, alignment);
    slice.host = static_cast<uint8_t*>(currentChunk->raw.hostPointer) + slice.offset;
    slice.address = currentChunk->raw.address + slice.offset;
    currentChunk->used = slice.offset + size;
    currentChunk->lastUse = useValue;
    return slice;
  }

  // One global memory barrier between the compute and transfer commands before it and those after it.
  void recordBarrier(Batch& batch) {
    VkMemoryBarrier2 barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
    barrier.srcStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
    barrier.srcAccessMask = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT;
    barrier.dstStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
    barrier.dstAccessMask = VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT |
                            VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT;
    VkDependencyInfo dependency{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dependency.memoryBarrierCount = 1;
    dependency.pMemoryBarriers = &barrier;
    vkCmdPipelineBarrier2(batch.commandBuffer, &dependency);
    pendingAccesses.clear();
    stats.barriers++;
  }

  // Inserts one global memory barrier when a command's accesses conflict with unbarriered earlier ones.
  void orderAfterHazards(Batch& batch, const std::vector<Access>& accesses) {
    if (options.explicitBarriers) return;  // the caller places barriers (Stream::barrier)
    bool needBarrier = pendingAccesses.size() + accesses.size() > kMaxPendingAccesses;
    for (size_t i = 0; i < accesses.size() && !needBarrier; ++i) {
      const Access& a = accesses[i];
      for (const Access& p : pendingAccesses)
        if (p.buffer == a.buffer && p.begin < a.end && a.begin < p.end && (p.write || a.write)) {
          needBarrier = true;
          break;
        }
    }
    if (needBarrier) recordBarrier(batch);
    for (const Access& a : accesses) {
      bool merged = false;
      for (Access& p : pendingAccesses)
        if (p.buffer == a.buffer && p.write == a.write && p.begin <= a.end && a.begin <= p.end) {
          p.begin = std::min(p.begin, a.begin);
          p.end = std::max(p.end, a.end);
          merged = true;
          break;
        }
      if (!merged) pendingAccesses.push_back(a);
    }
  }

  void keepAlive(Batch& batch, const std::shared_ptr<BufferObject>& buffer) {
    if (buffer->keptByBatch.load(std::memory_order_relaxed) == batch.serial) return;
    buffer->keptByBatch.store(batch.serial, std::memory_order_relaxed);
    batch.keepAlive.push_back(buffer);
  }

  void submit() {
    if (!recording || (recording->dispatches == 0 && recording->otherCommands == 0)) return;
    throwIfFaulted();
    Batch& batch = *recording;
    // Make readback copies (and, with explicit barriers, kernel writes to shared buffers) visible to host reads
    // after the wait.
    if (batch.needsHostBarrier || options.explicitBarriers) {
      VkMemoryBarrier2 barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
      barrier.srcStageMask = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
      barrier.srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT;
      barrier.dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT;
      barrier.dstAccessMask = VK_ACCESS_2_HOST_READ_BIT;
      VkDependencyInfo dependency{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
      dependency.memoryBarrierCount = 1;
      dependency.pMemoryBarriers = &barrier;
      vkCmdPipelineBarrier2(batch.commandBuffer, &dependency);
    }
    vkCheck(vkEndCommandBuffer(batch.commandBuffer), "vkEndCommandBuffer", device.get());
    VkCommandBufferSubmitInfo commandInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO};
    commandInfo.commandBuffer = batch.commandBuffer;
    VkSemaphoreSubmitInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
    signal.semaphore = timeline.get();
    signal.value = batch.signalValue;
    signal.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
    VkSubmitInfo2 submitInfo{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
    submitInfo.commandBufferInfoCount = 1;
    submitInfo.pCommandBufferInfos = &commandInfo;
    std::vector<VkSemaphoreSubmitInfo> signals{signal};
    signals.insert(signals.end(), eventSignals.begin(), eventSignals.end());
    eventSignals.clear();
    submitInfo.signalSemaphoreInfoCount = uint32_t(signals.size());
    submitInfo.pSignalSemaphoreInfos = signals.data();
    std::vector<VkSemaphoreSubmitInfo> waits = std::move(eventWaits);
    eventWaits.clear();
    submitInfo.waitSemaphoreInfoCount = uint32_t(waits.size());
    submitInfo.pWaitSemaphoreInfos = waits.data();
    {
      std::lock_guard lock(device->queueMutex);
      vkCheck(vkQueueSubmit2(device->queue, 1, &submitInfo, VK_NULL_HANDLE), "vkQueueSubmit2", device.get());
    }
    submittedValue = batch.signalValue;
    batch.submittedAt = std::chrono::steady_clock::now();
    inFlight.push_back(std::move(recording));
    stats.submissions++;
    reclaim();
  }

  // "the oldest unfinished command buffer was submitted N ms ago" for a wait on `value` that timed out.
  std::string unfinishedWorkAge(uint64_t value) const {
    for (const auto& batch : inFlight)
      if (batch->signalValue > completedValue && batch->signalValue <= value) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                        batch->submittedAt)
                      .count();
        return "its oldest unfinished command buffer had run for " + std::to_string(ms) + " ms" + batch->spinWaits;
      }
    return "its work had not started";
  }

  // Sets the abort word of each unfinished batch up to `value`; false when one of them has no dispatch that reads it
  // (kernels built without abort checks or without loops, copies, event waits): nothing there can be asked to stop.
  bool requestAbort(uint64_t value) {
    bool all = true;
    for (const auto& batch : inFlight)
      if (batch->signalValue > completedValue && batch->signalValue <= value) {
        std::atomic_ref<uint32_t>(*batch->abortWord).store(1, std::memory_order_relaxed);
        all = all && batch->abortable;
      }
    return all;
  }

  void wait(uint64_t value) {
    if (value > submittedValue) submit();
    if (value > submittedValue) throw UsageError("wait: timeline value " + std::to_string(value) + " was never committed");
    const uint32_t budgetMs = timeoutMs ? timeoutMs : device->timeoutMs;
    if (value <= completedValue) {
      waitForEventSignals(value, uint64_t(budgetMs) * 1000000ull);
      return reclaim();
    }
    throwIfFaulted();
    VkSemaphore semaphore = timeline.get();
    VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    info.semaphoreCount = 1;
    info.pSemaphores = &semaphore;
    info.pValues = &value;
    stats.hostWaits++;
    VkResult r = vkWaitSemaphores(vk(), &info, uint64_t(budgetMs) * 1000000ull);
    if (r == VK_TIMEOUT) {
      std::string what = "GPU work did not finish within " + std::to_string(budgetMs) + " ms (the budget of this " +
                         device->info.type + " device's stream; M2V_TIMEOUT_MS sets it): " + unfinishedWorkAge(value);
      // Kernels with abort checks leave when asked; the device and its memory stay.
      // Stopping takes each running thread to its next check and lets the rest start and leave: the budget again,
      // but never less than a floor (lavapipe takes 1-3 s to stop MLX's largest fft).
      const uint32_t floorMs = device->info.type == "cpu" ? kCpuAbortGraceMs : kGpuAbortGraceMs;
      const uint64_t graceNs = uint64_t(std::max(budgetMs, floorMs)) * 1000000ull;
      if (requestAbort(value) && vkWaitSemaphores(vk(), &info, graceNs) == VK_SUCCESS) {
        reclaim();
        throw TimeoutError(what + "; its kernels were stopped, so what it wrote is undefined (the device and its " +
                           "memory are unaffected)");
      }
      what += "; a kernel may never terminate, or the device is too slow for it";
      device->markFaulted(what);
      throw TimeoutError(what + "; this device is no longer usable (a new Device runs what comes next)");
    }
    vkCheck(r, "vkWaitSemaphores", device.get());
    waitForEventSignals(value, uint64_t(budgetMs) * 1000000ull);
    reclaim();
  }

  void checkRange(const Buffer& buffer, uint64_t offset, uint64_t size, const char* what) const {
    if (!buffer) throw UsageError(std::string(what) + ": null buffer");
    if (buffer.object()->device != device) throw UsageError(std::string(what) + ": buffer belongs to another device");
    if (offset > buffer.size() || size > buffer.size() - offset)
      throw UsageError(std::string(what) + ": range [" + std::to_string(offset) + ", +" + std::to_string(size) +
                       ") exceeds buffer of " + std::to_string(buffer.size()) + " bytes");
  }

  void validateThreadgroup(const Size3& tg) const {
    const DeviceInfo& info = device->info;
    const uint32_t dims[3] = {tg.x, tg.y, tg.z};
    const bool relayout = kernel->needsRelayout(tg) && kernel->canRelayout(tg);
    for (int i = 0; i < 3; ++i)
      if (dims[i] == 0 || (dims[i] > info.maxWorkgroupSize[i] && !relayout))
        throw UsageError("kernel '" + kernel->reflection.entry + "': threadgroup dimension " + std::to_string(i) +
                         " = " + std::to_string(dims[i]) + " outside 1.." + std::to_string(info.maxWorkgroupSize[i]));
    uint64_t total = uint64_t(tg.x) * tg.y * tg.z;
    if (total > info.maxWorkgroupInvocations)
      throw UsageError("kernel '" + kernel->reflection.entry + "': threadgroup of " + std::to_string(total) +
                       " threads exceeds the device limit of " + std::to_string(info.maxWorkgroupInvocations));
  }

  void dispatch(const Size3& grid, const Size3& groups, const Size3& tg) {
    if (kernel && kernel->portable && (grid.x % tg.x || grid.y % tg.y || grid.z % tg.z)) {
      // Partial threadgroups leave lanes outside user code; cooperative-matrix operations need whole subgroups.
      std::shared_ptr<KernelObject> cooperative = kernel;
      kernel = cooperative->portable;
      pipelineValid = false;
      struct Restore {
        StreamState& s;
        std::shared_ptr<KernelObject> k;
        ~Restore() {
          s.kernel = std::move(k);
          s.pipelineValid = false;
        }
      } restore{*this, cooperative};
      dispatchKernel(grid, groups, tg);
      return;
    }
    dispatchKernel(grid, groups, tg);
  }

  void dispatchKernel(const Size3& grid, const Size3& groups, const Size3& tg) {
    if (!kernel) throw UsageError("dispatch without setKernel");
    KernelObject& k = *kernel;
    if (!pipelineValid || tg.x != pipelineThreadgroup.x || tg.y != pipelineThreadgroup.y ||
        tg.z != pipelineThreadgroup.z) {
      validateThreadgroup(tg);
      pipeline = k.pipelineFor(tg, tg, constants, threadgroupLengths, &pipelineLayout);
      pipelineThreadgroup = tg;
      pipelineValid = true;
    }
    if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;  // empty grid: nothing runs, as on Metal
    const DeviceInfo& info = device->info;

    // Push block per ABI: grid, reserved word, then one device address per [[buffer(n)]].
    alignas(8) uint8_t push[kPushConstantLimit] = {};
    const uint32_t gridWords[3] = {grid.x, grid.y, grid.z};
    std::memcpy(push + kPushGridOffset, gridWords, sizeof gridWords);
    scratchAccesses.clear();
    // As many addresses as the kernel has buffer arguments: more than fit in the push block when the kernel uses an
    // argument buffer (docs/ABI.md).
    std::vector<uint64_t>& addresses = scratchAddresses;
    addresses.assign(k.args.size(), 0);
    for (size_t i = 0; i < k.args.size(); ++i) {
      const KernelArg& arg = k.args[i];
      const Binding* b = arg.bufferIndex < bindings.size() ? &bindings[arg.bufferIndex] : nullptr;
      if (!b || !b->bound) {
        if (!arg.optional)
          throw UsageError("kernel '" + k.reflection.entry + "': buffer(" + std::to_string(arg.bufferIndex) +
                           ") is not bound (setBuffer/setBytes)");
        addresses[i] = 0;
        continue;
      }
      addresses[i] = b->address;
      if (b->buffer)
        scratchAccesses.push_back({b->buffer.get(), b->offset, b->end, !arg.readOnly});
    }

    Batch& batch = ensureRecording();
    if (k.reflection.argumentBuffer) {
      ArenaSlice table = allocate(k.argumentBufferSize, 16);
      std::memset(table.host, 0, k.argumentBufferSize);
      for (size_t i = 0; i < k.args.size(); ++i) std::memcpy(table.host + k.args[i].offset, &addresses[i], 8);
      std::memcpy(push + kPushArgsOffset, &table.address, 8);
    } else {
      for (size_t i = 0; i < k.args.size(); ++i) std::memcpy(push + k.args[i].offset, &addresses[i], 8);
    }
    if (k.reflection.abortWordOffset) {
      std::memcpy(push + k.reflection.abortWordOffset, &batch.abortWordAddress, 8);
      batch.abortable = true;
    }
    if (!k.reflection.spinWaits.empty()) noteSpinWaits(batch, k.reflection);

    orderAfterHazards(batch, scratchAccesses);
    VkCommandBuffer cmd = batch.commandBuffer;
    if (boundPipeline != pipeline) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      boundPipeline = pipeline;
    }
    vkCmdPushConstants(cmd, pipelineLayout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k.reflection.pushConstantSize, push);
    const bool timed = options.timestamps;
    std::pair<VkQueryPool, uint32_t> queries{};
    if (timed) {
      queries = timingQueries(batch, uint32_t(batch.timings.size()));
      vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, queries.first, queries.second);
    }
    // Metal's partial edge threadgroups: each dimension splits into its full groups and one partial group, and each
    // region runs with a workgroup exactly its threadgroup's size (docs/ABI.md), so no invocation is out of the grid.
    const uint32_t full[3] = {grid.x / tg.x, grid.y / tg.y, grid.z / tg.z};
    const uint32_t rest[3] = {grid.x % tg.x, grid.y % tg.y, grid.z % tg.z};
    const uint32_t size[3] = {tg.x, tg.y, tg.z};
    // Metal allows 2^32-1 threadgroups per dimension, Vulkan devices fewer (lavapipe 65535, NVIDIA 65535 in y and
    // z): larger ranges run as several dispatches, each at its base group. Positions come from the workgroup id,
    // which includes the base, and threadgroups_per_grid from the grid (docs/ABI.md), so the kernel sees one grid.
    auto dispatchBase = [&](const uint32_t base[3], const uint32_t count[3]) {
      const uint32_t* limit = info.maxWorkgroupCount;
      for (uint32_t z = 0; z < count[2]; z += limit[2])
        for (uint32_t y = 0; y < count[1]; y += limit[1])
          for (uint32_t x = 0; x < count[0]; x += limit[0])
            vkCmdDispatchBase(cmd, base[0] + x, base[1] + y, base[2] + z, std::min(limit[0], count[0] - x),
                              std::min(limit[1], count[1] - y), std::min(limit[2], count[2] - z));
    };
    if (!rest[0] && !rest[1] && !rest[2]) {
      if (groups.x <= info.maxWorkgroupCount[0] && groups.y <= info.maxWorkgroupCount[1] &&
          groups.z <= info.maxWorkgroupCount[2]) {
        vkCmdDispatch(cmd, groups.x, groups.y, groups.z);
      } else {
        const uint32_t base[3] = {0, 0, 0}, count[3] = {groups.x, groups.y, groups.z};
        dispatchBase(base, count);
      }
    } else {
      for (uint32_t region = 0; region < 8; ++region) {
        uint32_t base[3], count[3], local[3];
        bool empty = false;
        for (int d = 0; d < 3; ++d) {
          bool edge = region & (1u << d);
          base[d] = edge ? full[d] : 0;
          count[d] = edge ? (rest[d] ? 1 : 0) : full[d];
          local[d] = edge ? rest[d] : size[d];
          empty = empty || count[d] == 0;
        }
        if (empty) continue;
        VkPipeline regionPipeline =
            k.pipelineFor({local[0], local[1], local[2]}, tg, constants, threadgroupLengths, &pipelineLayout);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, regionPipeline);
        dispatchBase(base, count);
      }
      boundPipeline = VK_NULL_HANDLE;  // the region pipelines replaced it
    }
    if (timed) {
      vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, queries.first, queries.second + 1);
      batch.timings.push_back({k.reflection.entry, dispatchSequence});
    }
    for (size_t i = 0; i < k.args.size(); ++i) {
      const KernelArg& arg = k.args[i];
      if (arg.bufferIndex >= bindings.size() || !bindings[arg.bufferIndex].bound) continue;
      Binding& b = bindings[arg.bufferIndex];
      if (b.buffer)
        keepAlive(batch, b.buffer);
      else if (b.bytesChunk)
        b.bytesChunk->lastUse = batch.signalValue;  // setBytes data reused by a later batch must outlive it too
    }
    dispatchSequence++;
    stats.dispatches++;
    if (++batch.dispatches >= options.batchSize) submit();
  }
};

// ------------------------------------------------------------------------------------------------------------

Stream Device::createStream() { return createStream(StreamOptions{}); }

Stream Device::createStream(const StreamOptions& options) {
  if (options.batchSize == 0) throw UsageError("StreamOptions::batchSize must be > 0");
  if (options.timestamps && state_->info.timestampPeriodNs == 0)
    throw UnsupportedError(state_->info.name + " has no timestamps on its compute queue");
  auto state = std::make_unique<StreamState>();
  state->device = state_;
  state->options = options;
  state->timeoutMs = options.timeoutMs;
  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = state_->queueFamily;
  VkCommandPool pool = VK_NULL_HANDLE;
  vkCheck(vkCreateCommandPool(state_->vk(), &poolInfo, nullptr, &pool), "vkCreateCommandPool", state_.get());
  state->commandPool = UniqueCommandPool(state_->vk(), pool);
  VkSemaphoreTypeCreateInfo typeInfo{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  typeInfo.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  typeInfo.initialValue = 0;
  VkSemaphoreCreateInfo semaphoreInfo{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  semaphoreInfo.pNext = &typeInfo;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  vkCheck(vkCreateSemaphore(state_->vk(), &semaphoreInfo, nullptr, &semaphore), "vkCreateSemaphore", state_.get());
  state->timeline = UniqueSemaphore(state_->vk(), semaphore);
  return Stream(std::move(state));
}

Stream::Stream(std::unique_ptr<StreamState> state) : state_(std::move(state)) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));  // finishes and releases our current work
    state_ = std::move(other.state_);
  }
  return *this;
}

Stream::~Stream() {
  if (!state_) return;
  try {
    state_->submit();
    state_->wait(state_->submittedValue);
  } catch (const RuntimeError&) {
    // Reported to the caller by an earlier synchronize() or swallowed here: destructors must not throw.
  }
  if (state_->device->faulted.load()) {
    // In-flight work may never finish: keep every object it uses (and so the device) alive forever.
    (void)state_.release();
  }
}

void Stream::setKernel(const Kernel& kernel) {
  if (!kernel) throw UsageError("setKernel: empty kernel");
  if (kernel.object()->device != state_->device) throw UsageError("setKernel: kernel belongs to another device");
  state_->kernel = kernel.object();
  state_->constants.clear();
  state_->threadgroupLengths.clear();
  state_->pipelineValid = false;
}

static StreamState::Binding& bindingSlot(StreamState& s, uint32_t index) {
  if (index >= kMaxBufferIndex) throw UsageError("buffer index " + std::to_string(index) + " out of range");
  if (index >= s.bindings.size()) s.bindings.resize(index + 1);
  return s.bindings[index];
}

void Stream::setBuffer(const Buffer& buffer, size_t offset, uint32_t index) {
  StreamState::Binding& slot = bindingSlot(*state_, index);
  if (!buffer) {  // Metal allows binding nil: the kernel sees address 0
    slot = StreamState::Binding{nullptr, 0, 0, 0, nullptr, true};
    return;
  }
  if (buffer.object()->device != state_->device) throw UsageError("setBuffer: buffer belongs to another device");
  if (offset >= buffer.size())
    throw UsageError("setBuffer: offset " + std::to_string(offset) + " is past the end of a " +
                     std::to_string(buffer.size()) + "-byte buffer");
  slot = StreamState::Binding{buffer.object(), buffer.deviceAddress() + offset, offset, buffer.size(), nullptr, true};
}

void Stream::setBufferRange(const Buffer& buffer, size_t offset, size_t length, uint32_t index) {
  state_->checkRange(buffer, offset, length, "setBufferRange");
  if (length == 0) throw UsageError("setBufferRange: empty range");
  setBuffer(buffer, offset, index);
  state_->bindings[index].end = offset + length;
}

void Stream::setBytes(const void* data, size_t length, uint32_t index) {
  if (!data || length == 0) throw UsageError("setBytes: empty data");
  StreamState::Binding& slot = bindingSlot(*state_, index);
  ArenaSlice slice = state_->allocate(length, 16);
  std::memcpy(slice.host, data, length);
  slot = StreamState::Binding{nullptr, slice.address, 0, 0, slice.chunk, true};
}

void Stream::clearBindings() { state_->bindings.clear(); }

void Stream::setThreadgroupMemoryLength(uint32_t length, uint32_t index) {
  auto& lengths = state_->threadgroupLengths;
  auto it = std::find_if(lengths.begin(), lengths.end(), [&](const auto& l) { return l.first == index; });
  if (it != lengths.end())
    it->second = length;
  else
    lengths.emplace_back(index, length);
  state_->pipelineValid = false;
}

static void setConstant(StreamState& s, uint32_t index, ConstantValue value) {
  auto it = std::find_if(s.constants.begin(), s.constants.end(), [&](const auto& c) { return c.first == index; });
  if (it != s.constants.end())
    it->second = value;
  else
    s.constants.emplace_back(index, value);
  s.pipelineValid = false;
}

void Stream::setFunctionConstant(uint32_t index, bool value) {
  setConstant(*state_, index, {ConstantValue::Kind::Bool, value ? 1 : 0, 0});
}
void Stream::setFunctionConstant(uint32_t index, int32_t value) {
  setConstant(*state_, index, {ConstantValue::Kind::Int, value, 0});
}
void Stream::setFunctionConstant(uint32_t index, uint32_t value) {
  setConstant(*state_, index, {ConstantValue::Kind::Int, int64_t(value), 0});
}
void Stream::setFunctionConstant(uint32_t index, int64_t value) {
  setConstant(*state_, index, {ConstantValue::Kind::Int, value, 0});
}
void Stream::setFunctionConstant(uint32_t index, float value) {
  setConstant(*state_, index, {ConstantValue::Kind::Float, 0, value});
}
void Stream::setFunctionConstant(uint32_t index, double value) {
  setConstant(*state_, index, {ConstantValue::Kind::Float, 0, value});
}

static uint32_t ceilDiv(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }

void Stream::dispatchThreads(Size3 grid, Size3 threadgroup) {
  if (threadgroup.x == 0 || threadgroup.y == 0 || threadgroup.z == 0)
    throw UsageError("dispatchThreads: threadgroup dimensions must be > 0");
  Size3 groups{ceilDiv(grid.x, threadgroup.x), ceilDiv(grid.y, threadgroup.y), ceilDiv(grid.z, threadgroup.z)};
  state_->dispatch(grid, groups, threadgroup);
}

void Stream::dispatchThreadgroups(Size3 groups, Size3 threadgroup) {
  uint64_t gx = uint64_t(groups.x) * threadgroup.x, gy = uint64_t(groups.y) * threadgroup.y,
           gz = uint64_t(groups.z) * threadgroup.z;
  if (gx > UINT32_MAX || gy > UINT32_MAX || gz > UINT32_MAX)
    throw UsageError("dispatchThreadgroups: grid does not fit in 32 bits per dimension");
  state_->dispatch(Size3{uint32_t(gx), uint32_t(gy), uint32_t(gz)}, groups, threadgroup);
}

void Stream::upload(const Buffer& dst, size_t dstOffset, const void* data, size_t size) {
  state_->checkRange(dst, dstOffset, size, "upload");
  if (size == 0) return;
  Batch& batch = state_->ensureRecording();
  ArenaSlice staging = state_->allocate(size, 16);
  std::memcpy(staging.host, data, size);
  state_->orderAfterHazards(batch, {{dst.object().get(), dstOffset, dstOffset + size, true}});
  VkBufferCopy region{staging.offset, dstOffset, size};
  vkCmdCopyBuffer(batch.commandBuffer, staging.chunk->raw.buffer.get(), dst.object()->raw.buffer.get(), 1, &region);
  state_->keepAlive(batch, dst.object());
  batch.otherCommands++;
}

void Stream::fill(const Buffer& dst, size_t offset, size_t size, uint32_t pattern) {
  state_->checkRange(dst, offset, size, "fill");
  if (offset % 4 || size % 4) throw UsageError("fill: offset and size must be multiples of 4");
  if (size == 0) return;
  Batch& batch = state_->ensureRecording();
  state_->orderAfterHazards(batch, {{dst.object().get(), offset, offset + size, true}});
  vkCmdFillBuffer(batch.commandBuffer, dst.object()->raw.buffer.get(), offset, size, pattern);
  state_->keepAlive(batch, dst.object());
  batch.otherCommands++;
}

void Stream::fillBytes(const Buffer& dst, size_t offset, size_t size, uint8_t value) {
  fill(dst, offset, size, uint32_t(value) * 0x01010101u);
}

void Stream::copy(const Buffer& src, size_t srcOffset, const Buffer& dst, size_t dstOffset, size_t size) {
  state_->checkRange(src, srcOffset, size, "copy source");
  state_->checkRange(dst, dstOffset, size, "copy destination");
  if (src.object() == dst.object() && srcOffset < dstOffset + size && dstOffset < srcOffset + size)
    throw UsageError("copy: source and destination ranges overlap");
  if (size == 0) return;
  Batch& batch = state_->ensureRecording();
  state_->orderAfterHazards(batch, {{src.object().get(), srcOffset, srcOffset + size, false},
                                    {dst.object().get(), dstOffset, dstOffset + size, true}});
  VkBufferCopy region{srcOffset, dstOffset, size};
  vkCmdCopyBuffer(batch.commandBuffer, src.object()->raw.buffer.get(), dst.object()->raw.buffer.get(), 1, &region);
  state_->keepAlive(batch, src.object());
  state_->keepAlive(batch, dst.object());
  batch.otherCommands++;
}

void Stream::enqueueReadback(const Buffer& src, size_t srcOffset, void* dst, size_t size) {
  state_->checkRange(src, srcOffset, size, "readback");
  if (size == 0) return;
  if (!dst) throw UsageError("readback: null destination");
  Batch& batch = state_->ensureRecording();
  ArenaSlice staging = state_->allocate(size, 16, ArenaUse::HostReads);
  state_->orderAfterHazards(batch, {{src.object().get(), srcOffset, srcOffset + size, false}});
  VkBufferCopy region{srcOffset, staging.offset, size};
  vkCmdCopyBuffer(batch.commandBuffer, src.object()->raw.buffer.get(), staging.chunk->raw.buffer.get(), 1, &region);
  state_->keepAlive(batch, src.object());
  batch.readbacks.push_back({staging.host, dst, size});
  batch.needsHostBarrier = true;
  batch.otherCommands++;
}

void Stream::readback(const Buffer& src, size_t srcOffset, void* dst, size_t size) {
  enqueueReadback(src, srcOffset, dst, size);
  synchronize();
}

uint64_t Stream::commit() {
  state_->submit();
  return state_->submittedValue;
}

uint64_t Stream::commit(std::span<const EventSignal> signals, std::span<const EventSignal> waits) {
  StreamState& s = *state_;
  if (signals.empty() && waits.empty()) return commit();
  for (const EventSignal& e : signals)
    if (!e.event || e.event.object()->device != s.device) throw UsageError("commit: event of another device or empty");
  for (const EventSignal& e : waits)
    if (!e.event || e.event.object()->device != s.device) throw UsageError("commit: event of another device or empty");
  auto submitInfo = [](const EventSignal& e) {
    VkSemaphoreSubmitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
    info.semaphore = e.event.object()->semaphore.get();
    info.value = e.value;
    info.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
    return info;
  };
  // An empty submission still has to signal or wait: record an empty batch so submit() has something to send.
  Batch& batch = s.ensureRecording();
  batch.otherCommands++;
  for (const EventSignal& e : signals) {
    s.eventSignals.push_back(submitInfo(e));
    batch.signaledEvents.emplace_back(e.event.object(), e.value);
  }
  for (const EventSignal& e : waits) {
    s.eventWaits.push_back(submitInfo(e));
    batch.events.push_back(e.event.object());
  }
  s.submit();
  return s.submittedValue;
}

void Stream::barrier() { state_->recordBarrier(state_->ensureRecording()); }

void Stream::synchronize() {
  state_->submit();
  state_->wait(state_->submittedValue);
}

void Stream::wait(uint64_t value) { state_->wait(value); }

uint64_t Stream::completedValue() const {
  uint64_t value = 0;
  vkCheck(vkGetSemaphoreCounterValue(state_->vk(), state_->timeline.get(), &value), "vkGetSemaphoreCounterValue",
          state_->device.get());
  return value;
}

void Stream::setTimeoutMs(uint32_t ms) { state_->timeoutMs = ms; }
uint32_t Stream::timeoutMs() const { return state_->timeoutMs ? state_->timeoutMs : state_->device->timeoutMs; }

std::vector<DispatchTiming> Stream::takeTimings() { return std::exchange(state_->timings, {}); }

Stream::Stats Stream::stats() const { return state_->stats; }

}  // namespace m2v
