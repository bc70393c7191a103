// Host mirrors of shared buffers on GPUs whose shared memory the CPU reads uncached (docs/METAL_API.md, "Host
// mirrors": the rules and why).
//
// MLX reads and writes every array through MTLBuffer::contents(). Where shared memory is a discrete GPU's PCIe BAR,
// the CPU reads it uncached (28 MB/s on the H200), so a mirrored buffer keeps its data in device-local memory for
// the GPU and hands the CPU a host-cached copy, with copies where Metal's rules need them:
//  - GPU writes reach the host copy before the CPU may read them: a dispatch that may write the buffer marks the
//    host copy stale; contents() then asks the writer for a write-back, at the end of the writer's segment when its
//    command buffer is not committed yet, on its completion thread (before its handlers) when it is in flight, at
//    once when it has finished. contents() never waits for the GPU.
//  - CPU writes reach the next GPU use: contents() means the CPU may write; the next dispatch that binds the buffer
//    uploads the host copy first. Not in the segment whose write-back contents() asked for: that upload would run
//    before the write-back and overwrite the GPU's data with the older host copy.
// Buffers the CPU never touches cost nothing: the host copy is made at the first contents().
#include <cstdio>

#include "objects.h"

namespace m2v::metal {

namespace {

// A write-back: the device copy of `buffer` to its host mirror, recorded into `stream`.
void recordWriteback(m2v::Stream& stream, const BufferImpl& buffer) {
  stream.copy(buffer.backing, 0, buffer.mirror->host, 0, buffer.length);
}

}  // namespace

m2v::Stream& DeviceImpl::transferStream() {
  if (!transfer_ || transferGeneration_ != generation()) {
    std::shared_ptr<m2v::Device> device = runtime();
    m2v::StreamOptions options;
    options.explicitBarriers = true;  // one barrier before the copies; commit adds the one for host reads
    transfer_ = device->createStream(options);
    transferGeneration_ = generation();
    uploadsDone_ = device->createEvent();
    uploadsSignalled_ = 0;
  }
  return *transfer_;
}

void DeviceImpl::writeBackNow(const std::vector<NS::SharedPtr<BufferImpl>>& buffers) {
  if (buffers.empty()) return;
  std::lock_guard lock(transferMutex_);
  m2v::Stream& transfer = transferStream();
  transfer.barrier();  // after the writers' submissions
  for (const NS::SharedPtr<BufferImpl>& buffer : buffers) recordWriteback(transfer, *buffer.get());
  transfer.synchronize();
}

m2v::Stream::EventSignal DeviceImpl::uploadNow(const std::vector<NS::SharedPtr<BufferImpl>>& buffers) {
  std::lock_guard lock(transferMutex_);
  m2v::Stream& transfer = transferStream();
  transfer.barrier();  // after the GPU's earlier uses of the device copies (submitted before)
  for (const NS::SharedPtr<BufferImpl>& buffer : buffers)
    transfer.copy(buffer->mirror->host, 0, buffer->backing, 0, buffer->length);
  m2v::Stream::EventSignal done{uploadsDone_, ++uploadsSignalled_};
  transfer.commit(std::span(&done, 1));
  return done;
}

namespace {

void writeBackOrReport(BufferImpl* buffer) {
  try {
    buffer->device->writeBackNow({NS::RetainPtr(buffer)});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[metal2vk] contents(): the GPU's writes could not be copied to the host: %s\n", e.what());
  }
}

}  // namespace

void* mirroredContents(BufferImpl* buffer) {
  HostMirror& m = *buffer->mirror;
  std::lock_guard lock(m.mutex);
  if (!m.host && !m.orphan) {
    if (buffer->generation == buffer->device->generation()) {
      m.host = buffer->device->runtime()->createBuffer(buffer->length, m2v::Device::Memory::HostCached);
    } else {  // its device was replaced: what the GPU held is gone; the CPU still gets memory of the right size
      m.orphan = std::make_unique<uint8_t[]>(buffer->length);
      m.hostStale = false;
    }
  }
  if (m.hostStale) {
    CommandBufferImpl* writer = m.writer.get();
    bool copyNow = false;
    {
      std::lock_guard writerLock(writer->mutex);
      if (writer->status.load() < MTL::CommandBufferStatusCommitted) {
        auto& pending = writer->segments[m.writerSegment].writebacks;
        if (pending.empty() || pending.back().get() != buffer) pending.push_back(NS::RetainPtr(buffer));
        m.writebackCommandBuffer = writer->serial;
        m.writebackSegment = m.writerSegment;
      } else if (writer->completionWritebacksClosed || writer->segmentCompleted(m.writerSegment)) {
        // The GPU has finished the writer, or the writing segment of it: a later segment may wait for this very
        // CPU task (MLX's CPU stream between two GPU operations of one command buffer).
        copyNow = true;
      } else {
        writer->completionWritebacks.push_back(NS::RetainPtr(buffer));
      }
    }
    if (copyNow) writeBackOrReport(buffer);
    m.hostStale = false;
    m.writer.reset();
  }
  m.hostMayBeNewer = true;
  return m.host ? m.host.contents() : m.orphan.get();
}

namespace {

// Whether segment `segment` of `commandBuffer` must upload the host copy before it uses the buffer (under m.mutex):
// the CPU may have written it since the last upload, except in the segment whose write-back contents() asked for.
bool uploadsHostCopy(const HostMirror& m, const CommandBufferImpl& commandBuffer, size_t segment) {
  const bool beforeWriteback = m.writebackCommandBuffer == commandBuffer.serial && m.writebackSegment == segment;
  return m.hostMayBeNewer && m.host && !beforeWriteback;
}

}  // namespace

void recordUse(CommandBufferImpl* commandBuffer, m2v::Stream& stream, BufferImpl* buffer, bool writes) {
  HostMirror& m = *buffer->mirror;
  std::lock_guard lock(m.mutex);
  const size_t segment = commandBuffer->segments.size() - 1;
  if (uploadsHostCopy(m, *commandBuffer, segment)) {
    stream.barrier();  // after the GPU's earlier uses of the device copy
    stream.copy(m.host, 0, buffer->backing, 0, buffer->length);
    stream.barrier();
    m.hostMayBeNewer = false;
  }
  auto& uses = commandBuffer->segments[segment].mirroredUses;
  if (uses.empty() || uses.back().get() != buffer) uses.push_back(NS::RetainPtr(buffer));
  if (writes) {
    m.hostStale = true;
    if (m.writer.get() != commandBuffer) m.writer = NS::RetainPtr(commandBuffer);
    m.writerSegment = segment;
  }
}

std::optional<m2v::Stream::EventSignal> uploadCpuWrites(CommandBufferImpl* commandBuffer, size_t segment) {
  std::vector<NS::SharedPtr<BufferImpl>> uploads;
  for (const NS::SharedPtr<BufferImpl>& buffer : commandBuffer->segments[segment].mirroredUses) {
    HostMirror& m = *buffer->mirror;
    std::lock_guard lock(m.mutex);
    if (uploadsHostCopy(m, *commandBuffer, segment)) {
      uploads.push_back(buffer);
      m.hostMayBeNewer = false;
    }
  }
  if (uploads.empty()) return std::nullopt;
  return uploads.front()->device->uploadNow(uploads);
}

void recordWritebacks(CommandBufferImpl* commandBuffer) {
  for (CommandBufferImpl::Segment& segment : commandBuffer->segments) {
    if (segment.writebacks.empty() || !segment.stream) continue;
    segment.stream->barrier();
    for (const NS::SharedPtr<BufferImpl>& buffer : segment.writebacks) recordWriteback(*segment.stream, *buffer.get());
    segment.writebacks.clear();
  }
}

void completeWritebacks(CommandBufferImpl* commandBuffer) {
  std::vector<NS::SharedPtr<BufferImpl>> buffers;
  {
    std::lock_guard lock(commandBuffer->mutex);
    commandBuffer->completionWritebacksClosed = true;
    buffers = std::move(commandBuffer->completionWritebacks);
  }
  if (buffers.empty()) return;
  try {
    buffers.front()->device->writeBackNow(buffers);
  } catch (const std::exception& e) {
    commandBuffer->fail(MTL::CommandBufferErrorInternal,
                        std::string("copying the GPU's writes to host memory failed: ") + e.what());
  }
}

}  // namespace m2v::metal
