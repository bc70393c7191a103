// Command queues, command buffers, compute encoders, fences and events.
//
// A command buffer's commands are recorded into runtime streams (one per segment, see CommandBufferImpl) with
// explicit barriers: the encoder adds a barrier only where Metal has one (memoryBarrier, a fence wait at the start
// of an encoder, after every dispatch of a serial encoder). Streams are pooled per queue. Commit hands the command
// buffer to the queue: segments are submitted in commit order, on the committing thread when nothing has to wait,
// otherwise on the queue's submission thread after a host wait for the events; the completion thread waits for
// each command buffer's GPU work in commit order, sets its status and runs its handlers.
#include <chrono>
#include <cstdio>
#include <utility>

#include "objects.h"

namespace m2v::metal {
namespace {

constexpr uint64_t kEventPollNs = 100'000'000;  // host waits wake this often to notice a queue being destroyed
// Set on the completion thread while it runs handlers: a handler's own event waits do not wait for handlers.
thread_local bool runningHandlers = false;

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void runHandlers(CommandBufferImpl* buffer, std::vector<MTL::HandlerFunction>& handlers) {
  for (auto& handler : handlers) {
    try {
      handler(buffer);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[metal2vk] a command buffer handler threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "[metal2vk] a command buffer handler threw\n");
    }
  }
  handlers.clear();
}

// The command buffer error for the exception being handled (call inside a catch block).
MTL::CommandBufferError currentErrorCode() {
  try {
    throw;
  } catch (const m2v::TimeoutError&) {
    return MTL::CommandBufferErrorTimeout;
  } catch (const m2v::DeviceLostError&) {
    return MTL::CommandBufferErrorDeviceRemoved;
  } catch (...) {
    return MTL::CommandBufferErrorInternal;
  }
}

}  // namespace

// --- CommandBufferImpl ---
m2v::Stream& CommandBufferImpl::ensureStream() {
  Segment& segment = segments.back();
  if (!segment.stream) segment.stream = queue->takeStream(&segment.streamGeneration);
  return *segment.stream;
}

bool CommandBufferImpl::failed() {
  std::lock_guard lock(mutex);
  return !failure.empty();
}

void CommandBufferImpl::fail(MTL::CommandBufferError code, const std::string& message) {
  std::lock_guard lock(mutex);
  if (!failure.empty()) return;  // the first failure is the one reported
  failure = message;
  failureCode = code;
}

CommandBufferImpl::CommandBufferImpl()
    : serial([] {
        static std::atomic<uint64_t> next{1};
        return next.fetch_add(1, std::memory_order_relaxed);
      }()) {}

CommandBufferImpl::~CommandBufferImpl() {
  if (holdsSlot) queue->releaseSlot();  // made but never committed
}

// --- QueueCore ---
QueueCore::QueueCore(DeviceImpl* d, size_t maxUncompleted) : device(NS::RetainPtr(d)), maxUncompleted_(maxUncompleted) {}

void QueueCore::acquireSlot() {
  std::unique_lock lock(slotMutex_);
  slotFreed_.wait(lock, [&] { return uncompleted_ < maxUncompleted_; });
  uncompleted_++;
}

void QueueCore::releaseSlot() {
  {
    std::lock_guard lock(slotMutex_);
    uncompleted_--;
  }
  slotFreed_.notify_one();
}

void QueueCore::stop() {
  // The submission thread stops (work still waiting for events is never submitted); the completion thread
  // first retires everything submitted.
  {
    std::lock_guard a(submitMutex_);
    stopSubmitting_ = true;
  }
  submitReady_.notify_all();
  if (submitter_.joinable()) submitter_.join();
  {
    std::lock_guard b(completeMutex_);
    stopCompleting_ = true;
  }
  completeReady_.notify_all();
  if (completer_.joinable()) {
    if (completer_.get_id() == std::this_thread::get_id())
      completer_.detach();  // a completion handler released the last reference to the queue
    else
      completer_.join();
  }
}

