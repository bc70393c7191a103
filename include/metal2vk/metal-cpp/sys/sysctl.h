/* sysctlbyname for Linux, answered by metal2vk (m2v_metal) from /proc and the Vulkan device:
 *   hw.memsize       physical memory in bytes (uint64_t; /proc/meminfo MemTotal)
 *   hw.pagesize      page size in bytes (int64_t)
 *   hw.ncpu, hw.logicalcpu, hw.physicalcpu   online CPUs (int32_t)
 *   iogpu.rsrc_limit the most memory allocations the default Vulkan device allows (size_t; maxMemoryAllocationCount)
 * Other names fail with ENOENT, a read-only value asked to be written with EPERM, a short buffer with ENOMEM, as the
 * BSD call does. */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int sysctlbyname(const char* name, void* oldp, size_t* oldlenp, const void* newp, size_t newlen);

#ifdef __cplusplus
}
#endif
