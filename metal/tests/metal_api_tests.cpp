// The Metal API over metal2vk, on the default Vulkan device (lavapipe in CI): results of kernels against CPU
// references, and Metal's submission semantics (handler order and thread, events, fences, barriers, failures).
#include <gtest/gtest.h>
#include <sys/sysctl.h>

#include <Metal/Metal.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "metal2vk/library_file.h"
#include "metal2vk/metal_statistics.h"
#include "metal2vk/mlx.h"
#include "objects.h"

namespace {

using namespace std::chrono_literals;

const char* kSource = R"(
#include <metal_stdlib>
using namespace metal;

constant bool use_offset [[function_constant(0)]];
constant int offset_value [[function_constant(1)]];
constant half half_scale [[function_constant(2)]];

kernel void axpb(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                 device float* out [[buffer(2)]], constant float& scale [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
  float v = a[i] * scale + b[i];
  if (use_offset) v += float(offset_value);
  out[i] = v;
}

kernel void scale_by_half(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] = x[i] * float(half_scale);
}

kernel void fill_index(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] = float(i) * 2.0f;
}

// Reads what other threads of the previous dispatch wrote: needs the barrier between the two.
kernel void reverse_plus_one(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                             constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  y[i] = x[n - 1 - i] + 1.0f;
}

kernel void group_sum(device const float* x [[buffer(0)]], device float* sums [[buffer(1)]],
                      threadgroup float* scratch [[threadgroup(0)]],
                      uint lid [[thread_position_in_threadgroup]], uint gid [[threadgroup_position_in_grid]],
                      uint tgsize [[threads_per_threadgroup]], uint i [[thread_position_in_grid]]) {
  scratch[lid] = x[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) {
    float s = 0.0f;
    for (uint k = 0; k < tgsize; ++k) s += scratch[k];
    sums[gid] = s;
  }
}
)";

NS::String* str(const char* s) { return NS::String::string(s, NS::UTF8StringEncoding); }

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

class MetalApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    device_ = NS::TransferPtr(MTL::CreateSystemDefaultDevice());
    ASSERT_TRUE(device_) << "no Vulkan device";
    NS::Error* error = nullptr;
    auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
    auto options = NS::TransferPtr(MTL::CompileOptions::alloc()->init());
    options->setMathMode(MTL::MathModeSafe);
    library_ = NS::TransferPtr(device_->newLibrary(str(kSource), options.get(), &error));
    ASSERT_TRUE(library_) << (error ? error->localizedDescription()->utf8String() : "");
    queue_ = NS::TransferPtr(device_->newCommandQueue());
  }
  static void TearDownTestSuite() {
    queue_.reset();
    library_.reset();
    device_.reset();
  }
  void SetUp() override { pool_ = NS::TransferPtr(NS::AutoreleasePool::alloc()->init()); }
  void TearDown() override {
    pool_.reset();
    m2v::Device& runtime = *m2v::metal::impl<m2v::metal::DeviceImpl>(device_.get())->runtime();
    for (const std::string& m : runtime.validationMessages()) ADD_FAILURE() << m;
    runtime.clearValidationMessages();
  }

  NS::SharedPtr<MTL::ComputePipelineState> pipeline(const char* name, MTL::FunctionConstantValues* constants = nullptr) {
    NS::Error* error = nullptr;
    auto function = NS::TransferPtr(constants ? library_->newFunction(str(name), constants, &error)
                                              : library_->newFunction(str(name)));
    EXPECT_TRUE(function) << name << ": " << (error ? error->localizedDescription()->utf8String() : "not found");
    if (!function) return {};
    auto state = NS::TransferPtr(device_->newComputePipelineState(function.get(), &error));
    EXPECT_TRUE(state) << (error ? error->localizedDescription()->utf8String() : "");
    return state;
  }

  NS::SharedPtr<MTL::Buffer> sharedBuffer(const std::vector<float>& data) {
    return NS::TransferPtr(
        device_->newBuffer(data.data(), data.size() * sizeof(float), MTL::ResourceStorageModeShared));
  }
  NS::SharedPtr<MTL::Buffer> sharedBuffer(size_t floats, float poison = -777.0f) {
    return sharedBuffer(std::vector<float>(floats, poison));
  }
  static const float* floats(MTL::Buffer* b) { return static_cast<const float*>(b->contents()); }

  // One command buffer: `state` over `threads` threads (one threadgroup) with `buffer` at index 0, waited for.
  void runOnBuffer(MTL::ComputePipelineState* state, MTL::Buffer* buffer, NS::UInteger threads) {
    MTL::CommandBuffer* cb = queue_->commandBuffer();
    auto* enc = cb->computeCommandEncoder();
    enc->setComputePipelineState(state);
    enc->setBuffer(buffer, 0, 0);
    enc->dispatchThreads(MTL::Size(threads, 1, 1), MTL::Size(threads, 1, 1));
    enc->endEncoding();
    cb->commit();
    cb->waitUntilCompleted();
  }

  // An encoder of `cb` running `state` over n threads with `buffers` at 0.. and n after them.
  void dispatch(MTL::CommandBuffer* cb, MTL::ComputePipelineState* state, std::vector<MTL::Buffer*> buffers,
                uint32_t n) {
    auto* enc = cb->computeCommandEncoder();
    enc->setComputePipelineState(state);
    for (size_t i = 0; i < buffers.size(); ++i) enc->setBuffer(buffers[i], 0, i);
    enc->setBytes(&n, sizeof n, buffers.size());
    enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(64, 1, 1));
    enc->endEncoding();
  }

  static inline NS::SharedPtr<MTL::Device> device_;
  static inline NS::SharedPtr<MTL::Library> library_;
  static inline NS::SharedPtr<MTL::CommandQueue> queue_;
  NS::SharedPtr<NS::AutoreleasePool> pool_;
};

TEST_F(MetalApi, DeviceDescription) {
  EXPECT_GT(std::strlen(device_->name()->utf8String()), 0u);
  std::string arch = device_->architecture()->name()->utf8String();
  ASSERT_GE(arch.size(), 3u);
  // MLX reads two generation digits and a size letter; generation 15 keeps it off the Metal-4 (NAX) kernels.
  EXPECT_EQ(arch.substr(arch.size() - 3, 2), "15");
  EXPECT_TRUE(arch.back() == 'g' || arch.back() == 'd') << arch;
  EXPECT_TRUE(device_->supportsFamily(MTL::GPUFamilyMetal3));
  EXPECT_FALSE(device_->supportsFamily(MTL::GPUFamilyMetal4));
  EXPECT_FALSE(device_->supportsFamily(MTL::GPUFamilyApple7));
  EXPECT_GT(device_->maxBufferLength(), 1u << 20);
  EXPECT_GE(device_->recommendedMaxWorkingSetSize(), device_->maxBufferLength());
  std::string description = device_->description()->utf8String();
  EXPECT_NE(description.find("shared buffers in"), std::string::npos) << description;
  if (const char* v = std::getenv("M2V_VALIDATION"); v && std::string(v) == "1") {
    EXPECT_NE(description.find("validation on"), std::string::npos) << description;
  }
  // CopyAllDevices lists the default device first.
  auto all = NS::TransferPtr(MTL::CopyAllDevices());
  ASSERT_GE(all->count(), 1u);
  EXPECT_EQ(all->object<MTL::Device>(0), device_.get());
}

