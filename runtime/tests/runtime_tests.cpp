// m2v_runtime tests on lavapipe. Kernels are GLSL written to the ABI (docs/ABI.md) with hand-written reflection.
#include <gtest/gtest.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <numeric>
#include <random>
#include <thread>

#include "metal2vk/runtime.h"

namespace fs = std::filesystem;
using namespace m2v;

namespace {

std::vector<uint32_t> readSpirv(const std::string& name) {
  std::ifstream in(std::string(M2V_TEST_SPV_DIR) + "/" + name + ".spv", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

KernelReflection readReflection(const std::string& name) {
  std::ifstream in(std::string(M2V_TEST_JSON_DIR) + "/" + name + ".json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string error;
  auto r = reflectionFromJson(text, &error);
  if (!r) throw std::runtime_error("bad reflection " + name + ": " + error);
  return *r;
}

Kernel loadKernel(Device& device, const std::string& name) {
  return device.createKernel(readSpirv(name), readReflection(name));
}

template <typename T>
std::vector<T> readAll(Stream& stream, const Buffer& buffer, size_t count) {
  std::vector<T> out(count);
  stream.readback(buffer, 0, out.data(), count * sizeof(T));
  return out;
}

// Every test gets a fresh device; no validation message may be recorded during the test.
class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = std::make_unique<Device>();
    std::cout << device_->describe() << "\n";
  }
  void TearDown() override {
    if (!device_) return;
    for (const std::string& m : device_->validationMessages()) ADD_FAILURE() << "validation: " << m;
    EXPECT_EQ(device_->validationMessageCount(), 0u);
  }
  Device& device() { return *device_; }
  std::unique_ptr<Device> device_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Device

TEST_F(RuntimeTest, DescribesChosenDevice) {
  const DeviceInfo& info = device().info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_NE(device().describe().find(info.name), std::string::npos);
  EXPECT_GE(VK_API_VERSION_MINOR(info.apiVersion), 3u);
  EXPECT_FALSE(Device::list().empty());
  if (const char* v = std::getenv("M2V_VALIDATION"); v && std::string(v) == "1") {
    EXPECT_TRUE(info.validationEnabled);
  }
}

TEST_F(RuntimeTest, SelectsByNameAndIndex) {
  std::string name = device().info().name;
  Device byName(DeviceOptions{name.substr(0, 4), -1, "", 0});
  EXPECT_EQ(byName.info().name, name);
  Device byIndex(DeviceOptions{"0", -1, "", 0});
  EXPECT_EQ(byIndex.info().index, 0u);
  EXPECT_THROW(Device(DeviceOptions{"no-such-device-xyz", -1, "", 0}), UsageError);
  EXPECT_THROW(Device(DeviceOptions{"99", -1, "", 0}), UsageError);
  EXPECT_EQ(byName.validationMessageCount(), 0u);
}

// Proves the validation log works: an invalid raw call must be recorded (then cleared so TearDown passes).
TEST_F(RuntimeTest, ValidationMessagesAreRecorded) {
  if (!device().info().validationEnabled) GTEST_SKIP() << "M2V_VALIDATION is not set";
  auto native = device().native();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 0;  // VUID-VkBufferCreateInfo-size-00912
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkResult r = vkCreateBuffer(static_cast<VkDevice>(native.device), &info, nullptr, &buffer);
  if (r == VK_SUCCESS && buffer) vkDestroyBuffer(static_cast<VkDevice>(native.device), buffer, nullptr);
  ASSERT_GE(device().validationMessageCount(), 1u);
  EXPECT_NE(device().validationMessages()[0].find("00912"), std::string::npos) << device().validationMessages()[0];
  device().clearValidationMessages();
}

// ---------------------------------------------------------------------------------------------------------------
// Buffers

TEST_F(RuntimeTest, UploadReadbackRoundTrip) {
  Stream stream = device().createStream();
  std::mt19937 rng(1);
  for (size_t size : {size_t(1), size_t(3), size_t(4096), size_t(3 << 20) + 5}) {
    std::vector<uint8_t> data(size);
    for (auto& b : data) b = uint8_t(rng());
    Buffer buffer = device().createBuffer(size + 16);
    EXPECT_NE(buffer.deviceAddress(), 0u);
    stream.upload(buffer, 7, data.data(), size);
    std::vector<uint8_t> back(size);
    stream.readback(buffer, 7, back.data(), size);
    EXPECT_EQ(back, data) << "size " << size;
  }
}

TEST_F(RuntimeTest, FillAndCopy) {
  Stream stream = device().createStream();
  Buffer a = device().createBuffer(1024), b = device().createBuffer(1024);
  stream.fill(a, 0, 1024, 0xdeadbeef);
  stream.fillBytes(a, 256, 256, 0x5a);
  stream.fill(b, 0, 1024, 0);
  stream.copy(a, 128, b, 512, 256);  // depends on both fills
  std::vector<uint32_t> out(256);
  stream.enqueueReadback(b, 0, out.data(), 1024);
  stream.synchronize();
  for (size_t i = 0; i < 256; ++i) {
    uint32_t expect = 0;
    if (i >= 128 && i < 160) expect = 0xdeadbeef;  // a[128..256) bytes
    if (i >= 160 && i < 192) expect = 0x5a5a5a5a;  // a[256..384)
    EXPECT_EQ(out[i], expect) << "word " << i;
  }
  EXPECT_THROW(stream.fill(a, 2, 8, 0), UsageError);
  EXPECT_THROW(stream.copy(a, 0, a, 8, 64), UsageError);
  EXPECT_THROW(stream.copy(a, 1000, b, 0, 64), UsageError);
  EXPECT_THROW(device().createBuffer(0), UsageError);
}

// ---------------------------------------------------------------------------------------------------------------
// Dispatch

TEST_F(RuntimeTest, DispatchThreadsWithSetBytesAndPartialGroup) {
  Kernel kernel = loadKernel(device(), "scale_add");
  Stream stream = device().createStream();
  const uint32_t n = 1000;  // 1000 / 64: the last threadgroup is partial
  std::vector<float> src(n);
  std::iota(src.begin(), src.end(), 0.0f);
  Buffer in = device().createBuffer(n * 4), out = device().createBuffer((n + 64) * 4);
  stream.upload(in, 0, src.data(), n * 4);
  stream.fill(out, 0, (n + 64) * 4, 0x7fc00001);  // poison, including a tail nobody may write
  struct {
    float a, b;
  } params{2.0f, 0.5f};
  stream.setKernel(kernel);
  stream.setBuffer(in, 0, 0);
  stream.setBuffer(out, 0, 1);
  stream.setBytes(&params, sizeof params, 2);
  stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
  auto result = readAll<uint32_t>(stream, out, n + 64);
  for (uint32_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, &result[i], 4);
    ASSERT_EQ(f, src[i] * 2.0f + 0.5f) << i;
  }
  for (uint32_t i = n; i < n + 64; ++i) ASSERT_EQ(result[i], 0x7fc00001u) << "out-of-grid write at " << i;
}

TEST_F(RuntimeTest, DependentDispatchesGetBarriersAcrossBatches) {
  Kernel kernel = loadKernel(device(), "increment");
  StreamOptions options;
  options.batchSize = 16;  // 200 dispatches span 13 command buffers
  Stream stream = device().createStream(options);
  const uint32_t n = 333;
  Buffer data = device().createBuffer(n * 4);
  stream.fill(data, 0, n * 4, 0);
  stream.setKernel(kernel);
  stream.setBuffer(data, 0, 0);
  const int chain = 200;
  for (int i = 0; i < chain; ++i) stream.dispatchThreads({n, 1, 1}, {32, 1, 1});
  auto result = readAll<int32_t>(stream, data, n);
  int32_t expect = 0;
  for (int i = 0; i < chain; ++i) expect = int32_t(uint32_t(expect) * 3u + 1u);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(result[i], expect) << i;
  Stream::Stats stats = stream.stats();
  EXPECT_EQ(stats.dispatches, uint64_t(chain));
  // One barrier between every pair of dependent commands: fill->1st dispatch, then 199, then the readback copy.
  EXPECT_EQ(stats.barriers, uint64_t(chain + 1));
  EXPECT_GE(stats.submissions, uint64_t(chain / 16));
}

TEST_F(RuntimeTest, IndependentDispatchesNeedNoBarriers) {
  Kernel kernel = loadKernel(device(), "scale_add");
  Stream stream = device().createStream();
  const uint32_t slice = 256, slices = 40;
  std::vector<float> src(slice * slices);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i % 97);
  Buffer in = device().createBuffer(src.size() * 4), out = device().createBuffer(src.size() * 4);
  stream.upload(in, 0, src.data(), src.size() * 4);
  stream.synchronize();
  uint64_t barriersBefore = stream.stats().barriers;
  stream.setKernel(kernel);
  for (uint32_t s = 0; s < slices; ++s) {
    float params[2] = {float(s), 1.0f};
    stream.setBuffer(in, s * slice * 4, 0);
    // Metal bindings carry no extent: say which slice this dispatch writes, or slices look dependent.
    stream.setBufferRange(out, s * slice * 4, slice * 4, 1);
    stream.setBytes(params, sizeof params, 2);
    stream.dispatchThreads({slice, 1, 1}, {64, 1, 1});
  }
  // One barrier: the first dispatch reads the upload. After that `in` is const and every dispatch writes its own
  // slice of `out`: no hazards between the dispatches.
  EXPECT_EQ(stream.stats().barriers, barriersBefore + 1);
  // Without the range hint the same slices conservatively count as [offset, end): dependent.
  Buffer other = device().createBuffer(src.size() * 4);
  for (uint32_t s = 0; s < 3; ++s) {
    stream.setBuffer(other, s * slice * 4, 1);
    stream.dispatchThreads({slice, 1, 1}, {64, 1, 1});
  }
  EXPECT_EQ(stream.stats().barriers, barriersBefore + 3);
  auto result = readAll<float>(stream, out, src.size());
  for (uint32_t s = 0; s < slices; ++s)
    for (uint32_t i = 0; i < slice; ++i)
      ASSERT_EQ(result[s * slice + i], src[s * slice + i] * float(s) + 1.0f) << s << "/" << i;
}

TEST_F(RuntimeTest, PartialEdgeThreadgroups3D) {
  Kernel kernel = loadKernel(device(), "grid_write");
  Stream stream = device().createStream();
  const Size3 grid{37, 19, 5}, tg{8, 4, 2};
  const uint32_t count = grid.x * grid.y * grid.z;
  Buffer out = device().createBuffer((count + 100) * 4);
  stream.fill(out, 0, (count + 100) * 4, 0xffffffff);
  stream.setKernel(kernel);
  stream.setBuffer(out, 0, 0);
  stream.dispatchThreads(grid, tg);
  auto result = readAll<uint32_t>(stream, out, count + 100);
  for (uint32_t z = 0; z < grid.z; ++z)
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; ++x)
        ASSERT_EQ(result[(z * grid.y + y) * grid.x + x], x + 1000 * y + 1000000 * z) << x << "," << y << "," << z;
  for (uint32_t i = count; i < count + 100; ++i) ASSERT_EQ(result[i], 0xffffffffu);

