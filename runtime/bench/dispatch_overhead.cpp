// Host cost per dispatch: 10,000 small dispatches recorded through m2v::Stream vs the same dispatches recorded with
// raw Vulkan calls (bind once, push constants + dispatch each) in the same process on the same device.
// Usage: m2v_dispatch_bench [dispatches=10000] [repeats=9]
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "metal2vk/runtime.h"

using namespace m2v;
using Clock = std::chrono::steady_clock;

static void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, int(r));
    std::exit(1);
  }
}

int main(int argc, char** argv) {
  const uint32_t dispatches = argc > 1 ? uint32_t(std::atoi(argv[1])) : 10000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 9;
  const uint32_t slice = 64;  // threads per dispatch: one threadgroup, negligible GPU work

  std::ifstream spvFile(M2V_BENCH_SPV, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(spvFile)), std::istreambuf_iterator<char>());
  std::vector<uint32_t> spirv(bytes.size() / 4);
  std::memcpy(spirv.data(), bytes.data(), spirv.size() * 4);
  std::ifstream jsonFile(M2V_BENCH_JSON);
  std::string json((std::istreambuf_iterator<char>(jsonFile)), std::istreambuf_iterator<char>());
  auto reflection = reflectionFromJson(json);
  if (spirv.empty() || !reflection) {
    std::fprintf(stderr, "cannot read %s / %s\n", M2V_BENCH_SPV, M2V_BENCH_JSON);
    return 1;
  }

  DeviceOptions options;
  options.validation = 0;  // measure the runtime, not the layer
  options.cacheDir = "-";
  Device device(options);
  std::printf("%s\n", device.describe().c_str());
  Kernel kernel = device.createKernel(spirv, *reflection);
  Buffer in = device.createBuffer(size_t(dispatches) * slice * 4);
  Buffer out = device.createBuffer(size_t(dispatches) * slice * 4);
  Buffer params = device.createBuffer(8);
  const float scale[2] = {2.0f, 1.0f};

  // --- m2v::Stream ---
  Stream stream = device.createStream();
  stream.upload(params, 0, scale, sizeof scale);
  auto recordStream = [&] {
    stream.setKernel(kernel);
    stream.setBuffer(params, 0, 2);
    for (uint32_t i = 0; i < dispatches; ++i) {
      stream.setBuffer(in, size_t(i) * slice * 4, 0);
      stream.setBufferRange(out, size_t(i) * slice * 4, slice * 4, 1);  // slices are independent
      stream.dispatchThreads({slice, 1, 1}, {slice, 1, 1});
    }
    stream.commit();
  };
  recordStream();  // warm up: pipeline, command buffers, arena
  stream.synchronize();

  // --- raw Vulkan: same module, same specialisation, one command buffer ---
  auto native = device.native();
  VkDevice vk = static_cast<VkDevice>(native.device);
  VkQueue queue = static_cast<VkQueue>(native.queue);
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = spirv.size() * 4;
  moduleInfo.pCode = spirv.data();
  VkShaderModule module;
  check(vkCreateShaderModule(vk, &moduleInfo, nullptr, &module), "vkCreateShaderModule");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, reflection->pushConstantSize};
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.pushConstantRangeCount = 1;
  layoutInfo.pPushConstantRanges = &range;
  VkPipelineLayout layout;
  check(vkCreatePipelineLayout(vk, &layoutInfo, nullptr, &layout), "vkCreatePipelineLayout");
  const uint32_t wg[3] = {slice, 1, 1};
  VkSpecializationMapEntry entries[3] = {{kWorkgroupSizeSpecBase, 0, 4}, {kWorkgroupSizeSpecBase + 1, 4, 4},
                                         {kWorkgroupSizeSpecBase + 2, 8, 4}};
  VkSpecializationInfo spec{3, entries, sizeof wg, wg};
  VkComputePipelineCreateInfo pipelineInfo{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipelineInfo.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT,
                        module, "main", &spec};
  pipelineInfo.layout = layout;
  VkPipeline pipeline;
  check(vkCreateComputePipelines(vk, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &pipeline), "vkCreateComputePipelines");
  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = native.queueFamily;
  VkCommandPool pool;
  check(vkCreateCommandPool(vk, &poolInfo, nullptr, &pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo allocInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                        VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
  VkCommandBuffer cmd;
  check(vkAllocateCommandBuffers(vk, &allocInfo, &cmd), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  check(vkCreateFence(vk, &fenceInfo, nullptr, &fence), "vkCreateFence");

  auto recordRaw = [&] {
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    struct {
      uint32_t grid[3], reserved;
      uint64_t src, dst, params;
    } push{{slice, 1, 1}, 0, 0, 0, params.deviceAddress()};
    for (uint32_t i = 0; i < dispatches; ++i) {
      push.src = in.deviceAddress() + uint64_t(i) * slice * 4;
      push.dst = out.deviceAddress() + uint64_t(i) * slice * 4;
      vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
      vkCmdDispatch(cmd, 1, 1, 1);
    }
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    check(vkQueueSubmit(queue, 1, &submit, fence), "vkQueueSubmit");
  };
  auto finishRaw = [&] {
    check(vkWaitForFences(vk, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(vk, 1, &fence), "vkResetFences");
  };
  recordRaw();
  finishRaw();
  // Interleaved runs, best of N: the host is shared and lavapipe executes earlier batches on the same cores.
  std::vector<double> streamUs, rawUs;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    recordStream();
    auto t1 = Clock::now();
    stream.synchronize();
    streamUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / dispatches);
    t0 = Clock::now();
    recordRaw();
    t1 = Clock::now();
    finishRaw();
    rawUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / dispatches);
  }
  vkDestroyFence(vk, fence, nullptr);
  vkDestroyCommandPool(vk, pool, nullptr);
  vkDestroyPipeline(vk, pipeline, nullptr);
  vkDestroyPipelineLayout(vk, layout, nullptr);
  vkDestroyShaderModule(vk, module, nullptr);

  Stream::Stats stats = stream.stats();
  auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double ours = best(streamUs), raw = best(rawUs);
  std::printf("dispatches per run      : %u (x%d interleaved runs; best, median in brackets)\n", dispatches, repeats);
  std::printf("m2v::Stream             : %.3f us/dispatch [%.3f] (%llu barriers, %llu submissions total)\n", ours,
              median(streamUs), (unsigned long long)stats.barriers, (unsigned long long)stats.submissions);
  std::printf("raw Vulkan              : %.3f us/dispatch [%.3f]\n", raw, median(rawUs));
  std::printf("ratio stream/raw        : %.2fx (target <= 1.5x, < 2 us)\n", ours / raw);
  return 0;
}