TEST_F(MetalApi, SysctlAnswersFromTheSystem) {
  uint64_t memsize = 0;
  size_t length = sizeof memsize;
  ASSERT_EQ(sysctlbyname("hw.memsize", &memsize, &length, nullptr, 0), 0);
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  meminfo >> key >> kib >> unit;
  EXPECT_EQ(key, "MemTotal:");
  EXPECT_EQ(memsize, kib * 1024);
  size_t limit = 0;
  length = sizeof limit;
  ASSERT_EQ(sysctlbyname("iogpu.rsrc_limit", &limit, &length, nullptr, 0), 0);
  EXPECT_GT(limit, 0u);
  errno = 0;
  EXPECT_EQ(sysctlbyname("kern.no_such_name", &limit, &length, nullptr, 0), -1);
  EXPECT_EQ(errno, ENOENT);
  uint8_t small = 0;
  length = 1;
  EXPECT_EQ(sysctlbyname("hw.memsize", &small, &length, nullptr, 0), -1);
  EXPECT_EQ(errno, ENOMEM);
}

TEST_F(MetalApi, BuffersAndHeaps) {
  auto shared = NS::TransferPtr(device_->newBuffer(1000, MTL::ResourceStorageModeShared));
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->length(), 1000u);
  EXPECT_EQ(shared->storageMode(), MTL::StorageModeShared);
  ASSERT_NE(shared->contents(), nullptr);
  std::memset(shared->contents(), 0x5a, 1000);
  EXPECT_EQ(static_cast<uint8_t*>(shared->contents())[999], 0x5a);
  auto priv = NS::TransferPtr(device_->newBuffer(1000, MTL::ResourceStorageModePrivate));
  ASSERT_TRUE(priv);
  EXPECT_EQ(priv->contents(), nullptr);
  EXPECT_EQ(priv->storageMode(), MTL::StorageModePrivate);
  EXPECT_EQ(device_->newBuffer(nullptr, 16, MTL::ResourceStorageModeShared, nullptr), nullptr);

  auto desc = NS::TransferPtr(MTL::HeapDescriptor::alloc()->init());
  desc->setSize(4096);
  desc->setResourceOptions(MTL::ResourceStorageModeShared | MTL::ResourceHazardTrackingModeUntracked);
  auto heap = NS::TransferPtr(device_->newHeap(desc.get()));
  ASSERT_TRUE(heap);
  const MTL::ResourceOptions options = MTL::ResourceStorageModeShared;
  auto a = NS::TransferPtr(heap->newBuffer(100, options));
  auto b = NS::TransferPtr(heap->newBuffer(300, options));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->heap(), heap.get());
  EXPECT_EQ(a->allocatedSize(), 256u);
  EXPECT_EQ(b->allocatedSize(), 512u);
  EXPECT_EQ(heap->usedSize(), 768u);
  EXPECT_GE(b->gpuAddress(), a->gpuAddress() + 256);  // no overlap
  EXPECT_EQ(heap->newBuffer(4096, options), nullptr);  // no room left for 4 KiB
  EXPECT_EQ(heap->newBuffer(16, MTL::ResourceStorageModePrivate), nullptr);  // another storage mode
  a.reset();
  EXPECT_EQ(heap->usedSize(), 512u);
  EXPECT_EQ(heap->maxAvailableSize(256), 4096u - 768u);
}

TEST_F(MetalApi, KernelWithConstantsAndBytes) {
  const uint32_t n = 1000;
  auto av = randomFloats(n, 1), bv = randomFloats(n, 2);
  auto a = sharedBuffer(av), b = sharedBuffer(bv), out = sharedBuffer(n);
  auto constants = NS::TransferPtr(MTL::FunctionConstantValues::alloc()->init());
  bool useOffset = true;
  int offset = 7;
  constants->setConstantValue(&useOffset, MTL::DataTypeBool, NS::UInteger(0));
  constants->setConstantValue(&offset, MTL::DataTypeInt, str("offset_value"));  // by name
  auto state = pipeline("axpb", constants.get());
  ASSERT_TRUE(state);
  EXPECT_GE(state->maxTotalThreadsPerThreadgroup(), 64u);

  MTL::CommandBuffer* cb = queue_->commandBufferWithUnretainedReferences();
  auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  ASSERT_NE(enc, nullptr);
  float scale = 0.5f;
  enc->setComputePipelineState(state.get());
  enc->setBuffer(a.get(), 0, 0);
  enc->setBuffer(b.get(), 0, 1);
  enc->setBuffer(out.get(), 0, 2);
  enc->setBytes(&scale, sizeof scale, 3);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(64, 1, 1));  // partial last threadgroup
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  EXPECT_EQ(cb->error(), nullptr);
  for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(floats(out.get())[i], av[i] * scale + bv[i] + 7.0f) << i;
}