  // dispatchThreadgroups: the grid is groups * threadgroup, every thread is live.
  const Size3 groups{3, 2, 1};
  const uint32_t full = 24 * 8 * 2;
  stream.dispatchThreadgroups(groups, tg);
  result = readAll<uint32_t>(stream, out, full);
  for (uint32_t z = 0; z < 2; ++z)
    for (uint32_t y = 0; y < 8; ++y)
      for (uint32_t x = 0; x < 24; ++x)
        ASSERT_EQ(result[(z * 8 + y) * 24 + x], x + 1000 * y + 1000000 * z);
}

TEST_F(RuntimeTest, FunctionConstantsSpecialise) {
  Kernel kernel = loadKernel(device(), "fc_select");
  Stream stream = device().createStream();
  const uint32_t n = 100;
  Buffer ints = device().createBuffer(n * 4), floats = device().createBuffer(n * 4);
  stream.setKernel(kernel);
  stream.setBuffer(ints, 0, 0);
  // buffer(1) is guarded by function constant "offset": leaving it unbound is allowed (address 0).
  stream.dispatchThreads({n, 1, 1}, {32, 1, 1});
  auto r = readAll<int32_t>(stream, ints, n);
  EXPECT_EQ(r[5], -7);  // unset: not defined

  stream.setKernel(kernel);  // clears constants
  stream.setFunctionConstant(0, int32_t(3));
  stream.setFunctionConstant(1, true);
  stream.setFunctionConstant(2, 0.25f);
  stream.setBuffer(floats, 0, 1);
  stream.dispatchThreads({n, 1, 1}, {32, 1, 1});
  r = readAll<int32_t>(stream, ints, n);
  auto f = readAll<float>(stream, floats, n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(r[i], -int32_t(i) * 3);
    ASSERT_EQ(f[i], float(i) + 0.25f);
  }

  uint64_t created = device().stats().pipelinesCreated;
  stream.setKernel(kernel);  // same variant again: served from the in-memory cache
  stream.setFunctionConstant(0, int32_t(3));
  stream.setFunctionConstant(1, true);
  stream.setFunctionConstant(2, 0.25f);
  stream.dispatchThreads({n, 1, 1}, {32, 1, 1});
  stream.synchronize();
  EXPECT_EQ(device().stats().pipelinesCreated, created);
  EXPECT_GE(device().stats().pipelineMemoryHits, 1u);
}

