// A command buffer whose kernel never finishes: it reports a timeout, and what comes after runs on a new Vulkan
// device, while objects made before the failure make the command buffers that use them fail with a clear error.
// Runs with a short host wait budget (M2V_TIMEOUT_MS, set by CMake for this test).
#include <gtest/gtest.h>

#include <Metal/Metal.hpp>
#include <atomic>
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
)";

NS::String* str(const char* s) { return NS::String::string(s, NS::UTF8StringEncoding); }

std::string describe(MTL::CommandBuffer* cb) {
  return cb->error() ? cb->error()->localizedDescription()->utf8String() : "(no error)";
}

TEST(MetalRecovery, TimeoutFailsOneCommandBufferAndTheNextRunsOnANewDevice) {
  const char* budget = std::getenv("M2V_TIMEOUT_MS");
  ASSERT_TRUE(budget && std::atoi(budget) > 0 && std::atoi(budget) <= 10000)
      << "run with a short M2V_TIMEOUT_MS (the CMake test sets it): the kernel spins until the wait times out";
  auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
  auto device = NS::TransferPtr(MTL::CreateSystemDefaultDevice());
  ASSERT_TRUE(device);
  NS::Error* error = nullptr;
  auto library = NS::TransferPtr(device->newLibrary(str(kSource), nullptr, &error));
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