TEST_F(MetalApi, FunctionConstantTypesAreChecked) {
  auto constants = NS::TransferPtr(MTL::FunctionConstantValues::alloc()->init());
  float wrong = 2.0f;
  constants->setConstantValue(&wrong, MTL::DataTypeFloat, NS::UInteger(2));  // declared half
  NS::Error* error = nullptr;
  EXPECT_EQ(library_->newFunction(str("scale_by_half"), constants.get(), &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error->localizedDescription()->utf8String()).find("half_scale"), std::string::npos);

  // A half constant given as half bits: 2.5 = 0x4100.
  constants->reset();
  uint16_t halfBits = 0x4100;
  constants->setConstantValue(&halfBits, MTL::DataTypeHalf, NS::UInteger(2));
  auto state = pipeline("scale_by_half", constants.get());
  ASSERT_TRUE(state);
  auto x = sharedBuffer({1.0f, -2.0f, 4.0f, 0.5f});
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  auto* enc = cb->computeCommandEncoder();
  enc->setComputePipelineState(state.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(4, 1, 1), MTL::Size(4, 1, 1));
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  const float expected[4] = {2.5f, -5.0f, 10.0f, 1.25f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(floats(x.get())[i], expected[i]);
}

TEST_F(MetalApi, LibraryErrors) {
  NS::Error* error = nullptr;
  EXPECT_EQ(library_->newFunction(str("no_such_kernel")), nullptr);
  EXPECT_EQ(library_->newFunction(str("no_such_kernel"), nullptr, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code(), MTL::LibraryErrorFunctionNotFound);
  error = nullptr;
  auto bad = device_->newLibrary(str("kernel void k(device float* x [[buffer(0)]]) { x[0] = undeclared; }"),
                                 nullptr, &error);
  EXPECT_EQ(bad, nullptr);
  ASSERT_NE(error, nullptr);
  std::string message = error->localizedDescription()->utf8String();
  EXPECT_NE(message.find("undeclared"), std::string::npos) << message;
  EXPECT_NE(message.find("program_source:1:"), std::string::npos) << message;
  // Linked functions are refused with an error, not ignored.
  auto function = NS::TransferPtr(library_->newFunction(str("fill_index")));
  auto desc = NS::TransferPtr(MTL::ComputePipelineDescriptor::alloc()->init());
  desc->setComputeFunction(function.get());
  auto linked = MTL::LinkedFunctions::linkedFunctions();
  const NS::Object* objects[] = {function.get()};
  linked->setPrivateFunctions(NS::Array::array(objects, 1));
  desc->setLinkedFunctions(linked);
  error = nullptr;
  EXPECT_EQ(device_->newComputePipelineState(desc.get(), MTL::PipelineOptionNone, nullptr, &error), nullptr);
  ASSERT_NE(error, nullptr);
}

TEST_F(MetalApi, BarrierMakesTheFirstDispatchVisibleToTheSecond) {
  const uint32_t n = 4096;
  auto x = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  MTL::CommandBuffer* cb = queue_->commandBufferWithUnretainedReferences();
  auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(fill.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(256, 1, 1));
  enc->memoryBarrier(MTL::BarrierScopeBuffers);
  enc->setComputePipelineState(reverse.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->setBuffer(y.get(), 0, 1);
  enc->setBytes(&n, sizeof n, 2);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(256, 1, 1));
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float(n - 1 - i) * 2.0f + 1.0f) << i;
}

// The host-cost counters see exactly what was encoded and committed (no other work runs in this process meanwhile).
TEST_F(MetalApi, StatisticsCountCommandBuffersDispatchesAndBarriers) {
  const uint32_t n = 256;
  auto x = sharedBuffer(n);
  auto fill = pipeline("fill_index");
  const m2v::metal::Statistics before = m2v::metal::statistics();
  for (int buffers = 0; buffers < 3; ++buffers) {
    MTL::CommandBuffer* cb = queue_->commandBufferWithUnretainedReferences();
    auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
    enc->setComputePipelineState(fill.get());
    enc->setBuffer(x.get(), 0, 0);
    for (int d = 0; d < 5; ++d) {
      enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(64, 1, 1));
      if (d % 2 == 0) enc->memoryBarrier(MTL::BarrierScopeBuffers);
    }
    enc->endEncoding();
    cb->commit();
    if (buffers == 2) cb->waitUntilCompleted();
  }
  const m2v::metal::Statistics after = m2v::metal::statistics();
  EXPECT_EQ(after.commandBuffersCommitted - before.commandBuffersCommitted, 3u);
  EXPECT_EQ(after.dispatches - before.dispatches, 15u);
  EXPECT_EQ(after.barriers - before.barriers, 9u);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(x.get())[i], float(i) * 2.0f) << i;
}

// With M2V_METAL_PROFILE=1 (the ctest entry metal.Profile sets it) every dispatch is timed and added to its kernel.
TEST_F(MetalApi, ProfileTimesEveryDispatchByKernel) {
  if (!m2v::metal::profiling()) GTEST_SKIP() << "profiling is off: run with M2V_METAL_PROFILE=1 (ctest -R metal.Profile)";
  const uint32_t n = 1u << 16;
  auto x = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  auto countOf = [](const char* kernel) {
    for (const m2v::metal::KernelTime& k : m2v::metal::kernelTimes())
      if (k.kernel == kernel) return std::pair(k.dispatches, k.gpuNs);
    return std::pair(uint64_t(0), 0.0);
  };
  const auto fillBefore = countOf("fill_index"), reverseBefore = countOf("reverse_plus_one");
  const double gpuBefore = m2v::metal::statistics().gpuNs;
  MTL::CommandBuffer* cb = queue_->commandBufferWithUnretainedReferences();
  auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeSerial);
  for (int i = 0; i < 3; ++i) {
    enc->setComputePipelineState(fill.get());
    enc->setBuffer(x.get(), 0, 0);
    enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(256, 1, 1));
  }
  for (int i = 0; i < 2; ++i) {
    enc->setComputePipelineState(reverse.get());
    enc->setBuffer(x.get(), 0, 0);
    enc->setBuffer(y.get(), 0, 1);
    enc->setBytes(&n, sizeof n, 2);
    enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(256, 1, 1));
  }
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  const auto fillAfter = countOf("fill_index"), reverseAfter = countOf("reverse_plus_one");
  EXPECT_EQ(fillAfter.first - fillBefore.first, 3u);
  EXPECT_EQ(reverseAfter.first - reverseBefore.first, 2u);
  const double fillNs = fillAfter.second - fillBefore.second, reverseNs = reverseAfter.second - reverseBefore.second;
  EXPECT_GT(fillNs, 0.0);
  EXPECT_GT(reverseNs, 0.0);
  // A serial encoder's dispatches do not overlap: the command buffer's span holds all five.
  EXPECT_GE(m2v::metal::statistics().gpuNs - gpuBefore, (fillNs + reverseNs) * 0.999);
  const std::string json = m2v_metal_statistics_json();
  EXPECT_NE(json.find("\"profiling\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("[\"fill_index\", " + std::to_string(fillAfter.first) + ", "), std::string::npos) << json;
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float(n - 1 - i) * 2.0f + 1.0f) << i;
}

// Objective-C answers messages to nil with zero; MLX relies on it (the null buffer of an empty array has length 0).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull"  // calling methods on null is the point of this test
TEST_F(MetalApi, NilAnswersZero) {
  MTL::Buffer* nil = nullptr;
  volatile bool keep = true;  // hide the null from the optimizer of this file
  if (keep) {
    EXPECT_EQ(nil->length(), 0u);
    EXPECT_EQ(nil->contents(), nullptr);
    EXPECT_EQ(nil->heap(), nullptr);
    EXPECT_EQ(nil->gpuAddress(), 0u);
    EXPECT_EQ(nil->storageMode(), MTL::StorageModeShared);
    EXPECT_EQ(nil->retain(), nullptr);
    nil->release();
    EXPECT_EQ(nil->autorelease(), nullptr);
  }
}
#pragma GCC diagnostic pop

TEST_F(MetalApi, FenceOrdersEncoders) {
  const uint32_t n = 2048;
  auto x = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  auto fence = NS::TransferPtr(device_->newFence());
  MTL::CommandBuffer* cb = queue_->commandBufferWithUnretainedReferences();
  auto* first = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  first->setComputePipelineState(fill.get());
  first->setBuffer(x.get(), 0, 0);
  first->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(128, 1, 1));
  first->updateFence(fence.get());
  first->endEncoding();
  auto* second = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  second->setComputePipelineState(reverse.get());
  second->setBuffer(x.get(), 0, 0);
  second->setBuffer(y.get(), 0, 1);
  second->setBytes(&n, sizeof n, 2);
  second->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(128, 1, 1));
  second->waitForFence(fence.get());  // called last, as MLX does: still applies to the whole encoder
  second->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float(n - 1 - i) * 2.0f + 1.0f) << i;
}

