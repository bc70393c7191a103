// Shared buffers (Metal's MTLStorageModeShared): host-visible, coherent, persistently mapped memory. Device-local
// host-visible memory is used where one such memory type spans the whole largest device-local heap (the H200 with
// resizable BAR: heap 0, type 4, 140 GiB; unified-memory GPUs); elsewhere a host-memory type, cached when offered.
#include <cstdlib>
#include <string>

#include "internal.h"

namespace m2v {

namespace {

constexpr VkMemoryPropertyFlags kHostCoherent = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

// The memory type shared buffers come from, chosen once per device from its memory properties.
Device::SharedMemory chooseSharedMemory(const VkPhysicalDeviceMemoryProperties& props) {
  int largestLocalHeap = -1;
  for (uint32_t h = 0; h < props.memoryHeapCount; ++h)
    if ((props.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
        (largestLocalHeap < 0 || props.memoryHeaps[h].size > props.memoryHeaps[largestLocalHeap].size))
      largestLocalHeap = int(h);
  Device::SharedMemory chosen;
  int hostType = -1, cachedHostType = -1;
  for (uint32_t t = 0; t < props.memoryTypeCount; ++t) {
    const VkMemoryType& type = props.memoryTypes[t];
    if ((type.propertyFlags & kHostCoherent) != kHostCoherent) continue;
    if (int(type.heapIndex) == largestLocalHeap && (type.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) {
      chosen.deviceLocal = true;
      chosen.memoryType = t;
      chosen.heapBytes = props.memoryHeaps[type.heapIndex].size;
      chosen.hostCached = type.propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      return chosen;
    }
    if (hostType < 0) hostType = int(t);
    if (cachedHostType < 0 && (type.propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)) cachedHostType = int(t);
  }
  int t = cachedHostType >= 0 ? cachedHostType : hostType;
  if (t < 0) throw UnsupportedError("the device has no host-visible coherent memory for shared buffers");
  chosen.memoryType = uint32_t(t);
  chosen.heapBytes = props.memoryHeaps[props.memoryTypes[t].heapIndex].size;
  chosen.hostCached = props.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  return chosen;
}

}  // namespace

Device::SharedMemory Device::sharedMemory() const { return chooseSharedMemory(state_->memoryProperties); }

Buffer Device::createBuffer(size_t bytes, Memory memory) {
  if (memory == Memory::DeviceLocal) return createBuffer(bytes);
  if (bytes == 0) throw UsageError("createBuffer: size must be > 0");
  if (memory == Memory::HostCached) {
    auto object = std::make_shared<BufferObject>();
    object->device = state_;
    object->raw = createRawBuffer(*state_, bytes, true);
    object->raw.size = bytes;
    return Buffer(std::move(object));
  }
  const SharedMemory shared = sharedMemory();
  auto object = std::make_shared<BufferObject>();
  object->device = state_;
  auto sharedType = [&](const VkMemoryRequirements& req) {
    if (!(req.memoryTypeBits & (1u << shared.memoryType)))
      throw UnsupportedError("storage buffers cannot use the shared memory type " + std::to_string(shared.memoryType));
    return shared.memoryType;
  };
  object->raw = createRawBuffer(*state_, bytes, sharedType, true);
  return Buffer(std::move(object));
}

Buffer Device::importHostMemory(void* pointer, size_t bytes, std::function<void()> released) {
  const uint64_t alignment = state_->info.hostImportAlignment;
  if (bytes == 0) throw UsageError("importHostMemory: size must be > 0");
  if (!alignment)
    throw UnsupportedError(state_->info.name + " cannot import host memory (no VK_EXT_external_memory_host)");
  if (reinterpret_cast<uintptr_t>(pointer) % alignment)
    throw UnsupportedError("importHostMemory: the address is not aligned to " + std::to_string(alignment) + " bytes");
  auto hostPointerProperties = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
      vkGetDeviceProcAddr(state_->vk(), "vkGetMemoryHostPointerPropertiesEXT"));
  VkMemoryHostPointerPropertiesEXT pointerTypes{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  if (!hostPointerProperties ||
      hostPointerProperties(state_->vk(), VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, pointer,
                            &pointerTypes) != VK_SUCCESS)
    throw UnsupportedError("importHostMemory: the driver cannot import this address");
  auto importType = [&](const VkMemoryRequirements& req) {
    uint32_t candidates = req.memoryTypeBits & pointerTypes.memoryTypeBits;
    for (uint32_t t = 0; t < state_->memoryProperties.memoryTypeCount; ++t)
      if ((candidates & (1u << t)) &&
          (state_->memoryProperties.memoryTypes[t].propertyFlags & kHostCoherent) == kHostCoherent)
        return t;
    throw UnsupportedError("importHostMemory: no host-coherent memory type can import this address");
  };
  auto object = std::make_shared<BufferObject>();
  object->device = state_;
  const VkDeviceSize span = (bytes + alignment - 1) / alignment * alignment;
  object->raw = createRawBuffer(*state_, span, importType, false, pointer);  // DeviceError when the driver refuses
  object->raw.size = bytes;
  object->released = std::move(released);
  return Buffer(std::move(object));
}

void* Buffer::contents() const { return object_ ? object_->raw.hostPointer : nullptr; }

RawBuffer createDeviceReadStaging(DeviceState& device, VkDeviceSize size) {
  // Kernel arguments in host memory cost each dispatch a chain of PCIe reads before its first load (argument table,
  // then the values it points to): on the H200 MLX's gemv ran 2-15% slower than with them in device memory
  // (bench/membound-round4.md).
  static const bool inHostMemory = [] {
    const char* v = std::getenv("M2V_ARENA_IN_HOST_MEMORY");
    return v && *v && std::string(v) != "0";
  }();
  const Device::SharedMemory shared = chooseSharedMemory(device.memoryProperties);
  if (inHostMemory || !shared.deviceLocal) return createRawBuffer(device, size, true);
  auto sharedType = [&](const VkMemoryRequirements& req) {
    return (req.memoryTypeBits & (1u << shared.memoryType))
               ? shared.memoryType
               : device.findMemoryType(req.memoryTypeBits, kHostCoherent, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  };
  return createRawBuffer(device, size, sharedType, true);
}

}  // namespace m2v
