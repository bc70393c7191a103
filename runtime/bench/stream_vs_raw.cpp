// The cost of m2v::Stream on the GPU: runs corpus cases (modules from `m2v sweep --compile-only --emit-modules`)
// through Stream and through a minimal raw-Vulkan host of its own (own VkDevice, only the features the modules need,
// the ABI of docs/ABI.md done by hand) in the same process, and prints GPU time, GB/s and the ratio per case. Both
// paths get the same inputs; their outputs must be identical bit for bit.
//
//   m2v_stream_vs_raw --modules DIR --corpus DIR [--filter TEXT] [--reps 20] [--warmup-ms 0]
//                     [--raw-bytes device,host,cached,bar] [--raw-dispatch-base] [--overhead N] [--chain N]
//
// --raw-bytes: where the raw host keeps setBytes data, one column per choice: device-local (filled by
//   vkCmdUpdateBuffer), host (host-visible, not host-cached, not device-local), cached (host-cached) or bar
//   (device-local and host-visible). The first choice is the reference of the ratio column.
// --warmup-ms MS: before each path's timed dispatches, run the same dispatch for MS milliseconds. Use 500 on a GPU:
//   an H200 idles its SM clock at 345 MHz and a burst of a few dispatches does not raise it
//   (bench/stream-vs-raw-h200.md).
// --raw-dispatch-base: create the raw pipelines with VK_PIPELINE_CREATE_DISPATCH_BASE_BIT, as the runtime does.
// --chain uses the first --raw-bytes choice for the raw host's size argument.
// --overhead N: host cost per dispatch of N one-element neg_int dispatches (independent outputs, no barriers), and
//   of one dispatch + synchronize()/fence wait, Stream against raw.
// --chain N: N dependent 256-thread neg_int dispatches (each reads what the previous one wrote; a barrier between
//   each), GPU time per dispatch (first start to last end timestamp) and host wall time, Stream against raw.
// The neg_int module (corpus/kernels/elementwise.metal) must be among the cases' modules for --overhead/--chain.
// Cases whose grid is not a whole number of threadgroups, or that use function constants, threadgroup lengths or
// address tables, are skipped (the raw host does one region and no constants).
// Exit status: 0 when every case that ran did so on both paths with identical outputs, at least one case ran, and
// no validation message came (M2V_VALIDATION=1 turns the layer on for both paths); else 1.
// Links only m2v_runtime and m2v_corpus (no LLVM): copy the binary and the module folder to a GPU machine.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "Corpus.h"
#include "host_types.h"
#include "metal2vk/runtime.h"

using namespace m2v;
using Clock = std::chrono::steady_clock;
const Clock::time_point processStart = Clock::now();

namespace {

void vkOk(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed: VkResult " + std::to_string(int(r)));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Destroys what was registered, last first, when it goes out of scope.
class Cleanup {
 public:
  Cleanup() = default;
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;
  ~Cleanup() {
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) (*it)();
  }
  void add(std::function<void()> step) { steps_.push_back(std::move(step)); }

 private:
  std::vector<std::function<void()>> steps_;
};

enum class BytesMemory { Device, Host, Cached, Bar };
const char* bytesMemoryName(BytesMemory m) {
  switch (m) {
    case BytesMemory::Device:
      return "device";
    case BytesMemory::Host:
      return "host";
    case BytesMemory::Cached:
      return "cached";
    case BytesMemory::Bar:
      return "bar";
  }
  return "?";
}

struct RawBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t address = 0;
  void* host = nullptr;
  uint32_t memoryType = 0;
};

// The abort word (docs/ABI.md) of a module built with abort checks: a word the raw host never sets, at the offset the
// reflection gives. `push` holds at least r.pushConstantSize bytes.
void pushAbortWord(void* push, const KernelReflection& r, const RawBuffer& neverSet) {
  if (r.abortWordOffset) std::memcpy(static_cast<uint8_t*>(push) + r.abortWordOffset, &neverSet.address, 8);
}