TEST_F(MetalApi, HeapAndPrivateBuffersInASerialEncoder) {
  // fill_index writes a private buffer, reverse_plus_one copies it into a slice of a heap (shared storage) that
  // sits after another buffer of the heap. A serial encoder orders the two dispatches without a memoryBarrier.
  const uint32_t n = 300;
  auto desc = NS::TransferPtr(MTL::HeapDescriptor::alloc()->init());
  desc->setSize(1 << 16);
  desc->setResourceOptions(MTL::ResourceStorageModeShared);
  auto heap = NS::TransferPtr(device_->newHeap(desc.get()));
  ASSERT_TRUE(heap);
  auto before = NS::TransferPtr(heap->newBuffer(1000, MTL::ResourceStorageModeShared));
  auto target = NS::TransferPtr(heap->newBuffer(n * sizeof(float) + 64, MTL::ResourceStorageModeShared));
  ASSERT_TRUE(before && target);
  EXPECT_EQ(target->heapOffset(), 1024u);
  std::memset(before->contents(), 0x11, 1000);
  std::memset(target->contents(), 0x22, target->length());
  auto priv = NS::TransferPtr(device_->newBuffer(n * sizeof(float), MTL::ResourceStorageModePrivate));
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeSerial);
  enc->setComputePipelineState(fill.get());
  enc->setBuffer(priv.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(32, 1, 1));
  enc->setComputePipelineState(reverse.get());
  enc->setBuffer(priv.get(), 0, 0);
  enc->setBuffer(target.get(), 64, 1);  // an offset inside the heap buffer
  enc->setBytes(&n, sizeof n, 2);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(32, 1, 1));
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted) << cb->error()->localizedDescription()->utf8String();
  const auto* bytes = static_cast<const uint8_t*>(target->contents());
  for (int i = 0; i < 64; ++i) ASSERT_EQ(bytes[i], 0x22) << "before the offset: " << i;
  const auto* values = reinterpret_cast<const float*>(bytes + 64);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(values[i], float(n - 1 - i) * 2.0f + 1.0f) << i;
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<const uint8_t*>(before->contents())[i], 0x11) << i;
}

TEST_F(MetalApi, ThreadgroupMemory) {
  const uint32_t groups = 8, size = 64, n = groups * size;
  auto xv = randomFloats(n, 3);
  auto x = sharedBuffer(xv), sums = sharedBuffer(groups);
  auto state = pipeline("group_sum");
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(state.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->setBuffer(sums.get(), 0, 1);
  enc->setThreadgroupMemoryLength(size * sizeof(float), 0);
  enc->dispatchThreadgroups(MTL::Size(groups, 1, 1), MTL::Size(size, 1, 1));
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  for (uint32_t g = 0; g < groups; ++g) {
    double expected = 0;
    for (uint32_t k = 0; k < size; ++k) expected += xv[g * size + k];
    EXPECT_NEAR(floats(sums.get())[g], expected, 1e-4) << g;
  }
}

TEST_F(MetalApi, CompletionHandlersRunInCommitOrderOffTheCommittingThread) {
  const int count = 6;
  auto fill = pipeline("fill_index");
  std::vector<NS::SharedPtr<MTL::Buffer>> outputs;
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  std::vector<bool> sawResult(count, false);
  std::vector<MTL::CommandBuffer*> buffers;
  for (int i = 0; i < count; ++i) {
    outputs.push_back(sharedBuffer(256 * (i + 1)));
    MTL::CommandBuffer* cb = queue_->commandBuffer();
    auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
    enc->setComputePipelineState(fill.get());
    enc->setBuffer(outputs[i].get(), 0, 0);
    enc->dispatchThreads(MTL::Size(256 * (i + 1), 1, 1), MTL::Size(64, 1, 1));
    enc->endEncoding();
    MTL::Buffer* out = outputs[i].get();
    cb->addCompletedHandler([&, i, out](MTL::CommandBuffer* done) {
      std::lock_guard lock(mutex);
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
      // The GPU has finished when the handler runs: the last element is written.
      sawResult[i] = done->status() == MTL::CommandBufferStatusCompleted &&
                     floats(out)[256 * (i + 1) - 1] == float(256 * (i + 1) - 1) * 2.0f;
    });
    cb->commit();
    buffers.push_back(cb);
  }
  buffers.back()->waitUntilCompleted();
  std::lock_guard lock(mutex);
  ASSERT_EQ(order.size(), size_t(count));  // the last one's handler ran before waitUntilCompleted returned
  for (int i = 0; i < count; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_NE(threads[i], std::this_thread::get_id());
    EXPECT_TRUE(sawResult[i]) << i;
  }
}

TEST_F(MetalApi, QueueLimitsUncompletedCommandBuffers) {
  auto queue = NS::TransferPtr(device_->newCommandQueue(2));
  NS::SharedPtr<MTL::CommandBuffer> first, second;
  {
    auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());  // only our references remain after it
    first = NS::RetainPtr(queue->commandBuffer());
    second = NS::RetainPtr(queue->commandBuffer());
  }
  std::atomic<bool> gotThird{false};
  std::thread maker([&] {
    auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
    MTL::CommandBuffer* third = queue->commandBuffer();  // blocks: two are uncompleted
    gotThird = true;
    third->commit();
    third->waitUntilCompleted();
  });
  std::this_thread::sleep_for(150ms);
  EXPECT_FALSE(gotThird.load());
  first->commit();  // an empty command buffer completes at once and frees its slot
  first->waitUntilCompleted();
  maker.join();
  EXPECT_TRUE(gotThird.load());
  second.reset();  // never committed: dropping it frees its slot too, so two more do not block
  auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
  EXPECT_NE(queue->commandBuffer(), nullptr);
  EXPECT_NE(queue->commandBuffer(), nullptr);
}

TEST_F(MetalApi, SharedEventsOrderCommandBuffers) {
  const uint32_t n = 512;
  auto x = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  auto gate = NS::TransferPtr(device_->newSharedEvent());
  auto done = NS::TransferPtr(device_->newSharedEvent());
  ASSERT_TRUE(gate && done);
  EXPECT_EQ(gate->signaledValue(), 0u);

  // First: waits for the host to open the gate, then writes x and signals `done` = 5.
  MTL::CommandBuffer* first = queue_->commandBuffer();
  first->encodeWait(gate.get(), 1);
  auto* enc = first->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(fill.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(64, 1, 1));
  enc->endEncoding();
  first->encodeSignalEvent(done.get(), 5);
  first->commit();
  // Second, committed later to the same queue without waits of its own: runs after the first (commit order).
  MTL::CommandBuffer* second = queue_->commandBuffer();
  enc = second->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(reverse.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->setBuffer(y.get(), 0, 1);
  enc->setBytes(&n, sizeof n, 2);
  enc->memoryBarrier(MTL::BarrierScopeBuffers);
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(64, 1, 1));
  enc->endEncoding();
  second->commit();

  std::this_thread::sleep_for(200ms);
  EXPECT_NE(first->status(), MTL::CommandBufferStatusCompleted);
  EXPECT_NE(second->status(), MTL::CommandBufferStatusCompleted);
  EXPECT_FALSE(done->waitUntilSignaledValue(5, 10));
  EXPECT_EQ(floats(x.get())[1], -777.0f);  // nothing ran yet

  gate->setSignaledValue(1);
  EXPECT_TRUE(done->waitUntilSignaledValue(5, 60000));
  second->waitUntilCompleted();
  EXPECT_EQ(first->status(), MTL::CommandBufferStatusCompleted);
  ASSERT_EQ(second->status(), MTL::CommandBufferStatusCompleted);
  EXPECT_EQ(done->signaledValue(), 5u);
  gate->setSignaledValue(0);  // values never decrease
  EXPECT_EQ(gate->signaledValue(), 1u);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float(n - 1 - i) * 2.0f + 1.0f) << i;
}