m2v::Stream QueueCore::takeStream(uint64_t* generationOut) {
  uint64_t generation = device->generation();
  *generationOut = generation;
  {
    std::lock_guard lock(poolMutex_);
    if (poolGeneration_ != generation) {  // streams of a replaced device
      spareStreams_.clear();
      poolGeneration_ = generation;
    }
    if (!spareStreams_.empty()) {
      m2v::Stream stream = std::move(spareStreams_.back());
      spareStreams_.pop_back();
      return stream;
    }
  }
  m2v::StreamOptions options;
  options.explicitBarriers = true;
  options.batchSize = UINT32_MAX;  // nothing runs before commit, as in Metal
  options.timestamps = profiling() && device->runtime()->info().timestampPeriodNs != 0;
  return device->runtime()->createStream(options);
}

void QueueCore::returnStream(m2v::Stream stream, uint64_t generation) {
  if (generation != device->generation()) return;  // its device was replaced
  std::lock_guard lock(poolMutex_);
  if (generation == poolGeneration_) spareStreams_.push_back(std::move(stream));
}

size_t QueueCore::submitSegments(CommandBufferImpl* buffer, size_t first) {
  for (size_t i = first; i < buffer->segments.size(); ++i) {
    CommandBufferImpl::Segment& segment = buffer->segments[i];
    try {
      if (!buffer->failed())  // a failing command buffer waits for nothing more
        for (const auto& [event, value] : segment.waits) {
          if (event->generation != device->generation())
            throw m2v::UsageError("encodeWait: the event cannot be waited on: " +
                                  device->staleReason(event->generation));
          if (event->event.value() < value) return i;
        }
      std::vector<m2v::Stream::EventSignal> signals, waits;
      // A failed command buffer signals nothing, as in Metal: a waiter must not read what it did not write.
      if (!buffer->failed())
        for (const auto& [event, value] : segment.signals) signals.push_back({event->event, value});
      // Met on the host already; waiting on the GPU as well gives the memory dependency on the signalling work.
      if (!buffer->failed())
        for (const auto& [event, value] : segment.waits) waits.push_back({event->event, value});
      if (!buffer->failed())
        if (auto uploaded = uploadCpuWrites(buffer, i)) waits.push_back(*uploaded);
      if (!segment.stream && !(signals.empty() && waits.empty()))
        segment.stream = takeStream(&segment.streamGeneration);  // an empty submission signals
      for (const auto& [event, value] : segment.signals)
        if (!buffer->failed() && event->generation != segment.streamGeneration)
          throw m2v::UsageError("encodeSignalEvent: the event cannot be signalled: " +
                                device->staleReason(event->generation));
      if (segment.stream) {
        const uint64_t value = segment.stream->commit(signals, waits);
        std::lock_guard lock(buffer->mutex);  // segmentCompleted reads it
        segment.value = value;
      }
    } catch (const std::exception& e) {
      buffer->fail(currentErrorCode(), std::string("submission failed: ") + e.what());
    }
  }
  {
    std::lock_guard lock(buffer->mutex);
    buffer->status = MTL::CommandBufferStatusScheduled;
    buffer->scheduledSignalled = true;
  }
  buffer->done.notify_all();
  return buffer->segments.size();
}

void QueueCore::commit(CommandBufferImpl* buffer) {
  buffer->retain();  // until retired by the completion thread
  buffer->startTime = nowSeconds();
  buffer->forEachSignalAwaitingHandlers([](SharedEventImpl& event, uint64_t value) { event.expectHandlers(value); });
  std::lock_guard lock(submitMutex_);
  size_t next = 0;
  if (toSubmit_.empty() && !submitting_) {
    next = submitSegments(buffer, 0);
    if (next == buffer->segments.size()) {
      retire(buffer);
      return;
    }
  }
  toSubmit_.emplace_back(buffer, next);
  if (!submitter_.joinable()) submitter_ = std::thread([this] { submissionLoop(); });
  submitReady_.notify_one();
}

void QueueCore::submissionLoop() {
  std::unique_lock lock(submitMutex_);
  while (true) {
    submitReady_.wait(lock, [&] { return stopSubmitting_ || !toSubmit_.empty(); });
    if (stopSubmitting_) return;
    auto [buffer, next] = toSubmit_.front();
    submitting_ = true;
    lock.unlock();
    bool stopped = false;
    if (next < buffer->segments.size()) {
      for (const auto& [event, value] : buffer->segments[next].waits) {
        if (buffer->failed() || event->generation != device->generation()) break;  // submitSegments reports it
        try {
          while (!event->event.wait(value, kEventPollNs)) {
            std::lock_guard check(submitMutex_);
            if (stopSubmitting_) {
              stopped = true;
              break;
            }
          }
        } catch (const std::exception& e) {
          buffer->fail(currentErrorCode(), std::string("waiting for an event failed: ") + e.what());
        }
        if (stopped) break;
      }
    }
    lock.lock();
    if (stopped) return;
    next = submitSegments(buffer, next);
    if (next == buffer->segments.size()) {
      toSubmit_.pop_front();
      submitting_ = false;
      retire(buffer);
    } else {
      toSubmit_.front().second = next;
    }
  }
}

