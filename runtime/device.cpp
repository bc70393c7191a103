// Instance/device creation, device selection, validation log, buffers, persisted pipeline cache.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "internal.h"

#ifndef VK_KHR_cooperative_matrix
// Our Vulkan headers (1.3.239) predate VK_KHR_cooperative_matrix; the feature struct layout is fixed by the spec.
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
static constexpr VkStructureType kStructureTypeCooperativeMatrixFeaturesKhr = VkStructureType(1000506000);
struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};
#endif
// VK_KHR_shader_bfloat16 (the bfloat16 type, bfloat cooperative matrices), which our headers predate as well.
static constexpr const char* kShaderBfloat16ExtensionName = "VK_KHR_shader_bfloat16";
static constexpr VkStructureType kStructureTypeShaderBfloat16FeaturesKhr = VkStructureType(1000141000);
struct ShaderBfloat16FeaturesKhr {
  VkStructureType sType;
  void* pNext;
  VkBool32 shaderBFloat16Type;
  VkBool32 shaderBFloat16DotProduct;
  VkBool32 shaderBFloat16CooperativeMatrix;
};
// VkCooperativeMatrixPropertiesKHR, with the component types as plain integers (VK_COMPONENT_TYPE_*).
struct CooperativeMatrixPropertiesKhr {
  VkStructureType sType;
  void* pNext;
  uint32_t M, N, K;
  int32_t A, B, C, Result;
  VkBool32 saturatingAccumulation;
  int32_t scope;
};
#ifdef VK_KHR_cooperative_matrix
static constexpr VkStructureType kStructureTypeCooperativeMatrixFeaturesKhr =
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
#endif

namespace m2v {

namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------------------------
// Errors

const char* vkResultName(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    case VK_PIPELINE_COMPILE_REQUIRED: return "VK_PIPELINE_COMPILE_REQUIRED";
    default: return "VkResult(other)";
  }
}

void throwVkError(VkResult result, const char* what, DeviceState* device) {
  std::string message = std::string(what) + " failed: " + vkResultName(result) + " (" + std::to_string(result) + ")";
  if (result == VK_ERROR_DEVICE_LOST) {
    if (device) device->markFaulted("device lost in " + std::string(what));
    throw DeviceLostError("device lost: " + message);
  }
  throw DeviceError(message);
}

void DeviceState::markFaulted(const std::string& reason) {
  std::lock_guard lock(faultMutex);
  if (!faulted.exchange(true)) faultReason = reason;
}

std::string DeviceState::faultMessage() {
  std::lock_guard lock(faultMutex);
  return "device is unusable after an earlier failure (" + faultReason + ")";
}

uint32_t resolveTimeoutMs(uint32_t requested, const std::string& deviceType) {
  if (requested) return requested;
  if (const char* env = std::getenv("M2V_TIMEOUT_MS")) {
    long value = std::strtol(env, nullptr, 10);
    if (value > 0) return uint32_t(value);
  }
  // A CPU device (lavapipe) runs kernels tens of times slower than a GPU, and slower still on a small or busy
  // machine: a budget that fits a GPU would stop legitimate work there.
  return deviceType == "cpu" ? kCpuDeviceTimeoutMs : kGpuDeviceTimeoutMs;
}

// ------------------------------------------------------------------------------------------------------------
// DeviceInfo

static std::string deviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    default: return "other";
  }
}