// MLX's eval waits on an event its last command buffer signals, then records the next operation, which may reuse
// (donate) the memory of arrays that command buffer's completed handler releases: a host wait returns only after
// the handlers of the command buffers that signalled up to its value have run.
TEST_F(MetalApi, EventWaitsReturnAfterTheSignallersHandlers) {
  const uint32_t n = 256;
  auto x = sharedBuffer(n);
  auto fill = pipeline("fill_index");
  auto done = NS::TransferPtr(device_->newSharedEvent());
  for (uint64_t value = 1; value <= 3; ++value) {
    std::atomic<bool> released{false};
    MTL::CommandBuffer* cb = queue_->commandBuffer();
    auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
    enc->setComputePipelineState(fill.get());
    enc->setBuffer(x.get(), 0, 0);
    enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(64, 1, 1));
    enc->endEncoding();
    cb->encodeSignalEvent(done.get(), value);
    cb->addCompletedHandler([&released](MTL::CommandBuffer*) {
      std::this_thread::sleep_for(50ms);  // a slow handler: the GPU's signal is long visible by now
      released = true;
    });
    cb->commit();
    ASSERT_TRUE(done->waitUntilSignaledValue(value, 60000));
    EXPECT_TRUE(released.load()) << "the wait for " << value << " returned before the signaller's handler ran";
    cb->waitUntilCompleted();
  }
  // A wait with a deadline that the handlers outlast times out, as one that the GPU misses does.
  std::atomic<bool> release{false};
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  cb->encodeSignalEvent(done.get(), 4);
  cb->addCompletedHandler([&release](MTL::CommandBuffer*) {
    while (!release) std::this_thread::sleep_for(1ms);
  });
  cb->commit();
  EXPECT_FALSE(done->waitUntilSignaledValue(4, 100));
  // The GPU's signal is there, but a poll reports it only once a wait for it would return (MLX reads an array whose
  // event a poll shows signalled; a host mirror's write-back comes before the handlers).
  EXPECT_EQ(done->signaledValue(), 3u);
  release = true;
  EXPECT_TRUE(done->waitUntilSignaledValue(4, 60000));
  EXPECT_EQ(done->signaledValue(), 4u);
  cb->waitUntilCompleted();
}

// MLX's CPU stream between two GPU operations recorded in one command buffer: the command buffer signals the CPU
// task's input, then waits for its output. The task's host wait must return when the GPU signals (the command
// buffer's handlers run only after the wait it blocks).
TEST_F(MetalApi, HostTaskBetweenTwoSegmentsOfOneCommandBuffer) {
  const uint32_t n = 256;
  auto x = sharedBuffer(n), z = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  auto event = NS::TransferPtr(device_->newSharedEvent());
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  dispatch(cb, fill.get(), {x.get()}, n);
  cb->encodeSignalEvent(event.get(), 1);
  cb->encodeWait(event.get(), 2);
  dispatch(cb, reverse.get(), {z.get(), y.get()}, n);
  std::atomic<bool> sawSignal{false};
  std::thread task([&] {
    sawSignal = event->waitUntilSignaledValue(1, 20000);
    // MLX's CPU task takes its pointers when it runs (with host mirrors: x written back, z uploaded before the
    // second segment).
    const float* px = floats(x.get());
    float* pz = static_cast<float*>(z->contents());
    for (uint32_t i = 0; i < n; ++i) pz[i] = px[i] + 1.0f;
    event->setSignaledValue(2);
  });
  cb->commit();
  task.join();
  ASSERT_TRUE(sawSignal) << "the host wait for the first segment's signal did not return";
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], 2.0f * (n - 1 - i) + 2.0f) << i;
}

TEST_F(MetalApi, FailedCommandBufferReportsAndTheNextRuns) {
  auto state = pipeline("reverse_plus_one");
  auto fill = pipeline("fill_index");
  auto x = sharedBuffer(64);
  bool handlerSawError = false;
  MTL::CommandBuffer* bad = queue_->commandBuffer();
  auto* enc = bad->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(state.get());
  enc->setBuffer(x.get(), 0, 0);  // buffer(1) and buffer(2) never bound
  enc->dispatchThreads(MTL::Size(64, 1, 1), MTL::Size(64, 1, 1));
  enc->endEncoding();
  bad->addCompletedHandler([&](MTL::CommandBuffer* cb) {
    handlerSawError = cb->status() == MTL::CommandBufferStatusError && cb->error() != nullptr;
  });
  bad->commit();
  bad->waitUntilCompleted();
  EXPECT_EQ(bad->status(), MTL::CommandBufferStatusError);
  ASSERT_NE(bad->error(), nullptr);
  std::string message = bad->error()->localizedDescription()->utf8String();
  EXPECT_NE(message.find("not bound"), std::string::npos) << message;
  EXPECT_TRUE(handlerSawError);

  // A new encoder has no pipeline, even when its commands go to a stream an earlier encoder used.
  MTL::CommandBuffer* noPipeline = queue_->commandBuffer();
  enc = noPipeline->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setBuffer(x.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(64, 1, 1), MTL::Size(64, 1, 1));
  enc->endEncoding();
  noPipeline->commit();
  noPipeline->waitUntilCompleted();
  EXPECT_EQ(noPipeline->status(), MTL::CommandBufferStatusError);
  ASSERT_NE(noPipeline->error(), nullptr);
  EXPECT_NE(std::string(noPipeline->error()->localizedDescription()->utf8String()).find("setComputePipelineState"),
            std::string::npos);

  MTL::CommandBuffer* good = queue_->commandBuffer();
  enc = good->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(fill.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(64, 1, 1), MTL::Size(64, 1, 1));
  enc->endEncoding();
  good->commit();
  good->waitUntilCompleted();
  ASSERT_EQ(good->status(), MTL::CommandBufferStatusCompleted);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(floats(x.get())[i], float(i) * 2.0f);
}

