// Event: a Vulkan timeline semaphore that the host signals and waits on, and that submissions signal
// (Stream::commit with signals). Metal's MTLSharedEvent.
#include "internal.h"

namespace m2v {

Event Device::createEvent(uint64_t initialValue) {
  VkSemaphoreTypeCreateInfo typeInfo{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  typeInfo.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  typeInfo.initialValue = initialValue;
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  info.pNext = &typeInfo;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  vkCheck(vkCreateSemaphore(state_->vk(), &info, nullptr, &semaphore), "vkCreateSemaphore", state_.get());
  auto object = std::make_shared<EventObject>();
  object->device = state_;
  object->semaphore = UniqueSemaphore(state_->vk(), semaphore);
  return Event(std::move(object));
}

uint64_t Event::value() const {
  if (!object_) throw UsageError("empty Event");
  uint64_t value = 0;
  vkCheck(vkGetSemaphoreCounterValue(object_->device->vk(), object_->semaphore.get(), &value),
          "vkGetSemaphoreCounterValue", object_->device.get());
  return value;
}

void Event::signal(uint64_t value) {
  if (!object_) throw UsageError("empty Event");
  // Vulkan requires a host signal to raise the value; Metal's setSignaledValue never lowers what waiters see.
  std::lock_guard lock(object_->signalMutex);
  if (value <= this->value()) return;
  VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  info.semaphore = object_->semaphore.get();
  info.value = value;
  vkCheck(vkSignalSemaphore(object_->device->vk(), &info), "vkSignalSemaphore", object_->device.get());
}

bool Event::wait(uint64_t value, uint64_t timeoutNs) const {
  if (!object_) throw UsageError("empty Event");
  VkSemaphore semaphore = object_->semaphore.get();
  VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  info.semaphoreCount = 1;
  info.pSemaphores = &semaphore;
  info.pValues = &value;
  VkResult r = vkWaitSemaphores(object_->device->vk(), &info, timeoutNs);
  if (r == VK_TIMEOUT) return false;
  vkCheck(r, "vkWaitSemaphores", object_->device.get());
  return true;
}

}  // namespace m2v