static std::string versionString(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

bool DeviceInfo::offersCooperativeMatrix(const std::string& shape) const {
  return cooperativeMatrix &&
         std::find(cooperativeMatrixShapes.begin(), cooperativeMatrixShapes.end(), shape) != cooperativeMatrixShapes.end();
}

bool DeviceInfo::runsNativeBfloat16() const {
  // Opt-in (docs/BFLOAT16.md): the H200's conversion truncates, Metal's bfloat rounds to nearest even.
  const char* env = std::getenv("M2V_NATIVE_BFLOAT16");
  return bfloat16Type && roundingModeRTEFloat16 && env && std::strcmp(env, "1") == 0;
}

std::string DeviceInfo::describe() const {
  std::ostringstream s;
  s << "device " << index << ": " << name << " [" << type << ", Vulkan " << versionString(apiVersion);
  if (!driver.empty()) s << ", " << driver;
  s << ", subgroup " << subgroupSize;
  if (minSubgroupSize != maxSubgroupSize) s << " (" << minSubgroupSize << ".." << maxSubgroupSize << ")";
  if (validationEnabled) s << ", validation on";
  s << "]";
  return s.str();
}

// ------------------------------------------------------------------------------------------------------------
// Instance and device

static bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

static std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL onDebugMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* state = static_cast<DeviceState*>(user);  // null: the shared instance's creation messenger
  std::string text = std::string(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning") +
                     ": " + (data->pMessageIdName ? data->pMessageIdName : "") + ": " +
                     (data->pMessage ? data->pMessage : "");
  std::fprintf(stderr, "[m2v validation] %s\n", text.c_str());
  if (!state) return VK_FALSE;
  std::lock_guard lock(state->logMutex);
  state->validationLog.push_back(std::move(text));
  return VK_FALSE;
}

static bool hasLayer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

static UniqueInstance createInstance(bool validation, const VkDebugUtilsMessengerCreateInfoEXT* messengerInfo) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "metal2vk";
  app.pEngineName = "metal2vk";
  app.apiVersion = VK_API_VERSION_1_3;
  std::vector<const char*> layers, extensions;
  if (validation) {
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pNext = validation ? messengerInfo : nullptr;  // also catches messages from instance creation itself
  info.pApplicationInfo = &app;
  info.enabledLayerCount = uint32_t(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&info, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) throw UnsupportedError("no Vulkan 1.3 driver found (vkCreateInstance)");
  vkCheck(r, "vkCreateInstance");
  return UniqueInstance(instance);
}

// One VkInstance per process (one with the validation layer, one without), created on first use and never destroyed.
// NVIDIA's driver (580.159, H200) fails vkCreateInstance with VK_ERROR_INCOMPATIBLE_DRIVER after ~30 instances were
// created and destroyed in one process, while devices created and destroyed on one instance are fine; test suites
// and tools that open many Devices therefore share the instance. The per-instance messenger passed at creation only
// covers vkCreateInstance itself; each Device adds its own messenger (see Device::Device).
static VkInstance sharedInstance(bool validation, const VkDebugUtilsMessengerCreateInfoEXT* messengerInfo) {
  static std::mutex mutex;
  static VkInstance instances[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  std::lock_guard lock(mutex);
  VkInstance& slot = instances[validation ? 1 : 0];
  if (!slot) slot = createInstance(validation, validation ? messengerInfo : nullptr).release();
  return slot;
}

static std::vector<VkPhysicalDevice> physicalDevices(VkInstance instance) {
  uint32_t count = 0;
  vkCheck(vkEnumeratePhysicalDevices(instance, &count, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  vkCheck(vkEnumeratePhysicalDevices(instance, &count, devices.data()), "vkEnumeratePhysicalDevices");
  devices.resize(count);
  return devices;
}

static std::vector<std::string> deviceExtensions(VkPhysicalDevice pd) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> props(count);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, props.data());
  std::vector<std::string> names;
  for (const auto& p : props) names.emplace_back(p.extensionName);
  return names;
}

static int computeQueueFamily(VkPhysicalDevice pd) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
  for (uint32_t i = 0; i < count; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return int(i);
  return -1;
}

std::vector<std::string> Device::list() {
  VkInstance instance = sharedInstance(false, nullptr);
  std::vector<std::string> out;
  auto devices = physicalDevices(instance);
  for (size_t i = 0; i < devices.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    out.push_back(std::to_string(i) + ": " + p.deviceName + " [" + deviceTypeName(p.deviceType) + ", Vulkan " +
                  versionString(p.apiVersion) + "]");
  }
  return out;
}

static size_t selectDevice(const std::vector<VkPhysicalDevice>& devices, std::string selector) {
  if (devices.empty()) throw UnsupportedError("no Vulkan devices found");
  if (selector.empty())
    if (const char* env = std::getenv("M2V_DEVICE")) selector = env;
  auto nameOf = [&](size_t i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    return std::string(p.deviceName);
  };
  auto available = [&] {
    std::string s;
    for (size_t i = 0; i < devices.size(); ++i) s += "\n  " + std::to_string(i) + ": " + nameOf(i);
    return s;
  };
  if (selector.empty()) return 0;
  if (std::all_of(selector.begin(), selector.end(), [](unsigned char c) { return std::isdigit(c); })) {
    size_t index = std::stoul(selector);
    if (index >= devices.size())
      throw UsageError("device index " + selector + " out of range; available:" + available());
    return index;
  }
  for (size_t i = 0; i < devices.size(); ++i)
    if (lower(nameOf(i)).find(lower(selector)) != std::string::npos) return i;
  throw UsageError("no device name contains '" + selector + "'; available:" + available());
}

// Default directory of the persisted pipeline cache.
static std::string defaultCacheDir(const std::string& requested) {
  if (!requested.empty()) return requested == "-" ? std::string() : requested;
  if (const char* env = std::getenv("M2V_CACHE_DIR")) return std::string(env) == "-" ? std::string() : env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/metal2vk";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/metal2vk";
  return {};
}

static std::string hex(const uint8_t* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[data[i] >> 4];
    s += digits[data[i] & 15];
  }
  return s;
}

static void loadPipelineCache(DeviceState& state, const std::string& dir) {
  std::vector<char> blob;
  if (!dir.empty()) {
    state.pipelineCachePath = dir + "/pipelines-" + std::to_string(state.info.vendorId) + "-" +
                              std::to_string(state.info.deviceId) + "-" +
                              hex(state.pipelineCacheUuid, VK_UUID_SIZE) + ".bin";
    std::ifstream in(state.pipelineCachePath, std::ios::binary);
    if (in) blob.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    // Only hand the driver a blob whose header matches this device (drivers must cope, but be polite).
    if (blob.size() >= 16 + VK_UUID_SIZE) {
      uint32_t header[4];
      std::memcpy(header, blob.data(), 16);
      bool matches = header[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && header[2] == state.info.vendorId &&
                     header[3] == state.info.deviceId &&
                     std::memcmp(blob.data() + 16, state.pipelineCacheUuid, VK_UUID_SIZE) == 0;
      if (!matches) blob.clear();
    } else {
      blob.clear();
    }
  }
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = blob.size();
  info.pInitialData = blob.empty() ? nullptr : blob.data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  VkResult r = vkCreatePipelineCache(state.vk(), &info, nullptr, &cache);
  if (r != VK_SUCCESS && !blob.empty()) {  // a rejected blob is not fatal: start empty
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    blob.clear();
    r = vkCreatePipelineCache(state.vk(), &info, nullptr, &cache);
  }
  vkCheck(r, "vkCreatePipelineCache", &state);
  state.pipelineCache = UniquePipelineCache(state.vk(), cache);
  state.diskCacheBytesLoaded = blob.size();
}

void DeviceState::savePipelineCache() {
  std::lock_guard lock(pipelineMutex);
  if (pipelineCachePath.empty() || !pipelineCacheDirty || !pipelineCache) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(vk(), pipelineCache.get(), &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(vk(), pipelineCache.get(), &size, data.data()) != VK_SUCCESS) return;
  data.resize(size);
  // Temp file in the same directory + rename: readers in other processes see either the old or the new file.
  std::error_code ec;
  fs::path target(pipelineCachePath);
  fs::create_directories(target.parent_path(), ec);
  std::random_device rd;
  fs::path temp = target;
  temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return;  // cache is an optimisation: an unwritable directory is not an error
    out.write(data.data(), std::streamsize(data.size()));
    if (!out) {
      out.close();
      fs::remove(temp, ec);
      return;
    }
  }
  fs::rename(temp, target, ec);
  if (ec)
    fs::remove(temp, ec);
  else
    pipelineCacheDirty = false;
}

DeviceState::~DeviceState() {
  if (faulted.load()) {
    // Work may still be running on the device (a kernel that never finished): destroying objects it uses, or the
    // device itself, could hang or crash. Leak them deliberately; the process is expected to exit.
    for (auto& [key, pipeline] : pipelines) pipeline.release();
    for (auto& [size, layout] : layoutsByPushSize) layout.release();
    pipelineCache.release();
    device.release();
    messenger.release();
    instance.release();
    return;
  }
  savePipelineCache();
  if (device.get()) vkDeviceWaitIdle(device.get());
  pipelines.clear();
  layoutsByPushSize.clear();
  pipelineCache.reset();
  device.reset();
  messenger.reset();
  (void)instance.release();  // process-wide, see sharedInstance()
}

uint32_t DeviceState::findMemoryType(uint32_t typeBits, VkMemoryPropertyFlags required,
                                     VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memoryProperties.memoryTypeCount; ++i) {
    if (!(typeBits & (1u << i))) continue;
    VkMemoryPropertyFlags flags = memoryProperties.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback < 0) fallback = int(i);
  }
  if (fallback < 0) throw DeviceError("no suitable Vulkan memory type");
  return uint32_t(fallback);
}