TEST_F(MetalApi, LibraryFromFile) {
  // A library file as `m2v metallib` writes it, read through newLibrary(URL).
  auto* libraryImpl = m2v::metal::impl<m2v::metal::LibraryImpl>(library_.get());
  std::string path = ::testing::TempDir() + "/metal_api_test.metallib";
  std::vector<m2v::CompiledKernel> kernels;
  for (size_t i = 0; i < libraryImpl->entries.size(); ++i) kernels.push_back(libraryImpl->kernel(i));
  m2v::writeLibraryFile(path, kernels);
  NS::Error* error = nullptr;
  auto fromFile = NS::TransferPtr(device_->newLibrary(NS::URL::fileURLWithPath(str(path.c_str())), &error));
  ASSERT_TRUE(fromFile) << (error ? error->localizedDescription()->utf8String() : "");
  EXPECT_EQ(fromFile->functionNames()->count(), library_->functionNames()->count());
  auto function = NS::TransferPtr(fromFile->newFunction(str("fill_index")));
  ASSERT_TRUE(function);
  auto state = NS::TransferPtr(device_->newComputePipelineState(function.get(), &error));
  ASSERT_TRUE(state);
  auto x = sharedBuffer(32);
  runOnBuffer(state.get(), x.get(), 32);
  for (uint32_t i = 0; i < 32; ++i) ASSERT_EQ(floats(x.get())[i], float(i) * 2.0f);
  error = nullptr;
  EXPECT_EQ(device_->newLibrary(str("/nonexistent/mlx.metallib"), &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code(), MTL::LibraryErrorFileNotFound);
}

TEST_F(MetalApi, LibraryFileCompilesDeferredEntriesOnFirstUse) {
  // A deferred source as `m2v metal -c` stores one: each [[host_name]] instantiation compiles when newFunction first
  // asks for it. `scaled_int` cannot compile (an int has no `.x`): asking for it fails with the compiler's words and
  // leaves the other entries usable; the other instantiations of the same template compile and run.
  const char* text = R"(#include <metal_stdlib>
using namespace metal;
template <typename T, int Scale>
[[kernel]] void scaled(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = T(i) * T(Scale); }
template <typename T>
[[kernel]] void broken(device T* x [[buffer(0)]]) { x[0] = x[0].x; }
template [[host_name("scaled_float_3")]] [[kernel]] void scaled<float, 3>(device float*, uint);
template [[host_name("scaled_" "uint" "_5")]] [[kernel]] void scaled<uint, 5>(device uint*, uint);
template [[host_name("broken_int")]] [[kernel]] void broken<int>(device int*);
)";
  m2v::DeferredSource source = m2v::splitInstantiations(text, "deferred_test.metal");
  ASSERT_EQ(source.entries.size(), 3u);
  std::string path = ::testing::TempDir() + "/metal_api_deferred.metallib";
  m2v::writeLibrary(path, {{}, {source}});
  NS::Error* error = nullptr;
  auto library = NS::TransferPtr(device_->newLibrary(NS::URL::fileURLWithPath(str(path.c_str())), &error));
  ASSERT_TRUE(library) << (error ? error->localizedDescription()->utf8String() : "");
  EXPECT_EQ(library->functionNames()->count(), 3u);

  auto broken = NS::TransferPtr(library->newFunction(str("broken_int"), nullptr, &error));
  EXPECT_FALSE(broken);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code(), MTL::LibraryErrorCompileFailure);
  std::string message = error->localizedDescription()->utf8String();
  EXPECT_NE(message.find("broken_int"), std::string::npos) << message;

  auto run = [&](const char* name) {
    NS::Error* e = nullptr;
    auto function = NS::TransferPtr(library->newFunction(str(name), nullptr, &e));
    EXPECT_TRUE(function) << name << ": " << (e ? e->localizedDescription()->utf8String() : "");
    auto state = NS::TransferPtr(device_->newComputePipelineState(function.get(), &e));
    EXPECT_TRUE(state) << name;
    auto x = sharedBuffer(64);
    runOnBuffer(state.get(), x.get(), 64);
    return x;
  };
  auto floatsOut = run("scaled_float_3");
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(floats(floatsOut.get())[i], float(i) * 3.0f);
  auto uintsOut = run("scaled_uint_5");
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(static_cast<const uint32_t*>(uintsOut->contents())[i], i * 5);
}

TEST_F(MetalApi, SourceLibrariesAreCachedInMemoryAndOnDisk) {
  // A source no earlier run has compiled (the disk cache outlives runs): a fresh comment makes it new.
  std::string source = std::string(kSource) + "\n// " +
                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n";
  auto before = m2v::mlx::cacheStats();
  NS::Error* error = nullptr;
  auto first = NS::TransferPtr(device_->newLibrary(str(source.c_str()), nullptr, &error));
  ASSERT_TRUE(first) << (error ? error->localizedDescription()->utf8String() : "");
  auto afterCompile = m2v::mlx::cacheStats();
  EXPECT_EQ(afterCompile.compiles, before.compiles + 1);
  EXPECT_EQ(afterCompile.diskWrites, before.diskWrites + 1);
  auto again = NS::TransferPtr(device_->newLibrary(str(source.c_str()), nullptr, &error));
  EXPECT_EQ(m2v::mlx::cacheStats().memoryHits, afterCompile.memoryHits + 1);
  m2v::mlx::clearMemoryCache();
  auto fromDisk = NS::TransferPtr(device_->newLibrary(str(source.c_str()), nullptr, &error));
  ASSERT_TRUE(fromDisk);
  auto afterDisk = m2v::mlx::cacheStats();
  EXPECT_EQ(afterDisk.diskHits, afterCompile.diskHits + 1);
  EXPECT_EQ(afterDisk.compiles, afterCompile.compiles);
  EXPECT_EQ(fromDisk->functionNames()->count(), library_->functionNames()->count());
  // The library read back runs.
  auto function = NS::TransferPtr(fromDisk->newFunction(str("fill_index")));
  auto state = NS::TransferPtr(device_->newComputePipelineState(function.get(), &error));
  ASSERT_TRUE(state);
  auto x = sharedBuffer(16);
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  auto* enc = cb->computeCommandEncoder();
  enc->setComputePipelineState(state.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->dispatchThreads(MTL::Size(16, 1, 1), MTL::Size(16, 1, 1));
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  for (uint32_t i = 0; i < 16; ++i) ASSERT_EQ(floats(x.get())[i], float(i) * 2.0f);
}

TEST_F(MetalApi, CaptureIsNotSupported) {
  auto desc = NS::TransferPtr(MTL::CaptureDescriptor::alloc()->init());
  desc->setCaptureObject(device_.get());
  NS::Error* error = nullptr;
  EXPECT_FALSE(MTL::CaptureManager::sharedCaptureManager()->startCapture(desc.get(), &error));
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code(), MTL::CaptureErrorNotSupported);
}

