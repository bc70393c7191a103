// MTL::Device over m2v::Device: the device registry (CreateSystemDefaultDevice, CopyAllDevices), the device's
// description (name, architecture, limits, GPU families) and the objects it makes that need no other file.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "objects.h"

namespace m2v::metal {
namespace {

// Apple's architecture names end in two generation digits and a size letter ("applegpu_g15s"); MLX picks kernel
// tiles by the letter and some paths by the generation. A discrete GPU is a large device ('d'), anything else a
// small one ('g'). Generation 15 is the feature level metal2vk implements (bfloat, simdgroup matrices; Apple's M3
// family); below 17, so MLX does not take its Metal-4 (NAX) kernels: metal2vk runs them, but slower than MLX's steel
// kernels (NAX GEMM 66 TFLOP/s, steel 89-96 on the H200; bench/mlx-nax-h200.md).
std::string architectureName(const DeviceInfo& info) {
  return std::string("vulkan_15") + (info.type == "discrete" ? "d" : "g");
}

struct Limits {
  uint64_t maxBufferBytes = 0, maxAllocationCount = 0;
};

Limits queryLimits(const m2v::Device& device, uint64_t heapBytes) {
  auto physical = static_cast<VkPhysicalDevice>(device.native().physicalDevice);
  VkPhysicalDeviceMaintenance4Properties maintenance4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  maintenance3.pNext = &maintenance4;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &maintenance3;
  vkGetPhysicalDeviceProperties2(physical, &props);
  Limits limits;
  limits.maxBufferBytes =
      std::min<uint64_t>({maintenance4.maxBufferSize, maintenance3.maxMemoryAllocationSize, heapBytes});
  limits.maxAllocationCount = props.properties.limits.maxMemoryAllocationCount;
  return limits;
}

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(1ull << 30));
  return text;
}

// One MTL::Device per Vulkan device, made on first use and kept for the life of the process (Metal devices are
// never destroyed while the process runs; MLX keeps raw pointers to them).
struct Registry {
  std::mutex mutex;
  std::vector<std::string> listed;   // Device::list()
  std::vector<DeviceImpl*> byIndex;  // nullptr until opened
  DeviceImpl* defaultDevice = nullptr;
  bool defaultTried = false;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

DeviceImpl::DeviceImpl(m2v::Device device)
    : runtime_(std::make_shared<m2v::Device>(std::move(device))), info_(runtime_->info()) {
  const DeviceInfo& i = info_;
  shared = runtime_->sharedMemory();
  const char* mirror = std::getenv("M2V_HOST_MIRROR");
  mirrorsSharedBuffers = mirror && *mirror ? std::string(mirror) != "0" : !shared.hostCached;
  Limits limits = queryLimits(*runtime_, shared.heapBytes);
  maxBufferBytes = limits.maxBufferBytes;
  maxAllocations = limits.maxAllocationCount;
  workingSetBytes = shared.heapBytes;
  nameString = NS::TransferPtr(newString(i.name));
  architecture = NS::TransferPtr(new ArchitectureImpl(architectureName(i)));
  std::string where = mirrorsSharedBuffers ? "device-local memory with host-cached mirrors for the CPU"
                      : shared.deviceLocal ? "device-local host-visible memory"
                                           : "host memory";
  descriptionString =
      NS::TransferPtr(newString(i.describe() + "; shared buffers in " + where + " (memory type " +
                                std::to_string(shared.memoryType) + ", " + gib(shared.heapBytes) + ")"));
}

std::shared_ptr<m2v::Device> DeviceImpl::runtime() {
  std::lock_guard lock(runtimeMutex_);
  if (runtime_->faulted()) {
    std::string reason = runtime_->faultReason();
    m2v::DeviceOptions options;
    options.selector = std::to_string(info_.index);
    try {
      // The faulted device stays alive while objects use it (the runtime then leaks what it cannot destroy).
      runtime_ = std::make_shared<m2v::Device>(options);
      replacedBecause_ = reason;
      generation_++;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[metal2vk] could not open a new Vulkan device after a failure: %s\n", e.what());
    }
  }
  return runtime_;
}

uint64_t DeviceImpl::generation() {
  runtime();  // a faulted device is replaced first
  std::lock_guard lock(runtimeMutex_);
  return generation_;
}

std::string DeviceImpl::staleReason(uint64_t generation) {
  uint64_t now = this->generation();
  if (generation == now) return {};
  std::lock_guard lock(runtimeMutex_);
  return "it was made on a Vulkan device that failed and was replaced (" + replacedBecause_ +
         "); its memory went with that device";
}

// The default device, opened on first use; nullptr (with the reason on stderr once) when there is none.
DeviceImpl* defaultDevice() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.defaultTried) return r.defaultDevice;
  r.defaultTried = true;
  try {
    m2v::Device device;  // M2V_DEVICE selects, as everywhere in metal2vk
    uint32_t index = device.info().index;
    r.defaultDevice = new DeviceImpl(std::move(device));
    if (r.byIndex.size() <= index) r.byIndex.resize(index + 1, nullptr);
    r.byIndex[index] = r.defaultDevice;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[metal2vk] no Metal device: %s\n", e.what());
  }
  return r.defaultDevice;
}

}  // namespace m2v::metal