// A minimal compute host: one device, one queue, one command buffer, one fence, one timestamp pool.
class RawHost {
 public:
  RawHost(const std::string& deviceName, const std::vector<std::string>& capabilities, bool validation,
          uint32_t maxQueries) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_3;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* debugExtension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    if (validation) {
      ici.enabledLayerCount = 1;
      ici.ppEnabledLayerNames = &layer;
      ici.enabledExtensionCount = 1;
      ici.ppEnabledExtensionNames = &debugExtension;
    }
    vkOk(vkCreateInstance(&ici, nullptr, &instance_), "vkCreateInstance");
    if (validation) {
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
      destroyMessenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
      VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
      mci.messageSeverity =
          VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
      mci.pfnUserCallback = [](VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                               const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) -> VkBool32 {
        std::fprintf(stderr, "[raw validation] %s\n", data->pMessage ? data->pMessage : "");
        ++*static_cast<int*>(user);
        return VK_FALSE;
      };
      mci.pUserData = &validationMessages;
      if (create) vkOk(create(instance_, &mci, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
    }

    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance_, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance_, &count, devices.data());
    for (VkPhysicalDevice d : devices) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(d, &p);
      if (deviceName == p.deviceName) {
        physical_ = d;
        properties_ = p;
        break;
      }
    }
    if (!physical_) throw std::runtime_error("raw host: no device named " + deviceName);
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, families.data());
    for (uint32_t i = 0; i < count; ++i)
      if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        family_ = i;
        break;
      }

    // Only what the ABI and the modules' capabilities need.
    auto needs = [&](const char* cap) {
      return std::find(capabilities.begin(), capabilities.end(), cap) != capabilities.end();
    };
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &f11;
    f11.pNext = &f12;
    f12.pNext = &f13;
    f12.bufferDeviceAddress = VK_TRUE;
    f2.features.shaderInt64 = VK_TRUE;  // 64-bit addresses
    f2.features.shaderInt16 = needs("Int16");
    f2.features.shaderFloat64 = needs("Float64");
    f12.shaderInt8 = needs("Int8");
    f12.shaderFloat16 = needs("Float16");
    f11.storageBuffer16BitAccess = needs("StorageBuffer16BitAccess");
    f12.storageBuffer8BitAccess = needs("StorageBuffer8BitAccess");
    f12.vulkanMemoryModel = needs("VulkanMemoryModel");
    f12.vulkanMemoryModelDeviceScope = needs("VulkanMemoryModelDeviceScope");
    f13.maintenance4 = VK_TRUE;         // modules declare their workgroup size with LocalSizeId (docs/ABI.md)
    f13.subgroupSizeControl = VK_TRUE;  // required_subgroup_size 32 (simdgroup kernels)
    f13.computeFullSubgroups = VK_TRUE;
    float priority = 1;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f2;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    vkOk(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, family_, 0, &queue_);

    VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpi.queueFamilyIndex = family_;
    vkOk(vkCreateCommandPool(device_, &cpi, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cbai.commandPool = pool_;
    cbai.commandBufferCount = 1;
    vkOk(vkAllocateCommandBuffers(device_, &cbai, &cmd_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vkOk(vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
    VkQueryPoolCreateInfo qpci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpci.queryCount = maxQueries;
    vkOk(vkCreateQueryPool(device_, &qpci, nullptr, &queries_), "vkCreateQueryPool");
    maxQueries_ = maxQueries;
  }
  RawHost(const RawHost&) = delete;
  RawHost& operator=(const RawHost&) = delete;
  ~RawHost() {
    if (device_) {
      vkDeviceWaitIdle(device_);
      vkDestroyQueryPool(device_, queries_, nullptr);
      vkDestroyFence(device_, fence_, nullptr);
      vkDestroyCommandPool(device_, pool_, nullptr);
      vkDestroyDevice(device_, nullptr);
    }
    if (messenger_ && destroyMessenger_) destroyMessenger_(instance_, messenger_, nullptr);
    if (instance_) vkDestroyInstance(instance_, nullptr);
  }

  VkDevice device() const { return device_; }
  VkCommandBuffer cmd() const { return cmd_; }
  VkQueryPool queries() const { return queries_; }
  double periodNs() const { return properties_.limits.timestampPeriod; }
  int validationMessages = 0;

  // Memory type with all of `want` and none of `avoid`; -1 when there is none.
  int memoryType(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const {
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
      VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
      if ((bits >> i & 1) && (f & want) == want && !(f & avoid)) return int(i);
    }
    return -1;
  }
  std::string describeMemoryTypes() const {
    std::ostringstream s;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
      VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
      s << "  type " << i << " heap " << memory_.memoryTypes[i].heapIndex << " ("
        << memory_.memoryHeaps[memory_.memoryTypes[i].heapIndex].size / (1 << 20)
        << " MiB):" << (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT ? " device-local" : "")
        << (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT ? " host-visible" : "")
        << (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT ? " coherent" : "")
        << (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? " cached" : "") << "\n";
    }
    return s.str();
  }

  // Memory type for `kind`: "device", "staging" (host-visible, cached when possible) or "bytes-" + a BytesMemory
  // name for setBytes data. A device without the asked-for kind (lavapipe has one type with every flag) gets the
  // closest one; -1 when nothing fits.
  int memoryTypeFor(uint32_t bits, const std::string& kind) const {
    const VkMemoryPropertyFlags visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    int type = -1;
    if (kind == "device" || kind == "bytes-device")
      type = memoryType(bits, local, 0);
    else if (kind == "bytes-host")
      type = memoryType(bits, visible, cached | local);
    else if (kind == "bytes-cached")
      type = memoryType(bits, visible | cached, local);
    else if (kind == "bytes-bar")
      type = memoryType(bits, visible | local, 0);
    else
      type = memoryType(bits, visible | cached, 0);
    if (type < 0 && kind != "device" && kind != "bytes-device") type = memoryType(bits, visible, 0);
    return type;
  }
  std::string describeKind(const std::string& kind) {
    Cleanup scratch;
    return std::to_string(buffer(scratch, 256, kind).memoryType);
  }

  RawBuffer buffer(Cleanup& owner, VkDeviceSize size, const std::string& kind) {
    RawBuffer b;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    vkOk(vkCreateBuffer(device_, &bci, nullptr, &b.buffer), "vkCreateBuffer");
    VkDevice dev = device_;
    VkBuffer handle = b.buffer;
    owner.add([dev, handle] { vkDestroyBuffer(dev, handle, nullptr); });
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(device_, b.buffer, &mr);
    const int type = memoryTypeFor(mr.memoryTypeBits, kind);
    const bool mapped = kind != "device" && kind != "bytes-device";
    if (type < 0) throw std::runtime_error("raw host: no memory type for " + kind);
    b.memoryType = uint32_t(type);
    VkMemoryAllocateFlagsInfo fi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    fi.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.pNext = &fi;
    mai.allocationSize = mr.size;
    mai.memoryTypeIndex = uint32_t(type);
    vkOk(vkAllocateMemory(device_, &mai, nullptr, &b.memory), "vkAllocateMemory");
    VkDeviceMemory memory = b.memory;
    owner.add([dev, memory] { vkFreeMemory(dev, memory, nullptr); });
    vkOk(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (mapped) vkOk(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.host), "vkMapMemory");
    VkBufferDeviceAddressInfo bai{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    bai.buffer = b.buffer;
    b.address = vkGetBufferDeviceAddress(device_, &bai);
    return b;
  }

  struct Pipeline {
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
  };
  // Workgroup size and nominal threadgroup size `tg` (one region: the grid is a whole number of threadgroups).
  // `emulateSimdgroups`: the module's emulated simdgroups (docs/ABI.md, "Subgroups"), as the Stream's kernel runs
  // them on this device; then no subgroup size is required.
  Pipeline pipeline(Cleanup& owner, const std::vector<uint32_t>& words, const KernelReflection& r, const Size3& tg,
                    bool dispatchBase, bool emulateSimdgroups = false) {
    Pipeline p;
    VkDevice dev = device_;
    VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smci.codeSize = words.size() * 4;
    smci.pCode = words.data();
    VkShaderModule module;
    vkOk(vkCreateShaderModule(device_, &smci, nullptr, &module), "vkCreateShaderModule");
    owner.add([dev, module] { vkDestroyShaderModule(dev, module, nullptr); });
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, r.pushConstantSize};
    VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    plci.pushConstantRangeCount = 1;
    plci.pPushConstantRanges = &range;
    vkOk(vkCreatePipelineLayout(device_, &plci, nullptr, &p.layout), "vkCreatePipelineLayout");
    VkPipelineLayout layout = p.layout;
    owner.add([dev, layout] { vkDestroyPipelineLayout(dev, layout, nullptr); });
    const uint32_t values[7] = {tg.x, tg.y, tg.z, tg.x, tg.y, tg.z, 1};
    VkSpecializationMapEntry entries[7];
    for (uint32_t i = 0; i < 6; ++i) entries[i] = {kWorkgroupSizeSpecBase + i, 4 * i, 4};  // 131072..131077
    entries[6] = {kEmulateSimdgroupsSpecId, 24, 4};
    VkSpecializationInfo spec{emulateSimdgroups ? 7u : 6u, entries, sizeof values, values};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    subgroup.requiredSubgroupSize = emulateSimdgroups ? 0 : r.requiredSubgroupSize;
    VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpci.flags = dispatchBase ? VK_PIPELINE_CREATE_DISPATCH_BASE_BIT : 0;
    cpci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  subgroup.requiredSubgroupSize ? &subgroup : nullptr,
                  0,
                  VK_SHADER_STAGE_COMPUTE_BIT,
                  module,
                  r.spirvEntry.c_str(),
                  &spec};
    cpci.layout = p.layout;
    vkOk(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cpci, nullptr, &p.pipeline), "vkCreateComputePipelines");
    VkPipeline pipeline = p.pipeline;
    owner.add([dev, pipeline] { vkDestroyPipeline(dev, pipeline, nullptr); });
    return p;
  }

  void begin(bool resetQueries = true) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkOk(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    if (resetQueries) vkCmdResetQueryPool(cmd_, queries_, 0, maxQueries_);
  }
  void submit() {
    vkOk(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd_;
    vkOk(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
  }
  void wait() {
    vkOk(vkWaitForFences(device_, 1, &fence_, VK_TRUE, 60ull * 1000000000ull), "vkWaitForFences");
    vkOk(vkResetFences(device_, 1, &fence_), "vkResetFences");
  }
  std::vector<uint64_t> timestamps(uint32_t count) {
    std::vector<uint64_t> ticks(count);
    if (count)
      vkOk(vkGetQueryPoolResults(device_, queries_, 0, count, count * 8, ticks.data(), 8,
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
           "vkGetQueryPoolResults");
    return ticks;
  }
  // Shader writes (and transfers) before, shader reads/writes (and transfers) after.
  void barrier() {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  void hostBarrier() {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                         nullptr);
  }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroyMessenger_ = nullptr;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  uint32_t family_ = 0;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  uint32_t maxQueries_ = 0;
};

// ---- case data ----------------------------------------------------------------------------------------------

std::vector<uint8_t> packBytes(const corpus::BytesSpec& b) {  // natural alignment, as the corpus runner packs them
  std::vector<uint8_t> out;
  size_t align = 1;
  for (const corpus::BytesField& f : b.fields) {
    size_t size = host::dtypeSize(f.dtype);
    align = std::max(align, size);
    out.resize((out.size() + size - 1) / size * size);
    for (double v : f.values) {
      out.resize(out.size() + size);
      host::storeElement(f.dtype, v, &out[out.size() - size]);
    }
  }
  out.resize(std::max<size_t>(4, (out.size() + align - 1) / align * align));
  return out;
}

// Inputs for a buffer from its manifest init (rand LO HI, iota, const, zero, bits); outputs are poisoned (0xff).
std::vector<uint8_t> initialContents(const corpus::BufferSpec& b, uint64_t seed) {
  const size_t n = b.count(), es = host::dtypeSize(b.dtype);
  std::vector<uint8_t> data(n * es, b.role == "out" ? 0xff : 0);
  if (b.role == "out" || b.role == "scratch") return data;
  auto arg = [&](size_t i, double def) {
    return i < b.initArgs.size() ? std::strtod(b.initArgs[i].c_str(), nullptr) : def;
  };
  std::mt19937_64 rng(seed);
  const bool isFloat = b.dtype[0] == 'f' || b.dtype == "bf16";
  const double lo = arg(0, -1), hi = arg(1, 1);
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    if (b.init == "rand") {
      double u = double(rng() >> 11) * 0x1p-53;
      v = lo + u * (hi - lo);
      if (!isFloat) v = std::floor(v);
    } else if (b.init == "iota") {
      v = arg(0, 0) + double(i) * arg(1, 1);
    } else if (b.init == "const") {
      v = arg(0, 0);
    } else if (b.init == "bits") {
      uint64_t bits = rng();
      std::memcpy(&data[i * es], &bits, es);
      continue;
    }
    host::storeElement(b.dtype, v, &data[i * es]);
  }
  return data;
}

uint64_t seedOf(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

struct PathResult {
  double medianNs = 0;
  std::map<uint32_t, std::vector<uint8_t>> outputs;  // by buffer index
};

struct Options {
  std::string modulesDir, corpusDir, filter;
  int reps = 20, warmup = 2;
  int warmupMs = 0;  // before the timed dispatches, keep the GPU busy with the same dispatch for this long
  std::vector<BytesMemory> rawBytes = {BytesMemory::Device};
  bool rawDispatchBase = false;
  uint32_t overhead = 0, chain = 0;
};

// ---- Stream path --------------------------------------------------------------------------------------------

PathResult runStream(Device& device, const Kernel& kernel, const corpus::Case& c,
                     const std::map<uint32_t, std::vector<uint8_t>>& inputs, const Options& o) {
  StreamOptions so;
  so.timestamps = true;
  Stream stream = device.createStream(so);
  std::map<uint32_t, Buffer> buffers;
  for (const corpus::BufferSpec& b : c.buffers) {
    const std::vector<uint8_t>& data = inputs.at(b.index);
    Buffer buffer = device.createBuffer(std::max<size_t>((data.size() + 3) / 4 * 4, 4));
    if (b.role == "out")
      stream.fillBytes(buffer, 0, buffer.size(), 0xff);
    else
      stream.upload(buffer, 0, data.data(), data.size());
    buffers[b.index] = buffer;
  }
  stream.synchronize();
  stream.setKernel(kernel);
  for (auto& [index, buffer] : buffers) stream.setBuffer(buffer, 0, index);
  for (const corpus::BytesSpec& b : c.bytes) {
    std::vector<uint8_t> packed = packBytes(b);
    stream.setBytes(packed.data(), packed.size(), b.index);
  }
  auto dispatch = [&] {
    if (c.groups)
      stream.dispatchThreadgroups(c.grid, c.threadgroup);
    else
      stream.dispatchThreads(c.grid, c.threadgroup);
  };
  for (auto start = Clock::now(); Clock::now() - start < std::chrono::milliseconds(o.warmupMs);) {
    for (int i = 0; i < 16; ++i) dispatch();
    stream.synchronize();
  }
  (void)stream.takeTimings();
  for (int i = 0; i < o.warmup + o.reps; ++i) dispatch();
  stream.synchronize();
  std::vector<DispatchTiming> timings = stream.takeTimings();
  std::vector<double> ns;
  for (size_t i = size_t(o.warmup); i < timings.size(); ++i) ns.push_back(timings[i].gpuNs);
  PathResult r;
  r.medianNs = median(ns);
  for (const corpus::BufferSpec& b : c.buffers) {
    if (b.role != "out" && b.role != "inout") continue;
    std::vector<uint8_t>& out = r.outputs[b.index];
    out.resize(inputs.at(b.index).size());
    stream.enqueueReadback(buffers[b.index], 0, out.data(), out.size());
  }
  stream.synchronize();
  return r;
}

// ---- raw path -----------------------------------------------------------------------------------------------

Size3 groupsOf(const corpus::Case& c) {
  if (c.groups) return c.grid;
  return {c.grid.x / c.threadgroup.x, c.grid.y / c.threadgroup.y, c.grid.z / c.threadgroup.z};
}
Size3 gridOf(const corpus::Case& c) {
  if (!c.groups) return c.grid;
  return {c.grid.x * c.threadgroup.x, c.grid.y * c.threadgroup.y, c.grid.z * c.threadgroup.z};
}

PathResult runRaw(RawHost& raw, const corpus::CompiledEntry& module, const corpus::Case& c,
                  const std::map<uint32_t, std::vector<uint8_t>>& inputs, const Options& o, BytesMemory bytesMemory,
                  bool emulateSimdgroups) {
  Cleanup owner;
  const KernelReflection& r = module.reflection;
  std::map<uint32_t, RawBuffer> buffers;
  std::map<uint32_t, RawBuffer> staging;
  raw.begin();
  for (const corpus::BufferSpec& b : c.buffers) {
    const std::vector<uint8_t>& data = inputs.at(b.index);
    VkDeviceSize size = std::max<size_t>((data.size() + 3) / 4 * 4, 4);
    buffers[b.index] = raw.buffer(owner, size, "device");
    staging[b.index] = raw.buffer(owner, size, "staging");
    if (b.role == "out") {
      vkCmdFillBuffer(raw.cmd(), buffers[b.index].buffer, 0, VK_WHOLE_SIZE, 0xffffffffu);
    } else {
      std::memcpy(staging[b.index].host, data.data(), data.size());
      VkBufferCopy region{0, 0, size};
      vkCmdCopyBuffer(raw.cmd(), staging[b.index].buffer, buffers[b.index].buffer, 1, &region);
    }
  }
  for (const corpus::BytesSpec& b : c.bytes) {
    std::vector<uint8_t> packed = packBytes(b);
    packed.resize((packed.size() + 3) / 4 * 4);
    RawBuffer buffer = raw.buffer(owner, packed.size(), std::string("bytes-") + bytesMemoryName(bytesMemory));
    if (buffer.host)
      std::memcpy(buffer.host, packed.data(), packed.size());
    else
      vkCmdUpdateBuffer(raw.cmd(), buffer.buffer, 0, packed.size(), packed.data());
    buffers[b.index] = buffer;
  }
  raw.barrier();

  // Push block per docs/ABI.md: grid, reserved, then one address per buffer argument.
  alignas(8) uint8_t push[kPushConstantLimit] = {};
  const Size3 grid = gridOf(c), groups = groupsOf(c);
  const uint32_t gridWords[3] = {grid.x, grid.y, grid.z};
  std::memcpy(push + kPushGridOffset, gridWords, sizeof gridWords);
  for (const PushArg& a : r.args) {
    auto it = buffers.find(a.buffer);
    uint64_t address = it == buffers.end() ? 0 : it->second.address;
    std::memcpy(push + a.offset, &address, 8);
  }
  RawBuffer abortWord = raw.buffer(owner, 4, "staging");
  std::memset(abortWord.host, 0, 4);
  pushAbortWord(push, r, abortWord);
  RawHost::Pipeline p = raw.pipeline(owner, module.spirv, r, c.threadgroup, o.rawDispatchBase, emulateSimdgroups);
  raw.submit();  // uploads
  raw.wait();
  for (auto start = Clock::now(); Clock::now() - start < std::chrono::milliseconds(o.warmupMs);) {
    raw.begin(false);
    vkCmdBindPipeline(raw.cmd(), VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdPushConstants(raw.cmd(), p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, r.pushConstantSize, push);
    for (int i = 0; i < 16; ++i) {
      raw.barrier();
      vkCmdDispatch(raw.cmd(), groups.x, groups.y, groups.z);
    }
    raw.submit();
    raw.wait();
  }
  raw.begin();
  raw.barrier();
  vkCmdBindPipeline(raw.cmd(), VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdPushConstants(raw.cmd(), p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, r.pushConstantSize, push);
  const int total = o.warmup + o.reps;
  for (int i = 0; i < total; ++i) {
    if (i) raw.barrier();  // every dispatch rewrites the outputs of the previous one
    vkCmdWriteTimestamp(raw.cmd(), VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, raw.queries(), 2 * i);
    vkCmdDispatch(raw.cmd(), groups.x, groups.y, groups.z);
    vkCmdWriteTimestamp(raw.cmd(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, raw.queries(), 2 * i + 1);
  }
  raw.barrier();
  for (const corpus::BufferSpec& b : c.buffers) {
    if (b.role != "out" && b.role != "inout") continue;
    VkBufferCopy region{0, 0, std::max<size_t>((inputs.at(b.index).size() + 3) / 4 * 4, 4)};
    vkCmdCopyBuffer(raw.cmd(), buffers[b.index].buffer, staging[b.index].buffer, 1, &region);
  }
  raw.hostBarrier();
  raw.submit();
  raw.wait();
  std::vector<uint64_t> ticks = raw.timestamps(uint32_t(2 * total));
  std::vector<double> ns;
  for (int i = o.warmup; i < total; ++i) ns.push_back(double(ticks[2 * i + 1] - ticks[2 * i]) * raw.periodNs());
  PathResult result;
  result.medianNs = median(ns);
  for (const corpus::BufferSpec& b : c.buffers) {
    if (b.role != "out" && b.role != "inout") continue;
    const uint8_t* host = static_cast<const uint8_t*>(staging[b.index].host);
    result.outputs[b.index].assign(host, host + inputs.at(b.index).size());
  }
  return result;
}

// ---- one-element and chained neg_int dispatches --------------------------------------------------------------

struct SmallKernel {
  const corpus::CompiledEntry* module = nullptr;
  Kernel kernel;
};

void measureOverhead(Device& device, RawHost& raw, const SmallKernel& k, uint32_t dispatches) {
  const KernelReflection& r = k.module->reflection;
  const uint32_t size = 1;
  // Stream: independent one-element dispatches (each its own 256-byte slice of y), no barriers.
  Buffer x = device.createBuffer(size_t(dispatches) * 256), y = device.createBuffer(size_t(dispatches) * 256);
  Stream stream = device.createStream();
  stream.fill(x, 0, x.size(), 7);
  stream.setKernel(k.kernel);
  stream.setBytes(&size, 4, 2);
  auto recordStream = [&](uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      stream.setBuffer(x, size_t(i) * 256, 0);
      stream.setBufferRange(y, size_t(i) * 256, 256, 1);
      stream.dispatchThreads({1, 1, 1}, {1, 1, 1});
    }
    stream.commit();
  };
  recordStream(dispatches);
  stream.synchronize();

  Cleanup owner;
  RawBuffer rx = raw.buffer(owner, size_t(dispatches) * 256, "device");
  RawBuffer ry = raw.buffer(owner, size_t(dispatches) * 256, "device");
  RawBuffer rsize = raw.buffer(owner, 4, "bytes-device");
  RawHost::Pipeline p = raw.pipeline(owner, k.module->spirv, r, {1, 1, 1}, false);
  struct Push {
    uint32_t grid[3] = {1, 1, 1}, reserved = 0;
    uint64_t args[14] = {};  // the buffers, then the abort word's address where the module has one
  } push;
  RawBuffer abortWord = raw.buffer(owner, 4, "staging");
  std::memset(abortWord.host, 0, 4);
  pushAbortWord(&push, r, abortWord);
  auto slot = [&](uint32_t buffer) {
    const PushArg* a = r.argForBuffer(buffer);
    return a ? (a->offset - kPushArgsOffset) / 8 : 0;
  };
  raw.begin();
  vkCmdUpdateBuffer(raw.cmd(), rsize.buffer, 0, 4, &size);
  raw.barrier();
  raw.submit();
  raw.wait();
  auto recordRaw = [&](uint32_t count) {
    raw.begin(false);
    vkCmdBindPipeline(raw.cmd(), VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    push.args[slot(2)] = rsize.address;
    for (uint32_t i = 0; i < count; ++i) {
      push.args[slot(0)] = rx.address + uint64_t(i) * 256;
      push.args[slot(1)] = ry.address + uint64_t(i) * 256;
      vkCmdPushConstants(raw.cmd(), p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, r.pushConstantSize, &push);
      vkCmdDispatch(raw.cmd(), 1, 1, 1);
    }
    raw.submit();
  };
  std::vector<double> streamUs, rawUs, streamSyncUs, rawSyncUs;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = Clock::now();
    recordStream(dispatches);
    auto t1 = Clock::now();
    stream.synchronize();
    streamUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / dispatches);
    t0 = Clock::now();
    recordRaw(dispatches);
    t1 = Clock::now();
    raw.wait();
    rawUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / dispatches);
  }
  for (int rep = 0; rep < 200; ++rep) {  // one dispatch, then wait for it
    auto t0 = Clock::now();
    recordStream(1);
    stream.synchronize();
    auto t1 = Clock::now();
    recordRaw(1);
    raw.wait();
    auto t2 = Clock::now();
    streamSyncUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    rawSyncUs.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  double s = median(streamUs), w = median(rawUs);
  std::printf(
      "overhead: %u one-element dispatches, host us/dispatch (median of 7): Stream %.3f, raw %.3f, ratio %.2f\n",
      dispatches, s, w, s / w);
  double ss = median(streamSyncUs), ws = median(rawSyncUs);
  std::printf(
      "overhead: one dispatch + wait, host us (median of 200): Stream synchronize() %.1f, raw fence %.1f, "
      "ratio %.2f\n",
      ss, ws, ss / ws);
}

bool measureChain(Device& device, RawHost& raw, const SmallKernel& k, uint32_t length, BytesMemory bytesMemory,
                  int warmupMs) {
  const KernelReflection& r = k.module->reflection;
  const uint32_t n = 256;
  std::vector<int32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = int32_t(i) - 100;
  std::vector<int32_t> streamOut(n), rawOut(n);
  Buffer a = device.createBuffer(n * 4), b = device.createBuffer(n * 4);
  Cleanup owner;
  RawBuffer ra = raw.buffer(owner, n * 4, "device"), rb = raw.buffer(owner, n * 4, "device");
  RawBuffer rsize = raw.buffer(owner, 4, std::string("bytes-") + bytesMemoryName(bytesMemory));
  RawBuffer out = raw.buffer(owner, n * 4, "staging");
  RawBuffer in = raw.buffer(owner, n * 4, "staging");
  std::memcpy(in.host, init.data(), n * 4);
  RawHost::Pipeline p = raw.pipeline(owner, k.module->spirv, r, {n, 1, 1}, false);
  RawBuffer abortWord = raw.buffer(owner, 4, "staging");
  std::memset(abortWord.host, 0, 4);
  auto slot = [&](uint32_t buffer) {
    const PushArg* arg = r.argForBuffer(buffer);
    return arg ? (arg->offset - kPushArgsOffset) / 8 : 0;
  };
  // timestamps: 0 none, 1 at both ends only, 2 around every dispatch (as Stream's timed mode does)
  auto runRawChain = [&](int timestamps, double& spanNs, double& wallUs) {
    raw.begin();
    VkBufferCopy region{0, 0, n * 4};
    vkCmdCopyBuffer(raw.cmd(), in.buffer, ra.buffer, 1, &region);
    if (rsize.host)
      std::memcpy(rsize.host, &n, 4);
    else
      vkCmdUpdateBuffer(raw.cmd(), rsize.buffer, 0, 4, &n);
    raw.barrier();
    raw.submit();
    raw.wait();
    auto t0 = Clock::now();
    raw.begin();
    vkCmdBindPipeline(raw.cmd(), VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    struct Push {
      uint32_t grid[3] = {256, 1, 1}, reserved = 0;
      uint64_t args[14] = {};  // the buffers, then the abort word's address where the module has one
    } push;
    pushAbortWord(&push, r, abortWord);
    push.args[slot(2)] = rsize.address;
    uint32_t query = 0;
    for (uint32_t i = 0; i < length; ++i) {
      if (i) raw.barrier();
      push.args[slot(0)] = i % 2 ? rb.address : ra.address;
      push.args[slot(1)] = i % 2 ? ra.address : rb.address;
      vkCmdPushConstants(raw.cmd(), p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, r.pushConstantSize, &push);
      if (timestamps == 2 || (timestamps == 1 && i == 0))
        vkCmdWriteTimestamp(raw.cmd(), VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, raw.queries(), query++);
      vkCmdDispatch(raw.cmd(), 1, 1, 1);
      if (timestamps == 2 || (timestamps == 1 && i + 1 == length))
        vkCmdWriteTimestamp(raw.cmd(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, raw.queries(), query++);
    }
    raw.barrier();
    VkBufferCopy back{0, 0, n * 4};
    vkCmdCopyBuffer(raw.cmd(), length % 2 ? rb.buffer : ra.buffer, out.buffer, 1, &back);
    raw.hostBarrier();
    raw.submit();
    raw.wait();
    wallUs = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    std::vector<uint64_t> ticks = raw.timestamps(query);
    spanNs = query ? double(ticks[query - 1] - ticks[0]) * raw.periodNs() : 0;
    std::memcpy(rawOut.data(), out.host, n * 4);
  };
  double rawSpanPer = 0, rawSpanEnds = 0, rawWallPlain = 0, ignored = 0;
  for (auto start = Clock::now(); Clock::now() - start < std::chrono::milliseconds(warmupMs);)
    runRawChain(0, ignored, ignored);
  // Stream: a and b swap roles every dispatch (b = -a, a = -b, ...): each dispatch reads the previous one's output.
  StreamOptions timed;
  timed.timestamps = true;
  timed.batchSize = length;  // one command buffer, like the raw host
  double streamSpan = 0, streamWall = 0;
  for (int pass = 0; pass < 2; ++pass) {  // pass 0 warms up, pass 1 is measured
    Stream stream = device.createStream(timed);
    stream.upload(a, 0, init.data(), n * 4);
    stream.synchronize();
    stream.setKernel(k.kernel);
    stream.setBytes(&n, 4, 2);
    auto t0 = Clock::now();
    for (uint32_t i = 0; i < length; ++i) {
      stream.setBuffer(i % 2 ? b : a, 0, 0);
      stream.setBuffer(i % 2 ? a : b, 0, 1);
      stream.dispatchThreads({n, 1, 1}, {n, 1, 1});
    }
    stream.synchronize();
    auto t1 = Clock::now();
    std::vector<DispatchTiming> t = stream.takeTimings();
    streamSpan = t.empty() ? 0 : t.back().endNs - t.front().startNs;
    streamWall = std::chrono::duration<double, std::micro>(t1 - t0).count();
    stream.readback(length % 2 ? b : a, 0, streamOut.data(), n * 4);
  }
  // Same with timestamps off and the default batch size: host wall time only.
  double streamPlainWall = 0;
  {
    Stream stream = device.createStream();
    stream.setKernel(k.kernel);
    stream.setBytes(&n, 4, 2);
    for (int pass = 0; pass < 2; ++pass) {
      auto t0 = Clock::now();
      for (uint32_t i = 0; i < length; ++i) {
        stream.setBuffer(i % 2 ? b : a, 0, 0);
        stream.setBuffer(i % 2 ? a : b, 0, 1);
        stream.dispatchThreads({n, 1, 1}, {n, 1, 1});
      }
      stream.synchronize();
      streamPlainWall = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    }
  }

  for (int pass = 0; pass < 2; ++pass) {
    runRawChain(2, rawSpanPer, ignored);
    runRawChain(1, rawSpanEnds, ignored);
    runRawChain(0, ignored, rawWallPlain);
  }
  const bool same = streamOut == rawOut;
  std::printf(
      "chain: %u dependent 256-thread dispatches, barrier between each, raw setBytes memory '%s'; GPU "
      "us/dispatch, first start to last end:\n  Stream (timestamps around each) %.3f, raw (same timestamps) %.3f, "
      "ratio %.2f; raw (timestamps at the"
      " ends only) %.3f\n",
      length, bytesMemoryName(bytesMemory), streamSpan / 1e3 / length, rawSpanPer / 1e3 / length,
      streamSpan / rawSpanPer, rawSpanEnds / 1e3 / length);
  std::printf(
      "  host wall us/dispatch (record + submit + wait): Stream, timestamps on, one batch %.3f; Stream, "
      "defaults (batches of 256) %.3f; raw, no timestamps %.3f; outputs %s\n",
      streamWall / length, streamPlainWall / length, rawWallPlain / length, same ? "identical" : "DIFFER");
  return same;
}

std::vector<BytesMemory> parseBytesMemory(const std::string& list) {
  std::vector<BytesMemory> out;
  std::stringstream ss(list);
  for (std::string part; std::getline(ss, part, ',');) {
    if (part == "device")
      out.push_back(BytesMemory::Device);
    else if (part == "host")
      out.push_back(BytesMemory::Host);
    else if (part == "cached")
      out.push_back(BytesMemory::Cached);
    else if (part == "bar")
      out.push_back(BytesMemory::Bar);
    else
      throw std::runtime_error("--raw-bytes: unknown memory '" + part + "' (device, host, cached, bar)");
  }
  if (out.empty()) throw std::runtime_error("--raw-bytes: empty list");
  return out;
}

int run(const Options& o) {
  std::vector<std::string> errors;
  std::vector<corpus::Case> cases = corpus::loadCorpus(o.corpusDir, o.filter, errors);
  for (const std::string& e : errors) std::fprintf(stderr, "%s\n", e.c_str());
  if (!errors.empty() || cases.empty()) {
    std::fprintf(stderr, "no cases in %s (filter '%s')\n", o.corpusDir.c_str(), o.filter.c_str());
    return 1;
  }
  corpus::Modules modules;
  std::string error;
  if (!corpus::readModules(o.modulesDir, cases, modules, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  DeviceOptions dopt;
  dopt.cacheDir = "-";
  Device device(dopt);
  std::printf("%s\n", device.describe().c_str());
  if (device.info().timestampPeriodNs == 0) {
    std::fprintf(stderr, "the device has no compute timestamps\n");
    return 1;
  }
  std::vector<std::string> capabilities;
  for (const auto& [key, m] : modules)
    capabilities.insert(capabilities.end(), m.reflection.capabilities.begin(), m.reflection.capabilities.end());
  const bool validation = device.info().validationEnabled;
  uint32_t queries = std::max<uint32_t>(2 * uint32_t(o.warmup + o.reps), 2 * std::max<uint32_t>(o.chain, 1));
  RawHost raw(device.info().name, capabilities, validation, queries);
  std::printf("memory types:\n%s", raw.describeMemoryTypes().c_str());
  std::printf("raw host memory types: buffers %s, staging %s", raw.describeKind("device").c_str(),
              raw.describeKind("staging").c_str());
  for (BytesMemory m : o.rawBytes)
    std::printf(", setBytes '%s' %s", bytesMemoryName(m),
                raw.describeKind(std::string("bytes-") + bytesMemoryName(m)).c_str());
  std::printf("\n");

  bool ok = true;
  int compared = 0;
  std::printf("%-26s %-24s %9s %11s", "case", "entry", "MiB", "Stream us");
  for (BytesMemory m : o.rawBytes) std::printf(" %11s", (std::string("raw/") + bytesMemoryName(m) + " us").c_str());
  std::printf(" %9s %9s %7s %s\n", "Stream GB/s", "raw GB/s", "ratio", "outputs");
  SmallKernel small;
  for (const corpus::Case& c : cases) {
    auto mit = modules.find(corpus::moduleKey(c.source, c.entry));
    if (mit == modules.end() || mit->second.stage < corpus::Stage::Valid) {
      std::printf("%-26s %-24s skipped: no usable module\n", c.name.c_str(), c.entry.c_str());
      continue;
    }
    const corpus::CompiledEntry& module = mit->second;
    bool uniform = c.groups || (c.grid.x % c.threadgroup.x == 0 && c.grid.y % c.threadgroup.y == 0 &&
                                c.grid.z % c.threadgroup.z == 0);
    bool plain = uniform && !module.reflection.argumentBuffer && c.constants.empty() && c.tgmem.empty() &&
                 module.reflection.functionConstants.empty();
    for (const corpus::BufferSpec& b : c.buffers) plain = plain && b.init != "addrtable";
    if (!plain) {
      std::printf("%-26s %-24s skipped: the raw host runs whole-threadgroup grids without constants or tables\n",
                  c.name.c_str(), c.entry.c_str());
      continue;
    }
    Kernel kernel;
    try {
      kernel = device.createKernel(module.spirv, module.reflection);
    } catch (const UnsupportedError& e) {
      std::printf("%-26s %-24s skipped: %s\n", c.name.c_str(), c.entry.c_str(), e.what());
      continue;
    }
    if (c.entry == "neg_int" && !small.module) small = {&module, kernel};
    std::map<uint32_t, std::vector<uint8_t>> inputs;
    double bytesMoved = 0;
    for (const corpus::BufferSpec& b : c.buffers) {
      inputs[b.index] = initialContents(b, seedOf(c.name) + b.index);
      bytesMoved += double(inputs[b.index].size());
    }
    PathResult s = runStream(device, kernel, c, inputs, o);
    std::vector<PathResult> rs;
    for (BytesMemory m : o.rawBytes) rs.push_back(runRaw(raw, module, c, inputs, o, m, kernel.emulatesSimdgroups()));
    bool same = true;
    for (const PathResult& r : rs) same = same && r.outputs == s.outputs;
    ok = ok && same;
    ++compared;
    std::printf("%-26s %-24s %9.1f %11.1f", c.name.c_str(), c.entry.c_str(), bytesMoved / (1 << 20), s.medianNs / 1e3);
    for (const PathResult& r : rs) std::printf(" %11.1f", r.medianNs / 1e3);
    std::printf(" %9.1f %9.1f %7.3f %s (t=%.1f s)\n", bytesMoved / s.medianNs, bytesMoved / rs[0].medianNs,
                rs[0].medianNs / s.medianNs, same ? "identical" : "DIFFER",
                std::chrono::duration<double>(Clock::now() - processStart).count());
    std::fflush(stdout);
  }
  std::printf(
      "ratio = raw time / Stream time (1.000: Stream costs nothing on the GPU); GB/s = bytes of all buffers / "
      "median time of %d dispatches after %d warm-ups (and %d ms of the same dispatches before them); t = "
      "seconds since start\n",
      o.reps, o.warmup, o.warmupMs);
  if (!compared) {
    std::fprintf(stderr, "no case ran on both paths\n");
    return 1;
  }
  if ((o.overhead || o.chain) && !small.module) {
    std::fprintf(stderr, "--overhead/--chain need the neg_int module among the cases\n");
    return 1;
  }
  if (o.overhead) measureOverhead(device, raw, small, o.overhead);
  if (o.chain) ok = measureChain(device, raw, small, o.chain, o.rawBytes[0], o.warmupMs) && ok;
  if (size_t n = device.validationMessageCount()) {
    std::fprintf(stderr, "%zu validation messages (Stream), first: %s\n", n, device.validationMessages()[0].c_str());
    ok = false;
  }
  if (raw.validationMessages) {
    std::fprintf(stderr, "%d validation messages (raw host)\n", raw.validationMessages);
    ok = false;
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* usage =
      "usage: m2v_stream_vs_raw --modules DIR --corpus DIR [--filter TEXT] [--reps 20] [--warmup-ms 0] [--raw-bytes "
      "device,host,"
      "cached,bar] [--raw-dispatch-base] [--overhead N] [--chain N]\n";
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--raw-dispatch-base") {
        o.rawDispatchBase = true;
        continue;
      }
      if (i + 1 >= argc) {
        std::fputs(usage, stderr);
        return 2;
      }
      std::string v = argv[++i];
      if (a == "--modules")
        o.modulesDir = v;
      else if (a == "--corpus")
        o.corpusDir = v;
      else if (a == "--filter")
        o.filter = v;
      else if (a == "--reps")
        o.reps = std::max(1, std::atoi(v.c_str()));
      else if (a == "--warmup-ms")
        o.warmupMs = std::max(0, std::atoi(v.c_str()));
      else if (a == "--raw-bytes")
        o.rawBytes = parseBytesMemory(v);
      else if (a == "--overhead")
        o.overhead = uint32_t(std::max(0, std::atoi(v.c_str())));
      else if (a == "--chain")
        o.chain = uint32_t(std::max(0, std::atoi(v.c_str())));
      else {
        std::fputs(usage, stderr);
        return 2;
      }
    }
    if (o.modulesDir.empty() || o.corpusDir.empty()) {
      std::fputs(usage, stderr);
      return 2;
    }
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "m2v_stream_vs_raw: %s\n", e.what());
    return 1;
  }
}