void QueueCore::retire(CommandBufferImpl* buffer) {
  std::lock_guard lock(completeMutex_);
  toComplete_.push_back(buffer);
  if (!completer_.joinable()) completer_ = std::thread([this] { completionLoop(); });
  completeReady_.notify_one();
}

void QueueCore::completionLoop() {
  std::unique_lock lock(completeMutex_);
  while (true) {
    completeReady_.wait(lock, [&] { return stopCompleting_ || !toComplete_.empty(); });
    if (toComplete_.empty()) return;
    CommandBufferImpl* buffer = toComplete_.front();
    toComplete_.pop_front();
    lock.unlock();
    bool streamsUsable = true;
    std::vector<m2v::DispatchTiming> timings;
    for (auto& segment : buffer->segments) {
      if (segment.stream && !segment.value) streamsUsable = false;  // its commit failed: it may hold commands
      if (!segment.stream || !segment.value) continue;
      try {
        segment.stream->wait(segment.value);
        if (profiling())
          for (m2v::DispatchTiming& t : segment.stream->takeTimings()) timings.push_back(std::move(t));
      } catch (const std::exception& e) {
        buffer->fail(currentErrorCode(), std::string("the GPU did not complete the command buffer: ") + e.what());
        streamsUsable = false;
      }
    }
    completeWritebacks(buffer);
    recordTimings(timings);
    buffer->endTime = nowSeconds();
    if (buffer->failed()) {
      buffer->error = NS::TransferPtr(newError(kCommandBufferErrorDomain, buffer->failureCode, buffer->failure));
      buffer->status = MTL::CommandBufferStatusError;
    } else {
      buffer->status = MTL::CommandBufferStatusCompleted;
    }
    std::vector<MTL::HandlerFunction> scheduled, completed;
    {
      std::lock_guard handlers(buffer->mutex);
      buffer->handlersTaken = true;
      scheduled = std::move(buffer->scheduledHandlers);
      completed = std::move(buffer->completedHandlers);
    }
    {
      // Handlers run inside a pool, as Metal's do: what they autorelease is freed after them.
      auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
      runningHandlers = true;
      runHandlers(buffer, scheduled);
      runHandlers(buffer, completed);
      runningHandlers = false;
    }
    buffer->forEachSignalAwaitingHandlers([](SharedEventImpl& event, uint64_t value) { event.handlersRan(value); });
    for (auto& segment : buffer->segments)
      if (segment.stream) {
        if (streamsUsable) returnStream(std::move(*segment.stream), segment.streamGeneration);
        segment.stream.reset();
      }
    buffer->kept.clear();
    {
      std::lock_guard done(buffer->mutex);
      buffer->completedSignalled = true;
    }
    if (std::exchange(buffer->holdsSlot, false)) releaseSlot();
    buffer->done.notify_all();
    buffer->release();
    lock.lock();
  }
}

void SharedEventImpl::expectHandlers(uint64_t value) {
  std::lock_guard lock(handlersMutex_);
  signalsAwaitingHandlers_.insert(value);
}

void SharedEventImpl::handlersRan(uint64_t value) {
  {
    std::lock_guard lock(handlersMutex_);
    if (auto it = signalsAwaitingHandlers_.find(value); it != signalsAwaitingHandlers_.end())
      signalsAwaitingHandlers_.erase(it);
  }
  handlersDone_.notify_all();
}

uint64_t SharedEventImpl::settled(uint64_t signalled) {
  std::lock_guard lock(handlersMutex_);
  if (signalsAwaitingHandlers_.empty() || *signalsAwaitingHandlers_.begin() > signalled) return signalled;
  const uint64_t awaiting = *signalsAwaitingHandlers_.begin();
  return awaiting ? awaiting - 1 : 0;
}

