// sysctlbyname for the names MLX's Metal backend asks (see include/metal2vk/metal-cpp/sys/sysctl.h).
#include <sys/sysctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "objects.h"

namespace m2v::metal {
DeviceImpl* defaultDevice();
}

namespace {

std::optional<uint64_t> physicalMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * 1024;
  return std::nullopt;
}

template <class T>
int answer(T value, void* oldp, size_t* oldlenp) {
  if (!oldlenp) {
    errno = EINVAL;
    return -1;
  }
  if (oldp) {
    if (*oldlenp < sizeof value) {
      errno = ENOMEM;
      return -1;
    }
    std::memcpy(oldp, &value, sizeof value);
  }
  *oldlenp = sizeof value;
  return 0;
}

}  // namespace

extern "C" int sysctlbyname(const char* name, void* oldp, size_t* oldlenp, const void* newp, size_t) {
  if (!name) {
    errno = EINVAL;
    return -1;
  }
  const std::string key = name;
  const bool known = key == "hw.memsize" || key == "hw.pagesize" || key == "hw.ncpu" || key == "hw.logicalcpu" ||
                     key == "hw.physicalcpu" || key == "iogpu.rsrc_limit";
  if (!known) {
    errno = ENOENT;
    return -1;
  }
  if (newp) {  // every supported name is read-only
    errno = EPERM;
    return -1;
  }
  if (key == "hw.memsize") {
    std::optional<uint64_t> bytes = physicalMemoryBytes();
    if (!bytes) {
      errno = ENOENT;
      return -1;
    }
    return answer<uint64_t>(*bytes, oldp, oldlenp);
  }
  if (key == "hw.pagesize") return answer<int64_t>(sysconf(_SC_PAGESIZE), oldp, oldlenp);
  if (key == "iogpu.rsrc_limit") {
    m2v::metal::DeviceImpl* device = m2v::metal::defaultDevice();
    if (!device) {
      errno = ENOENT;
      return -1;
    }
    return answer<size_t>(size_t(device->maxAllocations), oldp, oldlenp);
  }
  return answer<int32_t>(int32_t(sysconf(_SC_NPROCESSORS_ONLN)), oldp, oldlenp);
}