// Threads build pipelines at once (the driver's build runs outside the cache's lock); two threads wanting the same
// variant get one pipeline between them.
TEST_F(RuntimeTest, PipelinesBuildFromManyThreads) {
  Kernel kernel = loadKernel(device(), "fc_select");
  const uint32_t n = 64, threads = 8, variants = 4;
  const uint64_t created = device().stats().pipelinesCreated;
  std::vector<std::string> failures(threads);
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      try {
        Stream stream = device().createStream();
        Buffer ints = device().createBuffer(n * 4), floats = device().createBuffer(n * 4);
        const int32_t scale = int32_t(t % variants) + 2;
        stream.setKernel(kernel);
        stream.setFunctionConstant(0, scale);
        stream.setFunctionConstant(1, true);
        stream.setFunctionConstant(2, 0.5f);
        stream.setBuffer(ints, 0, 0);
        stream.setBuffer(floats, 0, 1);
        stream.dispatchThreads({n, 1, 1}, {32, 1, 1});
        auto r = readAll<int32_t>(stream, ints, n);
        for (uint32_t i = 0; i < n; ++i)
          if (r[i] != -int32_t(i) * scale) {
            failures[t] = "element " + std::to_string(i) + ": " + std::to_string(r[i]);
            break;
          }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (auto& w : workers) w.join();
  for (uint32_t t = 0; t < threads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_EQ(device().stats().pipelinesCreated, created + variants);
}

TEST_F(RuntimeTest, ThreadgroupMemoryLength) {
  Kernel kernel = loadKernel(device(), "tg_reduce");
  Stream stream = device().createStream();
  const uint32_t n = 1000, tg = 128, groups = (n + tg - 1) / tg;
  std::vector<float> src(n);
  for (uint32_t i = 0; i < n; ++i) src[i] = float(i % 13);
  Buffer in = device().createBuffer(n * 4), sums = device().createBuffer(groups * 4);
  stream.upload(in, 0, src.data(), n * 4);
  stream.setKernel(kernel);
  stream.setBuffer(in, 0, 0);
  stream.setBuffer(sums, 0, 1);
  stream.setThreadgroupMemoryLength(tg * 4, 0);
  stream.dispatchThreads({n, 1, 1}, {tg, 1, 1});
  auto r = readAll<float>(stream, sums, groups);
  for (uint32_t g = 0; g < groups; ++g) {
    float expect = 0;
    for (uint32_t i = g * tg; i < std::min(n, (g + 1) * tg); ++i) expect += src[i];
    ASSERT_EQ(r[g], expect) << g;
  }
  stream.setThreadgroupMemoryLength(device().info().maxSharedMemoryBytes + 16, 0);
  EXPECT_THROW(stream.dispatchThreads({n, 1, 1}, {tg, 1, 1}), UsageError);
}

TEST_F(RuntimeTest, ArgumentBufferSpill) {
  Kernel kernel = loadKernel(device(), "argbuf");
  Stream stream = device().createStream();
  const uint32_t n = 77;
  std::vector<float> src(n);
  std::iota(src.begin(), src.end(), 1.0f);
  Buffer in = device().createBuffer(n * 4), out = device().createBuffer(n * 4);
  stream.upload(in, 0, src.data(), n * 4);
  stream.setKernel(kernel);
  stream.setBuffer(in, 0, 0);
  stream.setBuffer(out, 0, 1);
  stream.dispatchThreads({n, 1, 1}, {16, 1, 1});
  auto r = readAll<float>(stream, out, n);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(r[i], src[i] + 1.0f);
}

TEST_F(RuntimeTest, UserErrorsAreReported) {
  Kernel kernel = loadKernel(device(), "scale_add");
  Stream stream = device().createStream();
  Buffer a = device().createBuffer(256);
  EXPECT_THROW(stream.dispatchThreads({64, 1, 1}, {64, 1, 1}), UsageError);  // no kernel
  stream.setKernel(kernel);
  stream.setBuffer(a, 0, 0);
  EXPECT_THROW(stream.dispatchThreads({64, 1, 1}, {64, 1, 1}), UsageError);  // buffer(1), buffer(2) unbound
  stream.setBuffer(a, 0, 1);
  stream.setBuffer(a, 0, 2);
  uint32_t tooMany = device().info().maxWorkgroupInvocations + 1;
  EXPECT_THROW(stream.dispatchThreads({tooMany, 1, 1}, {tooMany, 1, 1}), UsageError);
  EXPECT_THROW(stream.dispatchThreads({64, 1, 1}, {0, 1, 1}), UsageError);
  EXPECT_THROW(stream.setBuffer(a, 256, 0), UsageError);
  std::vector<uint32_t> garbage{1, 2, 3, 4, 5, 6};
  EXPECT_THROW(device().createKernel(garbage, readReflection("scale_add")), UsageError);
  stream.synchronize();  // nothing broken was recorded
}

TEST_F(RuntimeTest, BuffersStayAliveUntilTheGpuIsDone) {
  Kernel kernel = loadKernel(device(), "increment");
  Stream stream = device().createStream();
  Buffer keep = device().createBuffer(64 * 4);
  stream.fill(keep, 0, 64 * 4, 0);
  {
    Buffer temporary = device().createBuffer(1 << 20);
    stream.setKernel(kernel);
    stream.setBuffer(temporary, 0, 0);
    stream.dispatchThreads({1 << 18, 1, 1}, {256, 1, 1});
    stream.setBuffer(keep, 0, 0);
  }  // the stream still references `temporary`
  stream.dispatchThreads({64, 1, 1}, {64, 1, 1});
  uint64_t value = stream.commit();
  EXPECT_GE(value, 1u);
  stream.wait(value);
  EXPECT_GE(stream.completedValue(), value);
  auto r = readAll<int32_t>(stream, keep, 64);
  EXPECT_EQ(r[63], 1);
}

TEST_F(RuntimeTest, TimestampsPerDispatch) {
  if (device().info().timestampPeriodNs == 0) GTEST_SKIP() << "no compute timestamps on this device";
  Kernel kernel = loadKernel(device(), "increment");
  StreamOptions options;
  options.timestamps = true;
  options.batchSize = 2;
  Stream stream = device().createStream(options);
  Buffer data = device().createBuffer(4096 * 4);
  stream.fill(data, 0, 4096 * 4, 0);
  stream.setKernel(kernel);
  stream.setBuffer(data, 0, 0);
  for (int i = 0; i < 5; ++i) stream.dispatchThreads({4096, 1, 1}, {64, 1, 1});
  stream.synchronize();
  auto timings = stream.takeTimings();
  ASSERT_EQ(timings.size(), 5u);
  for (size_t i = 0; i < timings.size(); ++i) {
    EXPECT_EQ(timings[i].kernel, "increment");
    EXPECT_EQ(timings[i].sequence, i);
    EXPECT_GE(timings[i].gpuNs, 0.0);
    // Absolute clock values: the span of one dispatch is its duration.
    EXPECT_LE(timings[i].startNs, timings[i].endNs);
    EXPECT_NEAR(timings[i].endNs - timings[i].startNs, timings[i].gpuNs, 1.0);
    EXPECT_GT(timings[i].startNs, 0.0);
  }
  EXPECT_GE(timings.back().endNs, timings.front().startNs);
  EXPECT_TRUE(stream.takeTimings().empty());
}

// A batch of any size is timed (the Metal API records a whole command buffer as one batch): more dispatches than
// one query pool holds, then a second batch on the reused pools.
TEST_F(RuntimeTest, TimestampsCoverALargeBatch) {
  if (device().info().timestampPeriodNs == 0) GTEST_SKIP() << "no compute timestamps on this device";
  Kernel kernel = loadKernel(device(), "increment");
  StreamOptions options;
  options.timestamps = true;
  options.batchSize = UINT32_MAX;
  Stream stream = device().createStream(options);
  Buffer data = device().createBuffer(256 * 4);
  stream.fill(data, 0, 256 * 4, 0);
  stream.setKernel(kernel);
  stream.setBuffer(data, 0, 0);
  for (int round = 0; round < 2; ++round) {
    const uint32_t dispatches = round == 0 ? 600 : 300;
    for (uint32_t i = 0; i < dispatches; ++i) stream.dispatchThreads({256, 1, 1}, {64, 1, 1});
    stream.synchronize();
    auto timings = stream.takeTimings();
    ASSERT_EQ(timings.size(), dispatches);
    for (size_t i = 1; i < timings.size(); ++i) {
      EXPECT_EQ(timings[i].sequence, timings[i - 1].sequence + 1);
      EXPECT_GE(timings[i].startNs, timings[i - 1].startNs) << i;  // one after the other (hazard barriers)
      EXPECT_GT(timings[i].startNs, 0.0);
    }
  }
  uint32_t expected = 0;  // increment is x -> 3x + 1, applied 900 times in order
  for (int i = 0; i < 900; ++i) expected = expected * 3u + 1u;
  for (uint32_t v : readAll<uint32_t>(stream, data, 256)) ASSERT_EQ(v, expected);
}

// ---------------------------------------------------------------------------------------------------------------
// Pipeline cache on disk

TEST_F(RuntimeTest, PipelineCachePersistsToDisk) {
  fs::path dir = fs::temp_directory_path() / ("m2v-cache-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    Device first(DeviceOptions{"", -1, dir.string(), 0});
    EXPECT_EQ(first.stats().diskCacheBytesLoaded, 0u);
    Kernel kernel = loadKernel(first, "increment");
    Stream stream = first.createStream();
    Buffer b = first.createBuffer(64);
    stream.setKernel(kernel);
    stream.setBuffer(b, 0, 0);
    stream.dispatchThreads({16, 1, 1}, {16, 1, 1});
    stream.synchronize();
    EXPECT_EQ(first.stats().pipelinesCreated, 1u);
    EXPECT_EQ(first.validationMessageCount(), 0u);
  }  // saved on destruction (temp file + rename)
  ASSERT_TRUE(fs::exists(dir));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "temp file left behind: " << e.path();
    ++files;
  }
  EXPECT_EQ(files, 1u);
  Device second(DeviceOptions{"", -1, dir.string(), 0});
  EXPECT_GT(second.stats().diskCacheBytesLoaded, 0u);
  EXPECT_EQ(second.validationMessageCount(), 0u);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------------------------
// Subgroups: 32-wide required. Run at LP_NATIVE_VECTOR_WIDTH=1024 (honoured) and 256 (refused).

TEST(Subgroup, RequiredSize32HonouredOrRefused) {
  Device device;
  std::cout << device.describe() << "\n";
  const DeviceInfo& info = device.info();
  bool expectRefusal = std::getenv("M2V_EXPECT_SUBGROUP_REFUSAL") != nullptr;
  bool reports32 = info.requiredSubgroupSizeInCompute && info.minSubgroupSize <= 32 && info.maxSubgroupSize >= 32;
  EXPECT_EQ(reports32, !expectRefusal) << "test environment does not give the expected subgroup width";
  Kernel kernel;
  try {
    kernel = loadKernel(device, "subgroup_size");
  } catch (const UnsupportedError& e) {
    std::cout << "refused: " << e.what() << "\n";
    EXPECT_NE(std::string(e.what()).find("32-wide"), std::string::npos);
    // A device that reports 32 may only refuse when the probe caught it running narrower subgroups.
    if (reports32) {
      EXPECT_NE(std::string(e.what()).find("probe kernel ran with"), std::string::npos);
      std::cout << "NOTE: this driver reports 32-wide subgroups but executes fewer lanes; simd kernels are refused\n";
    }
  }
  if (kernel) {
    ASSERT_TRUE(reports32) << "kernel needing 32-wide subgroups was accepted on " << info.describe();
    Stream stream = device.createStream();
    const uint32_t n = 100;  // threadgroups of 64: the second one is partial (36 live threads)
    Buffer sizes = device.createBuffer(n * 4), sums = device.createBuffer(n * 4);
    stream.setKernel(kernel);
    stream.setBuffer(sizes, 0, 0);
    stream.setBuffer(sums, 0, 1);
    stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
    auto s = readAll<uint32_t>(stream, sizes, n);
    auto t = readAll<uint32_t>(stream, sums, n);
    for (uint32_t i = 0; i < n; ++i) {
      ASSERT_EQ(s[i], 32u) << i;
      // Metal: a partial threadgroup holds only its live threads, so its last simdgroup may be narrower
      // (threads 64..99: simdgroups of 32 and 4 live lanes).
      uint32_t live = std::min(64u, n - i / 64 * 64), lane0 = i % 64 / 32 * 32;
      ASSERT_EQ(t[i], std::min(32u, live - lane0)) << i;
    }
  }
  for (const std::string& m : device.validationMessages()) ADD_FAILURE() << "validation: " << m;
}

// ---------------------------------------------------------------------------------------------------------------
// Timeout: a kernel that never finishes. Runs in a child process (gtest death test) so a driver that cannot be
// interrupted cannot take the test binary down with it; the child must report TimeoutError and exit promptly.

// Clears the flag the spinning kernels (endless, stoppable) wait on and dispatches `threads` of them.
static void dispatchSpinners(Stream& stream, const Kernel& kernel, const Buffer& flag, const Buffer& counter,
                             uint32_t threads, uint32_t threadgroup = 256) {
  stream.fill(flag, 0, 4, 0);
  stream.setKernel(kernel);
  stream.setBuffer(flag, 0, 0);
  stream.setBuffer(counter, 0, 1);
  stream.dispatchThreads({threads, 1, 1}, {threadgroup, 1, 1});
}

static void runEndlessKernelAndExit() {
  auto start = std::chrono::steady_clock::now();
  Device device(DeviceOptions{"", -1, "-", 300});
  Kernel kernel = loadKernel(device, "endless");
  // llvmpipe caps each loop at 65535 iterations, so one invocation always ends; 2^22 invocations of it keep
  // the device busy for minutes, which is what the timeout must catch.
  const uint32_t threads = 1u << 22;
  Buffer flag = device.createBuffer(4), counter = device.createBuffer(threads * 4);
  int code = 1;
  {
    Stream stream = device.createStream();
    dispatchSpinners(stream, kernel, flag, counter, threads);
    try {
      stream.synchronize();
      std::fprintf(stderr, "endless kernel finished?\n");
    } catch (const TimeoutError& e) {
      std::fprintf(stderr, "TimeoutError: %s\n", e.what());
      code = 3;
    }
    // Later use reports the fault instead of hanging.
    try {
      stream.dispatchThreads({1, 1, 1}, {1, 1, 1});
      stream.synchronize();
      code = 4;
    } catch (const DeviceError&) {
    }
  }  // the stream destructor must not hang on the endless work
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "child done after %.2f s\n", seconds);
  std::fflush(stderr);
  // After a timeout the GPU may still be running the kernel, and a driver's teardown at exit can wait for it
  // forever (NVIDIA 580 does): a program that hit a DeviceError leaves with _Exit, as `m2v run` does.
  std::_Exit(code);
}

TEST(Timeout, EndlessKernelIsStoppedWithAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(runEndlessKernelAndExit(), ::testing::ExitedWithCode(3), "TimeoutError: GPU work did not finish");
}

// Recovery: the work that outlived its budget keeps its TimeoutError (saying how long it ran), the faulted Device
// says so, and a new Device runs the next piece of work. In a child process for the same reason as above.
static void timeOutThenRunOnANewDevice() {
  int code = 0;
  {
    Device device(DeviceOptions{"", -1, "-", 0});
    Kernel endless = loadKernel(device, "endless");
    Buffer flag = device.createBuffer(4), counter = device.createBuffer(1024 * 4);
    Stream stream = device.createStream(StreamOptions{.timeoutMs = 50});  // a 50 ms budget for this stream
    dispatchSpinners(stream, endless, flag, counter, 1024, 64);
    try {
      stream.synchronize();
      code = 10;
    } catch (const TimeoutError& e) {
      std::string what = e.what();
      std::fprintf(stderr, "TimeoutError: %s\n", e.what());
      if (what.find("within 50 ms") == std::string::npos || what.find("had run for") == std::string::npos) code = 11;
    }
    if (!device.faulted() || device.faultReason().empty()) code = 12;
  }
  Device fresh(DeviceOptions{"", -1, "-", 0});
  if (fresh.faulted()) code = 13;
  Kernel increment = loadKernel(fresh, "increment");
  Stream stream = fresh.createStream();
  std::vector<int32_t> data(1000), back(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = int32_t(i) - 500;
  Buffer buffer = fresh.createBuffer(data.size() * 4);
  stream.upload(buffer, 0, data.data(), data.size() * 4);
  stream.setKernel(increment);
  stream.setBuffer(buffer, 0, 0);
  stream.dispatchThreads({uint32_t(data.size()), 1, 1}, {64, 1, 1});
  stream.readback(buffer, 0, back.data(), back.size() * 4);
  for (size_t i = 0; i < data.size(); ++i)
    if (back[i] != data[i] * 3 + 1) code = 14;
  std::fflush(stderr);
  std::_Exit(code);
}

TEST(Timeout, ANewDeviceRunsTheNextWork) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(timeOutThenRunOnANewDevice(), ::testing::ExitedWithCode(0), "TimeoutError: GPU work did not finish");
}

// A kernel that reads its abort word (docs/ABI.md) is stopped instead: the command buffer that outlived its budget
// fails with a TimeoutError that says so, and the device, its buffers and the stream stay usable. In a child process
// for the same reason as above, should the kernel not stop.
static void stopThenRunOnTheSameDevice() {
  int code = 0;
  Device device(DeviceOptions{"", -1, "-", 0});
  Kernel stoppable = loadKernel(device, "stoppable"), increment = loadKernel(device, "increment");
  std::vector<int32_t> data(1000), back(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = int32_t(i) - 500;
  Buffer kept = device.createBuffer(data.size() * 4);
  const uint32_t threads = 1u << 22;  // as in runEndlessKernelAndExit: minutes of work on llvmpipe
  Buffer flag = device.createBuffer(4), counter = device.createBuffer(threads * 4);
  Stream stream = device.createStream(StreamOptions{.timeoutMs = 300});
  stream.upload(kept, 0, data.data(), data.size() * 4);
  stream.synchronize();
  auto start = std::chrono::steady_clock::now();
  dispatchSpinners(stream, stoppable, flag, counter, threads);
  try {
    stream.synchronize();
    code = 10;
  } catch (const TimeoutError& e) {
    std::fprintf(stderr, "TimeoutError: %s\n", e.what());
    if (std::string(e.what()).find("its kernels were stopped") == std::string::npos) code = 11;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "stopped after %.2f s\n", seconds);
  if (device.faulted()) code = 12;
  // The same stream runs the next work, on the buffer made before the stop.
  stream.setKernel(increment);
  stream.setBuffer(kept, 0, 0);
  stream.dispatchThreads({uint32_t(data.size()), 1, 1}, {64, 1, 1});
  stream.readback(kept, 0, back.data(), back.size() * 4);
  for (size_t i = 0; i < data.size(); ++i)
    if (back[i] != data[i] * 3 + 1) code = 13;
  // Stopping again works: the batch's abort word is cleared when it is reused.
  dispatchSpinners(stream, stoppable, flag, counter, threads);
  try {
    stream.synchronize();
    code = 14;
  } catch (const TimeoutError&) {
  }
  if (device.faulted()) code = 15;
  std::fflush(stderr);
  std::_Exit(code);
}

TEST(Timeout, AKernelWithAbortChecksIsStoppedAndTheDeviceStays) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(stopThenRunOnTheSameDevice(), ::testing::ExitedWithCode(0), "its kernels were stopped");
}

// The default budget fits the device: a CPU device is tens of times slower than a GPU.
TEST(Timeout, DefaultBudgetDependsOnTheDeviceType) {
  if (std::getenv("M2V_TIMEOUT_MS")) GTEST_SKIP() << "M2V_TIMEOUT_MS is set: it replaces the per-device default";
  Device device(DeviceOptions{"", -1, "-", 0});
  EXPECT_EQ(device.timeoutMs(), device.info().type == "cpu" ? 120000u : 10000u);
  EXPECT_EQ(device.createStream().timeoutMs(), device.timeoutMs());
  Stream stream = device.createStream(StreamOptions{.timeoutMs = 1234});
  EXPECT_EQ(stream.timeoutMs(), 1234u);
  stream.setTimeoutMs(0);
  EXPECT_EQ(stream.timeoutMs(), device.timeoutMs());
  EXPECT_FALSE(device.faulted());
}

// NVIDIA's driver (580.159) fails vkCreateInstance after ~30 instances were created and destroyed in one process;
// Devices share one process-wide VkInstance, so opening and closing many Devices must keep working.
TEST(DeviceLifetime, ManyDevicesInOneProcess) {
  for (int i = 0; i < 40; ++i) {
    Device device;
    Stream stream = device.createStream();
    Buffer b = device.createBuffer(64);
    stream.fill(b, 0, 64, uint32_t(i));
    uint32_t back = 0;
    stream.readback(b, 60, &back, 4);
    ASSERT_EQ(back, uint32_t(i)) << "device " << i;
    ASSERT_EQ(device.validationMessageCount(), 0u);
  }
}
