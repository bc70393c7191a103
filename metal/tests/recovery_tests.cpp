// A command buffer whose kernel never finishes reports a timeout. Kernels built with abort checks (the default) are
// stopped: the device and everything made on it stay. Kernels built without them keep the GPU until the device is
// given up: what comes after runs on a new Vulkan device, while objects made before the failure make the command
// buffers that use them fail with a clear error. Runs with a short host wait budget (M2V_TIMEOUT_MS, set by CMake for
// this test).
#include <gtest/gtest.h>

#include <Metal/Metal.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char* kSource = R"(
#include <metal_stdlib>
using namespace metal;

// Spins until the host opens the gate (so that the device's work ends once the test is over). The store is a side
// effect that keeps the loop; llvmpipe caps each loop at 65535 iterations, so on lavapipe every invocation ends on
// its own and many invocations keep the device busy for minutes instead.
kernel void spin_until_released(volatile device uint* gate [[buffer(0)]], device uint* counter [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
  uint spins = 0u;
  while (gate[0] == 0u) counter[i] = ++spins;
}

kernel void fill_index(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] = float(i) * 2.0f;
}

// One thread of each threadgroup spins while the others wait at a barrier. (llvmpipe ends every loop of an invocation
// after 65535 trips, so on lavapipe it takes many threadgroups to outlast the budget.)
kernel void one_thread_loops(volatile device uint* gate [[buffer(0)]], device uint* counter [[buffer(1)]],
                             uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]]) {
  uint spins = 0u;
  if (t == 0u)
    while (gate[0] == 0u) counter[i] = ++spins;
  threadgroup_barrier(mem_flags::mem_device);
  counter[i] += 1u;
}

// Finite, but far past any budget: 2^32 - 1 rounds per thread (llvmpipe's cap still leaves minutes of work).
kernel void long_loop(device uint* out [[buffer(0)]], constant uint& rounds [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
  uint x = i;
  for (uint k = 0u; k < rounds; ++k) x = x * 1664525u + 1013904223u;
  out[i] = x;
}
)";

NS::String* str(const char* s) { return NS::String::string(s, NS::UTF8StringEncoding); }

std::string describe(MTL::CommandBuffer* cb) {
  return cb->error() ? cb->error()->localizedDescription()->utf8String() : "(no error)";
}

void requireShortBudget() {
  const char* budget = std::getenv("M2V_TIMEOUT_MS");
  ASSERT_TRUE(budget && std::atoi(budget) > 0 && std::atoi(budget) <= 10000)
      << "run with a short M2V_TIMEOUT_MS (the CMake test sets it): the kernel spins until the wait times out";
}

MTL::CommandBuffer* runOne(MTL::CommandQueue* queue, MTL::ComputePipelineState* pipeline,
                           std::initializer_list<MTL::Buffer*> buffers, uint32_t threads) {
  MTL::CommandBuffer* cb = queue->commandBuffer();
  auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(pipeline);
  NS::UInteger index = 0;
  for (MTL::Buffer* b : buffers) enc->setBuffer(b, 0, index++);
  enc->dispatchThreads(MTL::Size(threads, 1, 1), MTL::Size(64, 1, 1));
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  return cb;
}

