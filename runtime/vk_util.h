// Small move-only RAII wrappers for Vulkan handles and VkResult checking. Internal to m2v_runtime.
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <utility>

namespace m2v {

struct DeviceState;

const char* vkResultName(VkResult result);

// Throws the runtime's error type for a failed call: DeviceLostError (and marks `device` faulted), DeviceError for
// out-of-memory and anything else. `what` names the call for the message.
void throwVkError(VkResult result, const char* what, DeviceState* device);

inline void vkCheck(VkResult result, const char* what, DeviceState* device = nullptr) {
  if (result != VK_SUCCESS) throwVkError(result, what, device);
}

// Owns one handle created from a VkDevice; destroyed with `Destroy(device, handle, nullptr)`.
template <typename Handle, void (*Destroy)(VkDevice, Handle, const VkAllocationCallbacks*)>
class DeviceObject {
 public:
  DeviceObject() = default;
  DeviceObject(VkDevice device, Handle handle) : device_(device), handle_(handle) {}
  DeviceObject(DeviceObject&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, Handle(VK_NULL_HANDLE))) {}
  DeviceObject& operator=(DeviceObject&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, Handle(VK_NULL_HANDLE));
    }
    return *this;
  }
  DeviceObject(const DeviceObject&) = delete;
  DeviceObject& operator=(const DeviceObject&) = delete;
  ~DeviceObject() { reset(); }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) Destroy(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  // Gives up ownership without destroying (used to leak deliberately after a device fault).
  Handle release() { return std::exchange(handle_, Handle(VK_NULL_HANDLE)); }
  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  Handle handle_ = VK_NULL_HANDLE;
};

using UniqueBuffer = DeviceObject<VkBuffer, vkDestroyBuffer>;
using UniqueMemory = DeviceObject<VkDeviceMemory, vkFreeMemory>;
using UniqueShaderModule = DeviceObject<VkShaderModule, vkDestroyShaderModule>;
using UniquePipeline = DeviceObject<VkPipeline, vkDestroyPipeline>;
using UniquePipelineLayout = DeviceObject<VkPipelineLayout, vkDestroyPipelineLayout>;
using UniquePipelineCache = DeviceObject<VkPipelineCache, vkDestroyPipelineCache>;
using UniqueCommandPool = DeviceObject<VkCommandPool, vkDestroyCommandPool>;
using UniqueSemaphore = DeviceObject<VkSemaphore, vkDestroySemaphore>;
using UniqueQueryPool = DeviceObject<VkQueryPool, vkDestroyQueryPool>;

// Handles with their own destroy signatures.
class UniqueInstance {
 public:
  UniqueInstance() = default;
  explicit UniqueInstance(VkInstance instance) : instance_(instance) {}
  UniqueInstance(UniqueInstance&& o) noexcept : instance_(std::exchange(o.instance_, VK_NULL_HANDLE)) {}
  UniqueInstance& operator=(UniqueInstance&& o) noexcept {
    if (this != &o) {
      reset();
      instance_ = std::exchange(o.instance_, VK_NULL_HANDLE);
    }
    return *this;
  }
  ~UniqueInstance() { reset(); }
  void reset() {
    if (instance_) vkDestroyInstance(instance_, nullptr);
    instance_ = VK_NULL_HANDLE;
  }
  VkInstance release() { return std::exchange(instance_, VK_NULL_HANDLE); }
  VkInstance get() const { return instance_; }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
};

class UniqueDevice {
 public:
  UniqueDevice() = default;
  explicit UniqueDevice(VkDevice device) : device_(device) {}
  UniqueDevice(UniqueDevice&& o) noexcept : device_(std::exchange(o.device_, VK_NULL_HANDLE)) {}
  UniqueDevice& operator=(UniqueDevice&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = std::exchange(o.device_, VK_NULL_HANDLE);
    }
    return *this;
  }
  ~UniqueDevice() { reset(); }
  void reset() {
    if (device_) vkDestroyDevice(device_, nullptr);
    device_ = VK_NULL_HANDLE;
  }
  VkDevice release() { return std::exchange(device_, VK_NULL_HANDLE); }
  VkDevice get() const { return device_; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
};

class UniqueDebugMessenger {
 public:
  UniqueDebugMessenger() = default;
  UniqueDebugMessenger(VkInstance instance, VkDebugUtilsMessengerEXT messenger, PFN_vkDestroyDebugUtilsMessengerEXT fn)
      : instance_(instance), messenger_(messenger), destroy_(fn) {}
  UniqueDebugMessenger(UniqueDebugMessenger&& o) noexcept
      : instance_(o.instance_), messenger_(std::exchange(o.messenger_, VK_NULL_HANDLE)), destroy_(o.destroy_) {}
  UniqueDebugMessenger& operator=(UniqueDebugMessenger&& o) noexcept {
    if (this != &o) {
      reset();
      instance_ = o.instance_;
      messenger_ = std::exchange(o.messenger_, VK_NULL_HANDLE);
      destroy_ = o.destroy_;
    }
    return *this;
  }
  ~UniqueDebugMessenger() { reset(); }
  void reset() {
    if (messenger_ && destroy_) destroy_(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  VkDebugUtilsMessengerEXT release() { return std::exchange(messenger_, VK_NULL_HANDLE); }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_ = nullptr;
};

}  // namespace m2v