TEST_F(MetalApi, EmptySetBytesBindsAValidAddress) {
  // MLX passes empty vectors (the shape of a scalar) with setBytes; Metal accepts zero bytes.
  auto fill = pipeline("fill_index");
  auto x = sharedBuffer(8);
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  auto* enc = cb->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  enc->setComputePipelineState(fill.get());
  enc->setBuffer(x.get(), 0, 0);
  enc->setBytes(nullptr, 0, 5);  // an index the kernel does not use
  enc->dispatchThreads(MTL::Size(8, 1, 1), MTL::Size(8, 1, 1));
  enc->endEncoding();
  cb->commit();
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  EXPECT_EQ(floats(x.get())[7], 14.0f);
}

// A thread_local object made before the thread first uses an autorelease pool is destroyed after the pool stack's
// owner; its destructor may still open pools and autorelease (MLX's per-thread command encoders do).
struct UsesPoolsWhenDestroyed {
  bool armed = false;
  ~UsesPoolsWhenDestroyed() {
    if (!armed) return;
    auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
    NS::String::string("made during thread exit", NS::UTF8StringEncoding);
  }
};

TEST_F(MetalApi, PoolsStayUsableWhileAThreadExits) {
  for (int i = 0; i < 20; ++i) {
    std::thread worker([] {
      thread_local UsesPoolsWhenDestroyed late;
      late.armed = true;
      auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());  // the pool stack's owner starts here
      NS::String::string("autoreleased in a pool", NS::UTF8StringEncoding);
      NS::String::string("autoreleased", NS::UTF8StringEncoding)->retain()->autorelease();
    });
    worker.join();
  }
  SUCCEED();  // reaching here without a crash (ASan builds: without an error) is the result
}

TEST_F(MetalApi, ReferenceCountingAndAutorelease) {
  auto s = NS::TransferPtr(NS::String::alloc()->init("abc", NS::UTF8StringEncoding));
  EXPECT_EQ(s->retainCount(), 1u);
  {
    auto pool = NS::TransferPtr(NS::AutoreleasePool::alloc()->init());
    s->retain()->autorelease();
    EXPECT_EQ(s->retainCount(), 2u);
  }  // the pool drains
  EXPECT_EQ(s->retainCount(), 1u);
  auto copy = s;
  EXPECT_EQ(s->retainCount(), 2u);
  EXPECT_TRUE(copy == s);
  auto set = NS::TransferPtr(device_->newResidencySet(MTL::ResidencySetDescriptor::alloc()->init()->autorelease(), nullptr));
  auto buffer = NS::TransferPtr(device_->newBuffer(8192, MTL::ResourceStorageModeShared));
  set->addAllocation(buffer.get());
  EXPECT_EQ(set->allocatedSize(), 0u);  // additions count after commit
  set->commit();
  EXPECT_EQ(set->allocatedSize(), buffer->allocatedSize());
  EXPECT_TRUE(set->containsAllocation(buffer.get()));
}

// newBufferWithBytesNoCopy: the GPU reads and writes the caller's memory in place (also under
// metal.mirrored: such a buffer needs no mirror), and the deallocator runs once the GPU no longer holds it.
TEST_F(MetalApi, NoCopyBufferWrapsCallerMemory) {
  const uint64_t importAlignment = m2v::metal::impl<m2v::metal::DeviceImpl>(device_.get())->info().hostImportAlignment;
  if (!importAlignment) GTEST_SKIP() << "the device cannot import host memory (no VK_EXT_external_memory_host)";
  const size_t alignment = std::max<size_t>(4096, importAlignment);  // the whole buffer imported alone
  const uint32_t n = 1000;                                           // 4000 bytes: not a whole page
  auto* memory = static_cast<float*>(std::aligned_alloc(alignment, 2 * alignment));
  ASSERT_NE(memory, nullptr);
  for (uint32_t i = 0; i < n; ++i) memory[i] = -1.0f;
  std::atomic<int> deallocations{0};
  auto deallocator = [&](void* pointer, NS::UInteger length) {
    if (pointer == memory && length == n * sizeof(float)) ++deallocations;
  };
  EXPECT_EQ(device_->newBuffer(memory, n * sizeof(float), MTL::ResourceStorageModePrivate, deallocator), nullptr);
  {  // memory that does not start a page (MLX wraps any host array): the buffer starts at the pointer
    auto inner = NS::TransferPtr(device_->newBuffer(memory + 3, 16, MTL::ResourceStorageModeShared, nullptr));
    ASSERT_TRUE(inner);
    EXPECT_EQ(inner->contents(), memory + 3);
    auto fill = pipeline("fill_index");
    runOnBuffer(fill.get(), inner.get(), 4);
    EXPECT_EQ(memory[2], -1.0f);
    for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(memory[3 + i], 2.0f * i) << i;
    EXPECT_EQ(memory[7], -1.0f);
  }
  auto x = NS::TransferPtr(device_->newBuffer(memory, n * sizeof(float), MTL::ResourceStorageModeShared, deallocator));
  ASSERT_TRUE(x) << "the memory was not wrapped";
  EXPECT_EQ(x->contents(), memory);
  EXPECT_EQ(x->length(), n * sizeof(float));
  EXPECT_EQ(deallocations, 0);  // nil answers never call it

  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  runOnBuffer(fill.get(), x.get(), 64);  // GPU writes, read through the caller's own pointer
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(memory[i], 2.0f * i) << i;
  EXPECT_EQ(memory[64], -1.0f);

  auto y = sharedBuffer(n);
  auto gate = NS::TransferPtr(device_->newSharedEvent());
  for (uint32_t i = 0; i < n; ++i) memory[i] = float(3 * i);  // CPU writes, read by the next command buffer
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  cb->encodeWait(gate.get(), 1);
  dispatch(cb, reverse.get(), {x.get(), y.get()}, n);
  cb->commit();
  x.reset();  // the in-flight command buffer still holds the memory
  EXPECT_EQ(deallocations, 0);
  gate->setSignaledValue(1);
  cb->waitUntilCompleted();
  ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float(3 * (n - 1 - i)) + 1.0f) << i;
  // released by the command buffer once it completed (its handlers may still be running)
  for (int wait = 0; wait < 500 && deallocations == 0; ++wait) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(deallocations, 1);
  std::free(memory);
}

}  // namespace

// Host mirrors (metal/host_mirror.cpp): on a device whose shared memory the CPU reads uncached, contents() is a
// host-cached copy kept coherent by copies. Run with M2V_HOST_MIRROR=1 (the metal.mirrored test) on devices that
// need no mirrors, so that CI checks Metal's rules through them: what the GPU wrote is visible to the CPU after the
// command buffer completes, what the CPU wrote is visible to the next command buffer.
class HostMirror : public MetalApi {
 protected:
  void SetUp() override {
    MetalApi::SetUp();
    if (!m2v::metal::impl<m2v::metal::DeviceImpl>(device_.get())->mirrorsSharedBuffers)
      GTEST_SKIP() << "shared buffers are not mirrored on this device (M2V_HOST_MIRROR=1 forces mirrors; the "
                      "metal.mirrored test runs these so)";
  }
};