using namespace m2v::metal;

namespace MTL {

Device* CreateSystemDefaultDevice() {
  DeviceImpl* device = defaultDevice();
  return device ? device->retain() : nullptr;
}

NS::Array* CopyAllDevices() {
  DeviceImpl* first = defaultDevice();
  std::vector<const NS::Object*> devices;
  if (first) devices.push_back(first);  // the selected device first: callers take object(0)
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  try {
    if (r.listed.empty()) r.listed = m2v::Device::list();
  } catch (const std::exception&) {
  }
  r.byIndex.resize(std::max(r.byIndex.size(), r.listed.size()), nullptr);
  for (size_t i = 0; i < r.listed.size(); ++i) {
    if (r.byIndex[i] == first && first) continue;
    if (!r.byIndex[i]) {
      try {
        m2v::DeviceOptions options;
        options.selector = std::to_string(i);
        r.byIndex[i] = new DeviceImpl(m2v::Device(options));
      } catch (const std::exception&) {
        continue;  // not a Vulkan 1.3 compute device
      }
    }
    devices.push_back(r.byIndex[i]);
  }
  return NS::Array::alloc()->init(devices.data(), devices.size());
}

NS::String* Architecture::name() const { return impl<const ArchitectureImpl>(this)->name(); }

NS::String* Device::name() const { return impl<const DeviceImpl>(this)->nameString.get(); }
Architecture* Device::architecture() const { return impl<const DeviceImpl>(this)->architecture.get(); }
uint64_t Device::registryID() const {
  const m2v::DeviceInfo& i = impl<const DeviceImpl>(this)->info();
  return uint64_t(i.vendorId) << 32 | i.deviceId;
}
DeviceLocation Device::location() const {
  const m2v::DeviceInfo& i = impl<const DeviceImpl>(this)->info();
  return i.type == "discrete" ? DeviceLocationSlot : DeviceLocationBuiltIn;
}
NS::UInteger Device::locationNumber() const { return impl<const DeviceImpl>(this)->info().index; }
bool Device::lowPower() const { return impl<const DeviceImpl>(this)->info().type == "integrated"; }
bool Device::headless() const { return true; }  // compute only: metal2vk drives no display
bool Device::removable() const { return false; }
bool Device::hasUnifiedMemory() const {
  const std::string& type = impl<const DeviceImpl>(this)->info().type;
  return type == "integrated" || type == "cpu";
}
uint64_t Device::recommendedMaxWorkingSetSize() const { return impl<const DeviceImpl>(this)->workingSetBytes; }
NS::UInteger Device::currentAllocatedSize() const { return impl<const DeviceImpl>(this)->allocatedBytes.load(); }
NS::UInteger Device::maxBufferLength() const { return impl<const DeviceImpl>(this)->maxBufferBytes; }
NS::UInteger Device::maxThreadgroupMemoryLength() const {
  return impl<const DeviceImpl>(this)->info().maxSharedMemoryBytes;
}
Size Device::maxThreadsPerThreadgroup() const {
  const m2v::DeviceInfo& i = impl<const DeviceImpl>(this)->info();
  return Size(i.maxWorkgroupSize[0], i.maxWorkgroupSize[1], i.maxWorkgroupSize[2]);
}
bool Device::supportsFamily(GPUFamily family) const {
  switch (family) {
    case GPUFamilyCommon1:
    case GPUFamilyCommon2:
    case GPUFamilyCommon3:
    case GPUFamilyMetal3:  // the Metal 3 compute language and API that metal2vk implements
      return true;
    default:  // Apple and Mac families describe Apple hardware; Metal 4 needs tensors metal2vk lacks
      return false;
  }
}
NS::String* Device::description() const { return impl<const DeviceImpl>(this)->descriptionString.get(); }

CommandQueue* Device::newCommandQueue() { return newCommandQueue(64); }  // Metal's default
CommandQueue* Device::newCommandQueue(NS::UInteger maxCommandBufferCount) {
  return new CommandQueueImpl(impl<DeviceImpl>(this), std::max<NS::UInteger>(maxCommandBufferCount, 1));
}

Fence* Device::newFence() {
  auto* fence = new FenceImpl;
  fence->device = NS::RetainPtr(impl<DeviceImpl>(this));
  return fence;
}

Event* Device::newEvent() { return newSharedEvent(); }

SharedEvent* Device::newSharedEvent() {
  auto* device = impl<DeviceImpl>(this);
  try {
    uint64_t generation = device->generation();
    m2v::Event timeline = device->runtime()->createEvent(0);
    auto* event = new SharedEventImpl;
    event->device = NS::RetainPtr(device);
    event->event = std::move(timeline);
    event->generation = generation;
    return event;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[metal2vk] newSharedEvent: %s\n", e.what());
    return nullptr;
  }
}

}  // namespace MTL