// Kernels that do not end in time (a spin-wait on a flag never set, one thread per threadgroup spinning while the
// others wait at a barrier, a loop far too long), each stopped within the budget; the buffers, heap and event made
// before, and the pipelines, keep working on the same device.
TEST(MetalRecovery, AKernelThatNeverEndsIsStoppedAndTheDeviceKeepsItsMemory) {
  requireShortBudget();
  auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
  auto device = NS::TransferPtr(MTL::CreateSystemDefaultDevice());
  ASSERT_TRUE(device);
  NS::Error* error = nullptr;
  auto library = NS::TransferPtr(device->newLibrary(str(kSource), nullptr, &error));
  ASSERT_TRUE(library) << (error ? error->localizedDescription()->utf8String() : "");
  auto pipeline = [&](const char* name) {
    auto function = NS::TransferPtr(library->newFunction(str(name)));
    return NS::TransferPtr(device->newComputePipelineState(function.get(), &error));
  };
  auto spin = pipeline("spin_until_released"), fill = pipeline("fill_index");
  auto oneThread = pipeline("one_thread_loops"), longLoop = pipeline("long_loop");
  ASSERT_TRUE(spin && fill && oneThread && longLoop);
  auto queue = NS::TransferPtr(device->newCommandQueue());
  const uint32_t n = 256, spinners = 1u << 22;
  auto kept = NS::TransferPtr(device->newBuffer(n * sizeof(float), MTL::ResourceStorageModeShared));
  auto gate = NS::TransferPtr(device->newBuffer(4, MTL::ResourceStorageModeShared));
  auto counter = NS::TransferPtr(device->newBuffer(spinners * 4, MTL::ResourceStorageModePrivate));
  auto rounds = NS::TransferPtr(device->newBuffer(4, MTL::ResourceStorageModeShared));
  auto heapDescriptor = NS::TransferPtr(MTL::HeapDescriptor::alloc()->init());
  heapDescriptor->setSize(4096);
  auto heap = NS::TransferPtr(device->newHeap(heapDescriptor.get()));
  auto event = NS::TransferPtr(device->newSharedEvent());
  ASSERT_TRUE(kept && gate && counter && rounds && heap && event);
  ASSERT_EQ(runOne(queue.get(), fill.get(), {kept.get()}, n)->status(), MTL::CommandBufferStatusCompleted);
  std::memset(gate->contents(), 0, 4);
  *static_cast<uint32_t*>(rounds->contents()) = 0xffffffffu;

  const char* budget = std::getenv("M2V_TIMEOUT_MS");
  struct Case {
    const char* what;
    MTL::ComputePipelineState* pipeline;
    std::initializer_list<MTL::Buffer*> buffers;
    uint32_t threads;
    bool spinWait;  // the message names the loop that waits for other threads (reflection's spin_waits)
  };
  for (const Case& c :
       {Case{"a spin-wait on a flag never set", spin.get(), {gate.get(), counter.get()}, spinners, true},
        Case{"an endless loop in one thread per threadgroup",
             oneThread.get(),
             {gate.get(), counter.get()},
             spinners,
             true},
        Case{"a loop of 2^32 - 1 rounds in every thread",
             longLoop.get(),
             {counter.get(), rounds.get()},
             spinners,
             false}}) {
    SCOPED_TRACE(c.what);
    auto start = std::chrono::steady_clock::now();
    MTL::CommandBuffer* stuck = runOne(queue.get(), c.pipeline, c.buffers, c.threads);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(stuck->status(), MTL::CommandBufferStatusError);
    ASSERT_NE(stuck->error(), nullptr);
    EXPECT_EQ(stuck->error()->code(), MTL::CommandBufferErrorTimeout) << describe(stuck);
    EXPECT_NE(describe(stuck).find("were stopped"), std::string::npos) << describe(stuck);
    EXPECT_EQ(describe(stuck).find("waits for values other threads store (program_source:") != std::string::npos,
              c.spinWait)
        << describe(stuck);
    // Stopped within the budget and its grace (as long again), not after the kernel's own end.
    EXPECT_LT(seconds, 2.5 * std::atoi(budget) / 1000.0) << describe(stuck);

    // The buffer written before is intact, and the next command buffer runs on the same device.
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<float*>(kept->contents())[i], float(i) * 2.0f);
    std::memset(kept->contents(), 0, n * sizeof(float));
    MTL::CommandBuffer* next = runOne(queue.get(), fill.get(), {kept.get()}, n);
    ASSERT_EQ(next->status(), MTL::CommandBufferStatusCompleted) << describe(next);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<float*>(kept->contents())[i], float(i) * 2.0f);
  }
  auto fromHeap = NS::TransferPtr(heap->newBuffer(16, MTL::ResourceStorageModeShared));
  EXPECT_TRUE(fromHeap);
  MTL::CommandBuffer* signal = queue->commandBuffer();
  signal->encodeSignalEvent(event.get(), 1);
  signal->commit();
  signal->waitUntilCompleted();
  EXPECT_EQ(signal->status(), MTL::CommandBufferStatusCompleted) << describe(signal);
  EXPECT_EQ(event->signaledValue(), 1u);
}