TEST_F(HostMirror, GpuWritesReachTheCpuAfterCompletion) {
  const uint32_t n = 1000;
  auto x = sharedBuffer(n);
  auto fill = pipeline("fill_index");
  EXPECT_EQ(floats(x.get())[3], -777.0f);  // the host copy exists before the GPU writes
  runOnBuffer(fill.get(), x.get(), 64);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(floats(x.get())[i], 2.0f * i) << i;
  EXPECT_EQ(floats(x.get())[64], -777.0f);  // what the kernel did not write keeps the CPU's value
}

TEST_F(HostMirror, CpuWritesReachTheNextCommandBuffer) {
  const uint32_t n = 512;
  auto x = sharedBuffer(n), y = sharedBuffer(n);
  auto reverse = pipeline("reverse_plus_one");
  for (int round = 0; round < 3; ++round) {
    float* px = static_cast<float*>(x->contents());
    for (uint32_t i = 0; i < n; ++i) px[i] = float(i * (round + 1));
    MTL::CommandBuffer* cb = queue_->commandBuffer();
    dispatch(cb, reverse.get(), {x.get(), y.get()}, n);
    cb->commit();
    cb->waitUntilCompleted();
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float((n - 1 - i) * (round + 1)) + 1.0f) << i;
  }
}

// MLX takes a CPU task's pointers when it records the task, before the GPU command buffer that writes its input is
// committed, and uses them after an event wait.
TEST_F(HostMirror, PointerTakenBeforeCommitSeesTheWritesAfterTheSignal) {
  const uint32_t n = 256;
  auto x = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  auto event = NS::TransferPtr(device_->newSharedEvent());
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  dispatch(cb, fill.get(), {x.get()}, n);
  cb->encodeSignalEvent(event.get(), 1);
  const float* px = floats(x.get());  // before commit: a write-back joins the writer's segment
  // The same command buffer reads x again on the GPU: the CPU's copy (not yet written back) must not replace it.
  dispatch(cb, reverse.get(), {x.get(), y.get()}, n);
  cb->commit();
  ASSERT_TRUE(event->waitUntilSignaledValue(1, 60000));
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(px[i], 2.0f * i) << i;
  cb->waitUntilCompleted();
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], 2.0f * (n - 1 - i) + 1.0f) << i;
}

// A CPU task between two GPU command buffers, ordered by events as MLX's CPU stream orders them: it reads what the
// first wrote and writes what the second reads, through pointers taken before either was committed.
TEST_F(HostMirror, CpuTaskBetweenTwoCommandBuffers) {
  const uint32_t n = 300;
  auto x = sharedBuffer(n), z = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  auto event = NS::TransferPtr(device_->newSharedEvent());
  MTL::CommandBuffer* first = queue_->commandBuffer();
  dispatch(first, fill.get(), {x.get()}, n);
  first->encodeSignalEvent(event.get(), 1);
  const float* px = floats(x.get());
  float* pz = static_cast<float*>(z->contents());
  MTL::CommandBuffer* second = queue_->commandBuffer();
  second->encodeWait(event.get(), 2);
  dispatch(second, reverse.get(), {z.get(), y.get()}, n);
  std::thread task([&] {
    event->waitUntilSignaledValue(1, UINT64_MAX);
    for (uint32_t i = 0; i < n; ++i) pz[i] = px[i] * 3.0f;
    event->setSignaledValue(2);
  });
  first->commit();
  second->commit();  // waits for the task, which waits for the first command buffer
  task.join();
  second->waitUntilCompleted();
  ASSERT_EQ(second->status(), MTL::CommandBufferStatusCompleted);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], 6.0f * (n - 1 - i) + 1.0f) << i;
}

// MLX's CPU task takes its output's pointer when it runs: after the GPU work that reads the output was recorded and
// committed (waiting for the task's event). What it writes must reach that work.
TEST_F(HostMirror, CpuWritesAfterTheReaderWasRecorded) {
  const uint32_t n = 300;
  auto z = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  auto event = NS::TransferPtr(device_->newSharedEvent());
  for (int round = 1; round <= 3; ++round) {  // the same buffers again: MLX's allocator reuses them
    runOnBuffer(fill.get(), z.get(), 64);     // the GPU used z last: nothing the CPU wrote is pending
    MTL::CommandBuffer* cb = queue_->commandBuffer();
    cb->encodeWait(event.get(), round);
    dispatch(cb, reverse.get(), {z.get(), y.get()}, n);
    cb->commit();
    std::thread task([&] {
      float* pz = static_cast<float*>(z->contents());
      for (uint32_t i = 0; i < n; ++i) pz[i] = float(round * 1000 + i);
      event->setSignaledValue(round);
    });
    task.join();
    cb->waitUntilCompleted();
    ASSERT_EQ(cb->status(), MTL::CommandBufferStatusCompleted);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float(round * 1000 + n - 1 - i) + 1.0f) << i;
  }
}

// contents() after commit and before the writer ran returns at once (the writer waits on the host here), and the
// write-back follows the GPU's completion, before its handlers and event waits return.
TEST_F(HostMirror, ContentsWhileTheWriterIsInFlight) {
  const uint32_t n = 128;
  auto x = sharedBuffer(n);
  auto fill = pipeline("fill_index");
  auto gate = NS::TransferPtr(device_->newSharedEvent());
  auto done = NS::TransferPtr(device_->newSharedEvent());
  MTL::CommandBuffer* cb = queue_->commandBuffer();
  cb->encodeWait(gate.get(), 1);
  dispatch(cb, fill.get(), {x.get()}, n);
  cb->encodeSignalEvent(done.get(), 1);
  cb->commit();
  EXPECT_EQ(floats(x.get())[5], -777.0f);  // not run yet: the CPU sees its own copy, as on Metal
  gate->setSignaledValue(1);
  ASSERT_TRUE(done->waitUntilSignaledValue(1, 60000));
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(x.get())[i], 2.0f * i) << i;
}

// MLX's allocator hands a buffer the GPU wrote and the CPU read to the next array, which the CPU may fill and the
// GPU read, then the GPU overwrite and the CPU read again.
TEST_F(HostMirror, ReusedBufferAlternatesBetweenCpuAndGpu) {
  const uint32_t n = 640;
  auto x = sharedBuffer(n), y = sharedBuffer(n);
  auto fill = pipeline("fill_index"), reverse = pipeline("reverse_plus_one");
  for (int round = 0; round < 3; ++round) {
    runOnBuffer(fill.get(), x.get(), 64);
    ASSERT_EQ(floats(x.get())[63], 126.0f);
    float* px = static_cast<float*>(x->contents());
    for (uint32_t i = 0; i < n; ++i) px[i] = float(round * 1000 + i);
    MTL::CommandBuffer* cb = queue_->commandBuffer();
    dispatch(cb, reverse.get(), {x.get(), y.get()}, n);
    cb->commit();
    cb->waitUntilCompleted();
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(floats(y.get())[i], float(round * 1000 + n - 1 - i) + 1.0f) << i;
  }
}
