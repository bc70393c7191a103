// What the Metal API (metal/) needs of the runtime: shared (host-visible) buffers, explicit barriers, events
// (timeline semaphores), Metal's grid sizes. Kernels are the GLSL test kernels of runtime_tests.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "metal2vk/runtime.h"

using namespace m2v;

namespace {

Kernel loadIncrement(Device& device) {
  std::ifstream spv(std::string(M2V_TEST_SPV_DIR) + "/increment.spv", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(spv)), std::istreambuf_iterator<char>());
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  std::ifstream json(std::string(M2V_TEST_JSON_DIR) + "/increment.json");
  std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  return device.createKernel(words, *reflectionFromJson(text));
}

class SharedAndEvents : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& m : device_.validationMessages()) ADD_FAILURE() << "validation: " << m;
  }
  Device device_;
};

TEST_F(SharedAndEvents, SharedBufferIsMappedAndSeesKernelWrites) {
  const uint32_t n = 1000;
  Buffer shared = device_.createBuffer(n * 4, Device::Memory::Shared);
  ASSERT_NE(shared.contents(), nullptr);
  EXPECT_EQ(device_.createBuffer(16).contents(), nullptr);  // device-local: no mapping
  Device::SharedMemory where = device_.sharedMemory();
  EXPECT_GT(where.heapBytes, 0u);
  auto* values = static_cast<int32_t*>(shared.contents());
  for (uint32_t i = 0; i < n; ++i) values[i] = int32_t(i) - 500;
  StreamOptions options;
  options.explicitBarriers = true;
  Stream stream = device_.createStream(options);
  stream.setKernel(loadIncrement(device_));
  stream.setBuffer(shared, 0, 0);
  stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
  stream.synchronize();
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(values[i], (int32_t(i) - 500) * 3 + 1) << i;  // read in place
}

TEST_F(SharedAndEvents, ExplicitBarriersAreOnlyTheOnesAskedFor) {
  const uint32_t n = 256;
  Buffer shared = device_.createBuffer(n * 4, Device::Memory::Shared);
  auto* values = static_cast<int32_t*>(shared.contents());
  for (uint32_t i = 0; i < n; ++i) values[i] = int32_t(i);
  StreamOptions options;
  options.explicitBarriers = true;
  Stream stream = device_.createStream(options);
  stream.setKernel(loadIncrement(device_));
  stream.setBuffer(shared, 0, 0);
  stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
  stream.barrier();
  stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
  stream.synchronize();
  EXPECT_EQ(stream.stats().barriers, 1u);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(values[i], (int32_t(i) * 3 + 1) * 3 + 1) << i;
  // The same dependency without a barrier: the stream adds none (hazard tracking is off).
  stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
  stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
  stream.synchronize();
  EXPECT_EQ(stream.stats().barriers, 1u);
}

TEST_F(SharedAndEvents, ClearBindingsUnbindsEverything) {
  Stream stream = device_.createStream();
  stream.setKernel(loadIncrement(device_));
  stream.setBuffer(device_.createBuffer(64), 0, 0);
  stream.clearBindings();
  try {
    stream.dispatchThreads({16, 1, 1}, {16, 1, 1});
    FAIL() << "a dispatch with nothing bound must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not bound"), std::string::npos) << e.what();
  }
}

TEST_F(SharedAndEvents, EventsGrowAndAreSignalledBySubmissions) {
  Event event = device_.createEvent(5);
  EXPECT_EQ(event.value(), 5u);
  event.signal(3);  // never lowers
  EXPECT_EQ(event.value(), 5u);
  event.signal(7);
  EXPECT_EQ(event.value(), 7u);
  EXPECT_TRUE(event.wait(7, 0));
  EXPECT_FALSE(event.wait(8, 1000000));  // 1 ms

  Buffer shared = device_.createBuffer(64 * 4, Device::Memory::Shared);
  std::memset(shared.contents(), 0, 64 * 4);
  StreamOptions options;
  options.explicitBarriers = true;
  Stream stream = device_.createStream(options);
  stream.setKernel(loadIncrement(device_));
  stream.setBuffer(shared, 0, 0);
  stream.dispatchThreads({64, 1, 1}, {64, 1, 1});
  Event done = device_.createEvent();
  Stream::EventSignal signal{done, 9};
  uint64_t value = stream.commit(std::span(&signal, 1));
  EXPECT_TRUE(done.wait(9, 60'000'000'000ull));
  stream.wait(value);
  EXPECT_EQ(static_cast<int32_t*>(shared.contents())[63], 1);

  // A submission that waits (on the GPU) for a value already reached, and signals with no commands of its own.
  Stream other = device_.createStream(options);
  Stream::EventSignal wait{done, 9}, next{done, 10};
  uint64_t otherValue = other.commit(std::span(&next, 1), std::span(&wait, 1));
  other.wait(otherValue);
  EXPECT_EQ(done.value(), 10u);
}

TEST_F(SharedAndEvents, AnEventLivesUntilItsSignalHasHappened) {
  // A submission signals the stream's timeline and the event in no particular order. Were the event destroyed
  // once the timeline is reached, a driver could still write its signal into a semaphore made after it (seen with
  // lavapipe: a new event woke its waiter before its own work ran). Each new event must start unsignalled.
  StreamOptions options;
  options.explicitBarriers = true;
  Stream stream = device_.createStream(options);
  Buffer shared = device_.createBuffer(64 * 4, Device::Memory::Shared);
  stream.setKernel(loadIncrement(device_));
  stream.setBuffer(shared, 0, 0);
  for (int i = 0; i < 1000; ++i) {
    Event fresh = device_.createEvent(0);
    ASSERT_EQ(fresh.value(), 0u) << "iteration " << i;
    stream.dispatchThreads({64, 1, 1}, {64, 1, 1});
    Stream::EventSignal signal{fresh, 1};
    stream.wait(stream.commit(std::span(&signal, 1)));
    EXPECT_EQ(fresh.value(), 1u);  // the wait covers the event's own signal too
  }  // each event is dropped right after its wait
}

TEST_F(SharedAndEvents, GridsBeyondTheDeviceWorkgroupCountRunAsSeveralDispatches) {
  // Metal allows 2^32-1 threadgroups per dimension; lavapipe's limit is 65535 (NVIDIA's in y and z too).
  const uint32_t limit = device_.info().maxWorkgroupCount[0];
  if (uint64_t(limit) * 2 + 3 > (1u << 26))
    GTEST_SKIP() << "the device allows " << limit << " workgroups in x: a grid past it would need too much memory";
  for (uint32_t threadgroup : {1u, 2u}) {  // 2: the last threadgroup is partial (the edge-region path)
    const uint32_t n = (limit + 3) * threadgroup - (threadgroup - 1);
    Buffer shared = device_.createBuffer(size_t(n) * 4, Device::Memory::Shared);
    auto* values = static_cast<int32_t*>(shared.contents());
    for (uint32_t i = 0; i < n; ++i) values[i] = int32_t(i % 1000);
    StreamOptions options;
    options.explicitBarriers = true;
    Stream stream = device_.createStream(options);
    stream.setKernel(loadIncrement(device_));
    stream.setBuffer(shared, 0, 0);
    stream.dispatchThreads({n, 1, 1}, {threadgroup, 1, 1});
    stream.synchronize();
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(values[i], int32_t(i % 1000) * 3 + 1) << i << " of " << n;
  }
}

}  // namespace