// Without abort checks (M2V_ABORT_CHECKS=0 while the library compiles) the kernel cannot be stopped: the device is
// given up and replaced.
TEST(MetalRecovery, TimeoutWithoutAbortChecksFailsOneCommandBufferAndTheNextRunsOnANewDevice) {
  requireShortBudget();
  auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
  auto device = NS::TransferPtr(MTL::CreateSystemDefaultDevice());
  ASSERT_TRUE(device);
  NS::Error* error = nullptr;
  setenv("M2V_ABORT_CHECKS", "0", 1);
  auto library = NS::TransferPtr(device->newLibrary(str(kSource), nullptr, &error));
  unsetenv("M2V_ABORT_CHECKS");
  ASSERT_TRUE(library) << (error ? error->localizedDescription()->utf8String() : "");
  auto spinFunction = NS::TransferPtr(library->newFunction(str("spin_until_released")));
  auto fillFunction = NS::TransferPtr(library->newFunction(str("fill_index")));
  auto spin = NS::TransferPtr(device->newComputePipelineState(spinFunction.get(), &error));
  auto fill = NS::TransferPtr(device->newComputePipelineState(fillFunction.get(), &error));
  ASSERT_TRUE(spin && fill);
  auto queue = NS::TransferPtr(device->newCommandQueue());
  auto gate = NS::TransferPtr(device->newBuffer(4, MTL::ResourceStorageModeShared));
  const uint32_t spinners = 1u << 22;
  auto counter = NS::TransferPtr(device->newBuffer(spinners * 4, MTL::ResourceStorageModePrivate));
  auto oldBuffer = NS::TransferPtr(device->newBuffer(64, MTL::ResourceStorageModeShared));
  auto heapDescriptor = NS::TransferPtr(MTL::HeapDescriptor::alloc()->init());
  heapDescriptor->setSize(4096);
  auto heap = NS::TransferPtr(device->newHeap(heapDescriptor.get()));
  auto oldEvent = NS::TransferPtr(device->newSharedEvent());
  ASSERT_TRUE(gate && counter && oldBuffer && heap && oldEvent);
  std::memset(gate->contents(), 0, 4);

  MTL::CommandBuffer* stuck = queue->commandBuffer();
  auto* enc = stuck->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(spin.get());
  enc->setBuffer(gate.get(), 0, 0);
  enc->setBuffer(counter.get(), 0, 1);
  enc->dispatchThreads(MTL::Size(spinners, 1, 1), MTL::Size(256, 1, 1));
  enc->endEncoding();
  stuck->commit();
  stuck->waitUntilCompleted();
  // Let the spinning kernel end, so the old device's work finishes before the process does.
  reinterpret_cast<std::atomic<uint32_t>*>(gate->contents())->store(1);
  EXPECT_EQ(stuck->status(), MTL::CommandBufferStatusError);
  ASSERT_NE(stuck->error(), nullptr);
  EXPECT_EQ(stuck->error()->code(), MTL::CommandBufferErrorTimeout) << describe(stuck);
  EXPECT_NE(describe(stuck).find("did not finish"), std::string::npos) << describe(stuck);

  // A buffer made now lives on the new device; the pipeline made before the failure is made again there.
  const uint32_t n = 256;
  auto fresh = NS::TransferPtr(device->newBuffer(n * sizeof(float), MTL::ResourceStorageModeShared));
  ASSERT_TRUE(fresh);
  MTL::CommandBuffer* next = queue->commandBuffer();
  enc = next->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(fill.get());
  enc->setBuffer(fresh.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(64, 1, 1));
  enc->endEncoding();
  next->commit();
  next->waitUntilCompleted();
  ASSERT_EQ(next->status(), MTL::CommandBufferStatusCompleted) << describe(next);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<float*>(fresh->contents())[i], float(i) * 2.0f);

  // Objects of the failed device: a clear failure, never a silent result.
  MTL::CommandBuffer* stale = queue->commandBuffer();
  enc = stale->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(fill.get());
  enc->setBuffer(oldBuffer.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(16, 1, 1), MTL::Size(16, 1, 1));
  enc->endEncoding();
  stale->commit();
  stale->waitUntilCompleted();
  EXPECT_EQ(stale->status(), MTL::CommandBufferStatusError);
  EXPECT_NE(describe(stale).find("failed and was replaced"), std::string::npos) << describe(stale);
  EXPECT_EQ(heap->newBuffer(16, MTL::ResourceStorageModeShared), nullptr);
  MTL::CommandBuffer* signal = queue->commandBuffer();
  signal->encodeSignalEvent(oldEvent.get(), 1);
  signal->commit();
  signal->waitUntilCompleted();
  EXPECT_EQ(signal->status(), MTL::CommandBufferStatusError);
  EXPECT_NE(describe(signal).find("failed and was replaced"), std::string::npos) << describe(signal);
}

}  // namespace