bool CommandBufferImpl::segmentCompleted(size_t index) {
  const Segment& segment = segments[index];
  return segment.stream && segment.value && segment.stream->completedValue() >= segment.value;
}

bool SharedEventImpl::waitForHandlers(uint64_t value, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(handlersMutex_);
  auto done = [&] { return signalsAwaitingHandlers_.empty() || *signalsAwaitingHandlers_.begin() > value; };
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    handlersDone_.wait(lock, done);
    return true;
  }
  return handlersDone_.wait_until(lock, deadline, done);
}

}  // namespace m2v::metal

using namespace m2v::metal;

namespace MTL {

// --- CommandQueue ---
Device* CommandQueue::device() const { return impl<const CommandQueueImpl>(this)->core->device.get(); }
NS::String* CommandQueue::label() const { return impl<const CommandQueueImpl>(this)->label.get(); }
void CommandQueue::setLabel(const NS::String* label) { impl<CommandQueueImpl>(this)->label.set(label); }
static CommandBuffer* newCommandBuffer(CommandQueueImpl* queue, bool retained) {
  queue->core->acquireSlot();
  auto* buffer = new CommandBufferImpl;
  buffer->queue = queue->core;
  buffer->queueObject = queue;
  buffer->holdsSlot = true;
  buffer->retainsReferences = retained;
  return buffer->autorelease();
}
CommandBuffer* CommandQueue::commandBuffer() { return newCommandBuffer(impl<CommandQueueImpl>(this), true); }
CommandBuffer* CommandQueue::commandBufferWithUnretainedReferences() {
  return newCommandBuffer(impl<CommandQueueImpl>(this), false);
}
void CommandQueue::addResidencySet(const ResidencySet* set) { addResidencySets(&set, 1); }
void CommandQueue::addResidencySets(const ResidencySet* const sets[], NS::UInteger count) {
  auto& list = impl<CommandQueueImpl>(this)->residencySets;
  list.insert(list.end(), sets, sets + count);
}
void CommandQueue::removeResidencySet(const ResidencySet* set) { removeResidencySets(&set, 1); }
void CommandQueue::removeResidencySets(const ResidencySet* const sets[], NS::UInteger count) {
  auto& list = impl<CommandQueueImpl>(this)->residencySets;
  for (NS::UInteger i = 0; i < count; ++i) std::erase(list, sets[i]);
}
void CommandQueue::insertDebugCaptureBoundary() {}

// --- CommandBuffer ---
Device* CommandBuffer::device() const { return impl<const CommandBufferImpl>(this)->queue->device.get(); }
CommandQueue* CommandBuffer::commandQueue() const { return impl<const CommandBufferImpl>(this)->queueObject; }
bool CommandBuffer::retainedReferences() const { return impl<const CommandBufferImpl>(this)->retainsReferences; }
NS::String* CommandBuffer::label() const { return impl<const CommandBufferImpl>(this)->label.get(); }
void CommandBuffer::setLabel(const NS::String* label) { impl<CommandBufferImpl>(this)->label.set(label); }
CommandBufferStatus CommandBuffer::status() const { return impl<const CommandBufferImpl>(this)->status.load(); }
NS::Error* CommandBuffer::error() const {
  auto* b = impl<const CommandBufferImpl>(this);
  return b->status.load() == CommandBufferStatusError ? b->error.get() : nullptr;
}
double CommandBuffer::GPUStartTime() const { return impl<const CommandBufferImpl>(this)->startTime; }
double CommandBuffer::GPUEndTime() const { return impl<const CommandBufferImpl>(this)->endTime; }

ComputeCommandEncoder* CommandBuffer::computeCommandEncoder() { return computeCommandEncoder(DispatchTypeSerial); }
ComputeCommandEncoder* CommandBuffer::computeCommandEncoder(DispatchType dispatchType) {
  auto* b = impl<CommandBufferImpl>(this);
  if (b->openEncoder || b->status.load() != CommandBufferStatusNotEnqueued) return nullptr;
  auto* encoder = new ComputeCommandEncoderImpl;
  encoder->commandBuffer = NS::RetainPtr(b);
  encoder->dispatchType = dispatchType;
  b->openEncoder = NS::RetainPtr(encoder);
  return encoder->autorelease();
}

void CommandBuffer::encodeSignalEvent(const Event* event, uint64_t value) {
  auto* b = impl<CommandBufferImpl>(this);
  auto* e = impl<SharedEventImpl>(static_cast<const SharedEvent*>(event));
  std::lock_guard lock(b->mutex);  // a host mirror's write-back may be asked for on another thread
  b->segments.back().signals.emplace_back(NS::RetainPtr(e), value);
  b->segments.emplace_back();  // what is encoded next runs after the signal
}

void CommandBuffer::encodeWait(const Event* event, uint64_t value) {
  auto* b = impl<CommandBufferImpl>(this);
  auto* e = impl<SharedEventImpl>(static_cast<const SharedEvent*>(event));
  std::lock_guard lock(b->mutex);
  if (b->segments.back().stream || !b->segments.back().signals.empty()) b->segments.emplace_back();
  b->segments.back().waits.emplace_back(NS::RetainPtr(e), value);
}

void CommandBuffer::useResidencySet(const ResidencySet*) {}
void CommandBuffer::useResidencySets(const ResidencySet* const[], NS::UInteger) {}

// Metal requires handlers to be added before commit. One added later still runs: at once on the calling thread if
// the command buffer has completed, else with the others.
void CommandBuffer::addScheduledHandler(const HandlerFunction& handler) {
  auto* b = impl<CommandBufferImpl>(this);
  std::unique_lock lock(b->mutex);
  if (!b->handlersTaken) return b->scheduledHandlers.push_back(handler);
  lock.unlock();
  handler(this);
}
void CommandBuffer::addCompletedHandler(const HandlerFunction& handler) {
  auto* b = impl<CommandBufferImpl>(this);
  std::unique_lock lock(b->mutex);
  if (!b->handlersTaken) return b->completedHandlers.push_back(handler);
  lock.unlock();
  handler(this);
}
void CommandBuffer::enqueue() {
  auto* b = impl<CommandBufferImpl>(this);
  if (b->status.load() == CommandBufferStatusNotEnqueued) b->status = CommandBufferStatusEnqueued;
}
void CommandBuffer::commit() {
  auto* b = impl<CommandBufferImpl>(this);
  CommandBufferStatus s = b->status.load();
  if (s != CommandBufferStatusNotEnqueued && s != CommandBufferStatusEnqueued) return;  // committed once only
  if (b->openEncoder) {
    b->fail(CommandBufferErrorInternal, "committed while a compute encoder was still open (endEncoding missing)");
    b->openEncoder->endEncoding();
  }
  {
    std::lock_guard lock(b->mutex);  // host mirrors ask uncommitted command buffers only for write-backs
    b->status = CommandBufferStatusCommitted;
  }
  try {
    recordWritebacks(b);
  } catch (const std::exception& e) {
    b->fail(CommandBufferErrorInternal, std::string("encoding failed: ") + e.what());
  }
  statisticsCounters().commandBuffersCommitted.fetch_add(1, std::memory_order_relaxed);
  b->queue->commit(b);
}
void CommandBuffer::waitUntilScheduled() {
  auto* b = impl<CommandBufferImpl>(this);
  if (b->status.load() < CommandBufferStatusCommitted) return;
  std::unique_lock lock(b->mutex);
  b->done.wait(lock, [&] { return b->scheduledSignalled || b->completedSignalled; });
}
void CommandBuffer::waitUntilCompleted() {
  auto* b = impl<CommandBufferImpl>(this);
  if (b->status.load() < CommandBufferStatusCommitted) return;  // never committed: Metal would wait forever
  std::unique_lock lock(b->mutex);
  b->done.wait(lock, [&] { return b->completedSignalled; });
}
void CommandBuffer::pushDebugGroup(const NS::String*) {}
void CommandBuffer::popDebugGroup() {}

// --- CommandEncoder / ComputeCommandEncoder ---
Device* CommandEncoder::device() const {
  return impl<const ComputeCommandEncoderImpl>(static_cast<const ComputeCommandEncoder*>(this))
      ->commandBuffer->queue->device.get();
}
NS::String* CommandEncoder::label() const {
  return impl<const ComputeCommandEncoderImpl>(static_cast<const ComputeCommandEncoder*>(this))->label.get();
}
void CommandEncoder::setLabel(const NS::String* label) {
  impl<ComputeCommandEncoderImpl>(static_cast<ComputeCommandEncoder*>(this))->label.set(label);
}
void CommandEncoder::insertDebugSignpost(const NS::String*) {}
void CommandEncoder::pushDebugGroup(const NS::String*) {}
void CommandEncoder::popDebugGroup() {}

void CommandEncoder::endEncoding() {
  auto* e = impl<ComputeCommandEncoderImpl>(static_cast<ComputeCommandEncoder*>(this));
  if (e->ended) return;
  e->ended = true;
  CommandBufferImpl* b = e->commandBuffer.get();
  if (!b->failed() && !e->commands.empty()) {
    try {
      const uint64_t generation = b->queue->device->generation();
      m2v::Stream& stream = b->ensureStream();
      stream.clearBindings();  // the stream may come from an earlier encoder: nothing stays bound
      if (e->waitsForFence) stream.barrier();  // Metal waits for fences before any command of the encoder
      std::vector<std::pair<uint32_t, uint32_t>> threadgroupLengths;  // encoder state, kept across pipelines
      const bool serial = e->dispatchType == DispatchTypeSerial;
      const void* currentPipeline = nullptr;  // setting the same pipeline again changes nothing: skip the lookup
      m2v::Kernel kernel;
      std::vector<BufferImpl*> mirrored;  // by index: bound buffers with a host mirror
      for (const EncodedCommand& c : e->commands) {
        switch (c.op) {
          case EncodedCommand::Op::Pipeline: {
            if (c.object == currentPipeline) break;
            currentPipeline = c.object;
            auto* p = static_cast<const ComputePipelineStateImpl*>(c.object);
            kernel = p->kernel();
            stream.setKernel(kernel);
            for (const auto& [index, value] : p->function->constants) {
              switch (value.kind) {
                case ConstantSetting::Kind::Bool: stream.setFunctionConstant(index, value.i != 0); break;
                case ConstantSetting::Kind::Int:
                case ConstantSetting::Kind::UInt: stream.setFunctionConstant(index, value.i); break;
                case ConstantSetting::Kind::Float: stream.setFunctionConstant(index, value.f); break;
              }
            }
            for (const auto& [index, length] : threadgroupLengths) stream.setThreadgroupMemoryLength(length, index);
            break;
          }
          case EncodedCommand::Op::Buffer: {
            auto* buffer = static_cast<const BufferImpl*>(c.object);
            if (buffer && buffer->generation != generation)
              throw m2v::UsageError("buffer(" + std::to_string(c.index) + ") cannot be used: " +
                                    buffer->device->staleReason(buffer->generation));
            if (buffer)
              stream.setBuffer(buffer->backing, buffer->offset + c.offset, c.index);
            else
              stream.setBuffer(m2v::Buffer(), 0, c.index);
            if (buffer && buffer->mirror) {
              if (mirrored.size() <= c.index) mirrored.resize(c.index + 1);
              mirrored[c.index] = const_cast<BufferImpl*>(buffer);
            } else if (c.index < mirrored.size()) {
              mirrored[c.index] = nullptr;
            }
            break;
          }
          case EncodedCommand::Op::Bytes: {
            if (c.index < mirrored.size()) mirrored[c.index] = nullptr;
            // Metal accepts zero bytes (MLX passes empty shape vectors for scalars); the kernel still gets a valid
            // address, of zeros it never reads.
            static const uint32_t kZeros[4] = {0, 0, 0, 0};
            if (c.length == 0)
              stream.setBytes(kZeros, sizeof kZeros, c.index);
            else
              stream.setBytes(e->bytes.data() + c.offset, c.length, c.index);
            break;
          }
          case EncodedCommand::Op::ThreadgroupMemory: {
            std::erase_if(threadgroupLengths, [&](const auto& l) { return l.first == c.index; });
            threadgroupLengths.emplace_back(c.index, uint32_t(c.offset));
            stream.setThreadgroupMemoryLength(uint32_t(c.offset), c.index);
            break;
          }
          case EncodedCommand::Op::DispatchThreads:
          case EncodedCommand::Op::DispatchThreadgroups:
            // A stream from the pool still holds the kernel of an earlier encoder: Metal starts with none.
            if (!currentPipeline) throw m2v::UsageError("dispatch before setComputePipelineState");
            for (uint32_t index = 0; index < mirrored.size(); ++index)
              if (mirrored[index]) recordUse(b, stream, mirrored[index], kernel.mayWriteBuffer(index));
            if (c.op == EncodedCommand::Op::DispatchThreads)
              stream.dispatchThreads(c.a, c.b);
            else
              stream.dispatchThreadgroups(c.a, c.b);
            statisticsCounters().dispatches.fetch_add(1, std::memory_order_relaxed);
            if (serial) {
              stream.barrier();
              statisticsCounters().barriers.fetch_add(1, std::memory_order_relaxed);
            }
            break;
          case EncodedCommand::Op::Barrier:
            stream.barrier();
            statisticsCounters().barriers.fetch_add(1, std::memory_order_relaxed);
            break;
        }
      }
      // Nor does anything stay bound after it: a buffer goes (and a no-copy buffer's deallocator runs) once the
      // command buffers that used it are done, not when the stream next binds another.
      stream.clearBindings();
    } catch (const std::exception& ex) {
      b->fail(CommandBufferErrorInternal, std::string("encoding failed: ") + ex.what());
    }
  }
  e->commands.clear();
  e->bytes.clear();
  if (b->retainsReferences)
    for (auto& object : e->kept) b->kept.push_back(std::move(object));
  e->kept.clear();
  // Dropping the command buffer's reference may free this encoder: keep it alive until the function returns.
  NS::SharedPtr<ComputeCommandEncoderImpl> self = std::move(b->openEncoder);
  NS::SharedPtr<CommandBufferImpl> buffer = std::move(e->commandBuffer);
}

static ComputeCommandEncoderImpl* encoderOf(ComputeCommandEncoder* e) { return impl<ComputeCommandEncoderImpl>(e); }

static void push(ComputeCommandEncoderImpl* e, EncodedCommand command) {
  if (!e->ended) e->commands.push_back(command);
}

DispatchType ComputeCommandEncoder::dispatchType() const {
  return impl<const ComputeCommandEncoderImpl>(this)->dispatchType;
}
void ComputeCommandEncoder::setComputePipelineState(const ComputePipelineState* state) {
  auto* e = encoderOf(this);
  if (!state) return;
  if (e->kept.empty() || e->kept.back().get() != static_cast<const NS::Object*>(state))  // alive until recorded
    e->kept.push_back(NS::RetainPtr(static_cast<NS::Object*>(const_cast<ComputePipelineState*>(state))));
  push(e, {EncodedCommand::Op::Pipeline, 0, impl<const ComputePipelineStateImpl>(state)});
}
void ComputeCommandEncoder::setBytes(const void* bytes, NS::UInteger length, NS::UInteger index) {
  auto* e = encoderOf(this);
  EncodedCommand c{EncodedCommand::Op::Bytes, uint32_t(index)};
  c.offset = e->bytes.size();
  c.length = length;
  e->bytes.insert(e->bytes.end(), static_cast<const uint8_t*>(bytes), static_cast<const uint8_t*>(bytes) + length);
  push(e, c);
}
void ComputeCommandEncoder::setBuffer(const Buffer* buffer, NS::UInteger offset, NS::UInteger index) {
  auto* e = encoderOf(this);
  const BufferImpl* b = buffer ? impl<const BufferImpl>(buffer) : nullptr;
  if (b && e->commandBuffer && e->commandBuffer->retainsReferences)
    e->kept.push_back(NS::RetainPtr(static_cast<NS::Object*>(const_cast<Buffer*>(buffer))));
  if (e->boundBuffers.size() <= index) e->boundBuffers.resize(index + 1);
  e->boundBuffers[index] = {b, offset};
  EncodedCommand c{EncodedCommand::Op::Buffer, uint32_t(index), b};
  c.offset = offset;
  push(e, c);
}
void ComputeCommandEncoder::setBufferOffset(NS::UInteger offset, NS::UInteger index) {
  auto* e = encoderOf(this);
  const void* b = index < e->boundBuffers.size() ? e->boundBuffers[index].first : nullptr;
  e->boundBuffers.resize(std::max<size_t>(e->boundBuffers.size(), index + 1));
  e->boundBuffers[index].second = offset;
  EncodedCommand c{EncodedCommand::Op::Buffer, uint32_t(index), b};
  c.offset = offset;
  push(e, c);
}
void ComputeCommandEncoder::setBuffers(const Buffer* const buffers[], const NS::UInteger offsets[], NS::Range range) {
  for (NS::UInteger i = 0; i < range.length; ++i) setBuffer(buffers[i], offsets[i], range.location + i);
}
void ComputeCommandEncoder::setThreadgroupMemoryLength(NS::UInteger length, NS::UInteger index) {
  EncodedCommand c{EncodedCommand::Op::ThreadgroupMemory, uint32_t(index)};
  c.offset = length;
  push(encoderOf(this), c);
}
static m2v::Size3 size3(const Size& s) { return {uint32_t(s.width), uint32_t(s.height), uint32_t(s.depth)}; }
void ComputeCommandEncoder::dispatchThreadgroups(Size groups, Size threadsPerThreadgroup) {
  EncodedCommand c{EncodedCommand::Op::DispatchThreadgroups};
  c.a = size3(groups);
  c.b = size3(threadsPerThreadgroup);
  push(encoderOf(this), c);
}
void ComputeCommandEncoder::dispatchThreads(Size threads, Size threadsPerThreadgroup) {
  EncodedCommand c{EncodedCommand::Op::DispatchThreads};
  c.a = size3(threads);
  c.b = size3(threadsPerThreadgroup);
  push(encoderOf(this), c);
}
// Fences order encoders of one queue; every queue of a device submits to the same Vulkan queue, where a barrier
// orders everything submitted before it. So an update needs nothing and a wait is a barrier at the encoder's start.
void ComputeCommandEncoder::updateFence(const Fence*) {}
void ComputeCommandEncoder::waitForFence(const Fence* fence) {
  if (fence) encoderOf(this)->waitsForFence = true;
}
void ComputeCommandEncoder::useResource(const Resource*, ResourceUsage) {}
void ComputeCommandEncoder::useResources(const Resource* const[], NS::UInteger, ResourceUsage) {}
void ComputeCommandEncoder::useHeap(const Heap*) {}
void ComputeCommandEncoder::useHeaps(const Heap* const[], NS::UInteger) {}
void ComputeCommandEncoder::memoryBarrier(BarrierScope scope) {
  if (scope & BarrierScopeBuffers) push(encoderOf(this), {EncodedCommand::Op::Barrier});
}
void ComputeCommandEncoder::memoryBarrier(const Resource* const[], NS::UInteger count) {
  if (count) push(encoderOf(this), {EncodedCommand::Op::Barrier});
}

// --- Fence ---
Device* Fence::device() const { return impl<const FenceImpl>(this)->device.get(); }
NS::String* Fence::label() const { return impl<const FenceImpl>(this)->label.get(); }
void Fence::setLabel(const NS::String* label) { impl<FenceImpl>(this)->label.set(label); }

// --- Event / SharedEvent ---
static SharedEventImpl* eventOf(const Event* e) { return impl<SharedEventImpl>(static_cast<const SharedEvent*>(e)); }
Device* Event::device() const { return eventOf(this)->device.get(); }
NS::String* Event::label() const { return eventOf(this)->label.get(); }
void Event::setLabel(const NS::String* label) { eventOf(this)->label.set(label); }
uint64_t SharedEvent::signaledValue() const {
  try {
    return eventOf(this)->settled(eventOf(this)->event.value());
  } catch (const std::exception&) {
    return 0;
  }
}
void SharedEvent::setSignaledValue(uint64_t value) {
  try {
    eventOf(this)->event.signal(value);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[metal2vk] SharedEvent::setSignaledValue: %s\n", e.what());
  }
}
bool SharedEvent::waitUntilSignaledValue(uint64_t value, uint64_t milliseconds) {
  uint64_t ns = milliseconds >= UINT64_MAX / 1000000 ? UINT64_MAX : milliseconds * 1000000;
  auto deadline = ns >= uint64_t(std::chrono::nanoseconds::max().count()) / 2
                      ? std::chrono::steady_clock::time_point::max()
                      : std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  try {
    if (!eventOf(this)->event.wait(value, ns)) return false;
  } catch (const std::exception&) {
    return false;
  }
  return runningHandlers || eventOf(this)->waitForHandlers(value, deadline);
}

}  // namespace MTL