VkPipelineLayout DeviceState::layoutForPushSize(uint32_t pushSize) {
  auto it = layoutsByPushSize.find(pushSize);
  if (it != layoutsByPushSize.end()) return it->second.get();
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushSize};
  VkPipelineLayoutCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  info.pushConstantRangeCount = pushSize ? 1 : 0;
  info.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  vkCheck(vkCreatePipelineLayout(vk(), &info, nullptr, &layout), "vkCreatePipelineLayout", this);
  layoutsByPushSize.emplace(pushSize, UniquePipelineLayout(vk(), layout));
  return layout;
}

// The subgroup-scope shapes of VK_KHR_cooperative_matrix, as "MxNxK A*B+C" ("16x8x8 f16*f16+f32").
static std::vector<std::string> cooperativeMatrixShapes(VkInstance instance, VkPhysicalDevice pd) {
  using Query = VkResult (*)(VkPhysicalDevice, uint32_t*, CooperativeMatrixPropertiesKhr*);
  auto query = reinterpret_cast<Query>(vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  std::vector<std::string> shapes;
  uint32_t count = 0;
  if (!query || query(pd, &count, nullptr) != VK_SUCCESS) return shapes;
  std::vector<CooperativeMatrixPropertiesKhr> props(count);
  for (auto& p : props) p = {VkStructureType(1000506001), nullptr, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (query(pd, &count, props.data()) != VK_SUCCESS) return shapes;
  auto type = [](int32_t t) -> std::string {
    switch (t) {
      case 0: return "f16";
      case 1: return "f32";
      case 3: return "i8";
      case 5: return "i32";
      case 7: return "u8";
      case 9: return "u32";
      case 1000141000: return "bf16";
      default: return "type" + std::to_string(t);
    }
  };
  constexpr int32_t kScopeSubgroup = 3;
  for (const auto& p : props)
    if (p.scope == kScopeSubgroup)
      shapes.push_back(std::to_string(p.M) + "x" + std::to_string(p.N) + "x" + std::to_string(p.K) + " " + type(p.A) +
                       "*" + type(p.B) + "+" + type(p.C));
  return shapes;
}

// Enables what the ABI's modules may use. Required: Vulkan 1.3 core features the runtime itself depends on.
static void createLogicalDevice(DeviceState& state) {
  VkPhysicalDevice pd = state.physicalDevice;
  std::vector<std::string> available = deviceExtensions(pd);
  auto has = [&](const char* name) { return std::find(available.begin(), available.end(), name) != available.end(); };

  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT atomicFloat2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopMatrix{kStructureTypeCooperativeMatrixFeaturesKhr, nullptr, 0, 0};
  ShaderBfloat16FeaturesKhr bfloat16{kStructureTypeShaderBfloat16FeaturesKhr, nullptr, 0, 0, 0};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  std::vector<const char*> extensions;
  void* optionalChain = nullptr;
  if (has(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME)) {
    atomicFloat.pNext = optionalChain;
    optionalChain = &atomicFloat;
    extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  }
  if (has(VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME)) {
    atomicFloat2.pNext = optionalChain;
    optionalChain = &atomicFloat2;
    extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME);
  }
  if (has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    coopMatrix.pNext = optionalChain;
    optionalChain = &coopMatrix;
    extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  // VK_KHR_shader_bfloat16 whenever offered: its type serves the native-bfloat16 builds, its cooperative matrices
  // the cooperative builds.
  if (has(kShaderBfloat16ExtensionName)) {
    bfloat16.pNext = optionalChain;
    optionalChain = &bfloat16;
    extensions.push_back(kShaderBfloat16ExtensionName);
  }
  // Host-memory import has no features; the extension alone (newBufferWithBytesNoCopy).
  if (state.info.hostImportAlignment) extensions.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executableInfo{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  const bool wantStatistics = envFlag("M2V_PIPELINE_STATISTICS");
  if (wantStatistics && has(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    executableInfo.pNext = optionalChain;
    optionalChain = &executableInfo;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  } else if (wantStatistics) {
    std::fprintf(stderr, "m2v: M2V_PIPELINE_STATISTICS: %s has no VK_KHR_pipeline_executable_properties\n",
                 state.info.name.c_str());
  }
  v13.pNext = optionalChain;
  v12.pNext = &v13;
  v11.pNext = &v12;
  supported.pNext = &v11;
  vkGetPhysicalDeviceFeatures2(pd, &supported);

  if (!v12.bufferDeviceAddress || !v12.timelineSemaphore || !v13.synchronization2)
    throw UnsupportedError(state.info.name +
                           ": missing a required Vulkan 1.3 feature (bufferDeviceAddress, timelineSemaphore, "
                           "synchronization2)");

  // Enable a curated set: only what is supported, so device creation never fails on an optional feature.
  VkPhysicalDeviceVulkan13Features e13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enabled.features.shaderInt64 = supported.features.shaderInt64;
  enabled.features.shaderInt16 = supported.features.shaderInt16;
  enabled.features.shaderFloat64 = supported.features.shaderFloat64;
  e11.storageBuffer16BitAccess = v11.storageBuffer16BitAccess;
  e11.uniformAndStorageBuffer16BitAccess = v11.uniformAndStorageBuffer16BitAccess;
  e11.storagePushConstant16 = v11.storagePushConstant16;
  e12.bufferDeviceAddress = VK_TRUE;
  e12.timelineSemaphore = VK_TRUE;
  e12.shaderInt8 = v12.shaderInt8;
  e12.shaderFloat16 = v12.shaderFloat16;
  e12.storageBuffer8BitAccess = v12.storageBuffer8BitAccess;
  e12.uniformAndStorageBuffer8BitAccess = v12.uniformAndStorageBuffer8BitAccess;
  e12.storagePushConstant8 = v12.storagePushConstant8;
  e12.vulkanMemoryModel = v12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = v12.vulkanMemoryModelDeviceScope;
  e12.scalarBlockLayout = v12.scalarBlockLayout;
  e12.shaderSubgroupExtendedTypes = v12.shaderSubgroupExtendedTypes;
  e12.shaderBufferInt64Atomics = v12.shaderBufferInt64Atomics;
  e12.shaderSharedInt64Atomics = v12.shaderSharedInt64Atomics;
  e12.uniformBufferStandardLayout = v12.uniformBufferStandardLayout;
  e13.synchronization2 = VK_TRUE;
  e13.subgroupSizeControl = v13.subgroupSizeControl;
  e13.computeFullSubgroups = v13.computeFullSubgroups;
  e13.maintenance4 = v13.maintenance4;
  e13.pipelineCreationCacheControl = v13.pipelineCreationCacheControl;
  // Optional extension structs: enable everything they report.
  atomicFloat.pNext = nullptr;
  atomicFloat2.pNext = nullptr;
  coopMatrix.pNext = nullptr;
  bfloat16.pNext = nullptr;
  bfloat16.shaderBFloat16DotProduct = VK_FALSE;  // not used by any module
  // (bfloat cooperative matrices need the cooperative-matrix feature enabled as well)
  if (!(has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) && coopMatrix.cooperativeMatrix))
    bfloat16.shaderBFloat16CooperativeMatrix = VK_FALSE;
  void* enabledOptional = nullptr;
  if (has(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME)) {
    atomicFloat.pNext = enabledOptional;
    enabledOptional = &atomicFloat;
  }
  if (has(VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME)) {
    atomicFloat2.pNext = enabledOptional;
    enabledOptional = &atomicFloat2;
  }
  if (has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    coopMatrix.pNext = enabledOptional;
    enabledOptional = &coopMatrix;
  }
  if (has(kShaderBfloat16ExtensionName)) {
    bfloat16.pNext = enabledOptional;
    enabledOptional = &bfloat16;
  }
  if (wantStatistics && has(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) &&
      executableInfo.pipelineExecutableInfo) {
    executableInfo.pNext = enabledOptional;
    enabledOptional = &executableInfo;
    state.pipelineStatistics = true;
  }
  e13.pNext = enabledOptional;
  e12.pNext = &e13;
  e11.pNext = &e12;
  enabled.pNext = &e11;

  DeviceInfo& info = state.info;
  info.shaderInt64 = enabled.features.shaderInt64;
  info.shaderInt16 = enabled.features.shaderInt16;
  info.shaderInt8 = e12.shaderInt8;
  info.shaderFloat16 = e12.shaderFloat16;
  info.storageBuffer8Bit = e12.storageBuffer8BitAccess;
  info.storageBuffer16Bit = e11.storageBuffer16BitAccess;
  info.atomicFloat = has(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  info.atomicFloat2 = has(VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME);
  info.cooperativeMatrix = has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) && coopMatrix.cooperativeMatrix;
  if (info.cooperativeMatrix) info.cooperativeMatrixShapes = cooperativeMatrixShapes(state.instance.get(), pd);
  info.bfloat16CooperativeMatrix =
      info.cooperativeMatrix && bfloat16.shaderBFloat16Type && bfloat16.shaderBFloat16CooperativeMatrix;
  info.bfloat16Type = has(kShaderBfloat16ExtensionName) && bfloat16.shaderBFloat16Type;
  info.requiredSubgroupSizeInCompute = info.requiredSubgroupSizeInCompute && v13.subgroupSizeControl;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = state.queueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo deviceInfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  deviceInfo.pNext = &enabled;
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  deviceInfo.enabledExtensionCount = uint32_t(extensions.size());
  deviceInfo.ppEnabledExtensionNames = extensions.data();
  VkDevice device = VK_NULL_HANDLE;
  vkCheck(vkCreateDevice(pd, &deviceInfo, nullptr, &device), "vkCreateDevice");
  state.device = UniqueDevice(device);
  vkGetDeviceQueue(device, state.queueFamily, 0, &state.queue);
}

Device::Device(const DeviceOptions& options) : state_(std::make_shared<DeviceState>()) {
  DeviceState& state = *state_;
  bool validation = options.validation < 0 ? envFlag("M2V_VALIDATION") : options.validation != 0;
  if (validation && !hasLayer("VK_LAYER_KHRONOS_validation"))
    throw UnsupportedError("validation requested (M2V_VALIDATION) but VK_LAYER_KHRONOS_validation is not installed");

  VkDebugUtilsMessengerCreateInfoEXT messengerInfo{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messengerInfo.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messengerInfo.pfnUserCallback = onDebugMessage;
  messengerInfo.pUserData = &state;
  // The instance-creation messenger must not keep a pointer to this state: it is shared by later Devices.
  VkDebugUtilsMessengerCreateInfoEXT creationMessengerInfo = messengerInfo;
  creationMessengerInfo.pUserData = nullptr;
  state.instance = UniqueInstance(sharedInstance(validation, &creationMessengerInfo));
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(state.instance.get(), "vkCreateDebugUtilsMessengerEXT"));
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(state.instance.get(), "vkDestroyDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    if (!create || !destroy) throw DeviceError("VK_EXT_debug_utils entry points missing");
    vkCheck(create(state.instance.get(), &messengerInfo, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
    state.messenger = UniqueDebugMessenger(state.instance.get(), messenger, destroy);
  }

  auto devices = physicalDevices(state.instance.get());
  size_t index = selectDevice(devices, options.selector);
  VkPhysicalDevice pd = devices[index];
  state.physicalDevice = pd;

  VkPhysicalDeviceSubgroupSizeControlProperties subgroupControl{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties floatControls{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  subgroup.pNext = &subgroupControl;
  driver.pNext = &subgroup;
  floatControls.pNext = &driver;
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT hostImport{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  const std::vector<std::string> available = deviceExtensions(pd);
  const bool hostImportOffered =
      std::find(available.begin(), available.end(), VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME) != available.end();
  if (hostImportOffered) hostImport.pNext = &floatControls;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = hostImportOffered ? static_cast<void*>(&hostImport) : &floatControls;
  vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceLimits& limits = props.properties.limits;
  DeviceInfo& info = state.info;
  info.name = props.properties.deviceName;
  info.index = uint32_t(index);
  info.vendorId = props.properties.vendorID;
  info.deviceId = props.properties.deviceID;
  info.type = deviceTypeName(props.properties.deviceType);
  state.timeoutMs = resolveTimeoutMs(options.timeoutMs, info.type);
  info.apiVersion = props.properties.apiVersion;
  info.driver = std::string(driver.driverName) + (driver.driverInfo[0] ? std::string(" ") + driver.driverInfo : "");
  info.subgroupSize = subgroup.subgroupSize;
  info.minSubgroupSize = subgroupControl.minSubgroupSize ? subgroupControl.minSubgroupSize : subgroup.subgroupSize;
  info.maxSubgroupSize = subgroupControl.maxSubgroupSize ? subgroupControl.maxSubgroupSize : subgroup.subgroupSize;
  info.requiredSubgroupSizeInCompute = (subgroupControl.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  info.maxComputeWorkgroupSubgroups = subgroupControl.maxComputeWorkgroupSubgroups;
  info.roundingModeRTEFloat16 = floatControls.shaderRoundingModeRTEFloat16;
  info.hostImportAlignment = hostImportOffered ? hostImport.minImportedHostPointerAlignment : 0;
  info.maxWorkgroupInvocations = limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    info.maxWorkgroupSize[i] = limits.maxComputeWorkGroupSize[i];
    info.maxWorkgroupCount[i] = limits.maxComputeWorkGroupCount[i];
  }
  // M2V_MAX_WORKGROUP_SIZE=X,Y,Z lowers the per-axis limits, so tests can take the path of devices with small ones
  // (NVIDIA's z stops at 64) on any device.
  if (const char* env = std::getenv("M2V_MAX_WORKGROUP_SIZE")) {
    unsigned caps[3] = {0, 0, 0};
    if (std::sscanf(env, "%u,%u,%u", &caps[0], &caps[1], &caps[2]) == 3)
      for (int i = 0; i < 3; ++i)
        if (caps[i] > 0) info.maxWorkgroupSize[i] = std::min(info.maxWorkgroupSize[i], uint32_t(caps[i]));
  }
  if (const char* env = std::getenv("M2V_LINEAR_WORKGROUPS")) info.linearWorkgroups = std::strcmp(env, "0") != 0;
  info.maxSharedMemoryBytes = limits.maxComputeSharedMemorySize;
  info.maxPushConstantsSize = limits.maxPushConstantsSize;
  info.validationEnabled = validation;
  std::memcpy(state.pipelineCacheUuid, props.properties.pipelineCacheUUID, VK_UUID_SIZE);
  if (VK_API_VERSION_MINOR(info.apiVersion) < 3 && VK_API_VERSION_MAJOR(info.apiVersion) == 1)
    throw UnsupportedError(info.name + " supports only Vulkan " + versionString(info.apiVersion) + "; 1.3 is required");

  int family = computeQueueFamily(pd);
  if (family < 0) throw UnsupportedError(info.name + " has no compute queue");
  state.queueFamily = uint32_t(family);
  {
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
    if (families[state.queueFamily].timestampValidBits > 0) info.timestampPeriodNs = limits.timestampPeriod;
  }
  vkGetPhysicalDeviceMemoryProperties(pd, &state.memoryProperties);
  createLogicalDevice(state);
  loadPipelineCache(state, defaultCacheDir(options.cacheDir));
}

Device::~Device() = default;
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;

const DeviceInfo& Device::info() const { return state_->info; }
uint32_t Device::timeoutMs() const { return state_->timeoutMs; }
bool Device::faulted() const { return state_->faulted.load(); }
std::string Device::faultReason() const {
  std::lock_guard lock(state_->faultMutex);
  return state_->faultReason;
}

DeviceStats Device::stats() const {
  DeviceStats s;
  std::lock_guard lock(state_->pipelineMutex);
  s.pipelinesCreated = state_->pipelinesCreated;
  s.pipelineBuildSeconds = double(state_->pipelineBuildNs) * 1e-9;
  s.pipelineMemoryHits = state_->pipelineMemoryHits.load();
  s.diskCacheBytesLoaded = state_->diskCacheBytesLoaded;
  s.diskCachePath = state_->pipelineCachePath;
  return s;
}

size_t Device::validationMessageCount() const {
  std::lock_guard lock(state_->logMutex);
  return state_->validationLog.size();
}

std::vector<std::string> Device::validationMessages() const {
  std::lock_guard lock(state_->logMutex);
  return state_->validationLog;
}

void Device::clearValidationMessages() {
  std::lock_guard lock(state_->logMutex);
  state_->validationLog.clear();
}

void Device::savePipelineCache() { state_->savePipelineCache(); }

Device::Native Device::native() const {
  return {state_->instance.get(), state_->physicalDevice, state_->device.get(), state_->queue, state_->queueFamily};
}

// ------------------------------------------------------------------------------------------------------------
// Buffers

RawBuffer createRawBuffer(DeviceState& device, VkDeviceSize size,
                          const std::function<uint32_t(const VkMemoryRequirements&)>& memoryType, bool map,
                          void* importHostPointer) {
  RawBuffer raw;
  raw.size = size;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  if (importHostPointer) info.pNext = &external;
  info.size = size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
               VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  vkCheck(vkCreateBuffer(device.vk(), &info, nullptr, &buffer), "vkCreateBuffer", &device);
  raw.buffer = UniqueBuffer(device.vk(), buffer);

  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device.vk(), buffer, &req);
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = importHostPointer;
  if (importHostPointer) flags.pNext = &import;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.pNext = &flags;
  alloc.allocationSize = importHostPointer ? size : req.size;  // an import is exactly the caller's pages
  alloc.memoryTypeIndex = memoryType(req);
  VkDeviceMemory memory = VK_NULL_HANDLE;
  vkCheck(vkAllocateMemory(device.vk(), &alloc, nullptr, &memory), "vkAllocateMemory", &device);
  raw.memory = UniqueMemory(device.vk(), memory);
  vkCheck(vkBindBufferMemory(device.vk(), buffer, memory, 0), "vkBindBufferMemory", &device);
  if (importHostPointer)
    raw.hostPointer = importHostPointer;
  else if (map)
    vkCheck(vkMapMemory(device.vk(), memory, 0, VK_WHOLE_SIZE, 0, &raw.hostPointer), "vkMapMemory", &device);
  VkBufferDeviceAddressInfo addressInfo{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  addressInfo.buffer = buffer;
  raw.address = vkGetBufferDeviceAddress(device.vk(), &addressInfo);
  return raw;
}

RawBuffer createRawBuffer(DeviceState& device, VkDeviceSize size, bool hostVisible) {
  auto chooseType = [&](const VkMemoryRequirements& req) {
    return hostVisible ? device.findMemoryType(req.memoryTypeBits,
                                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                               VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                       : device.findMemoryType(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  };
  return createRawBuffer(device, size, chooseType, hostVisible);
}

Buffer Device::createBuffer(size_t bytes) {
  if (bytes == 0) throw UsageError("createBuffer: size must be > 0");
  auto object = std::make_shared<BufferObject>();
  object->device = state_;
  object->raw = createRawBuffer(*state_, bytes, false);
  object->raw.size = bytes;  // the requested size, not the padded allocation
  return Buffer(std::move(object));
}

size_t Buffer::size() const { return object_ ? size_t(object_->raw.size) : 0; }
uint64_t Buffer::deviceAddress() const { return object_ ? object_->raw.address : 0; }

}  // namespace m2v
