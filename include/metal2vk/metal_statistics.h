// Process-wide counters of metal2vk's Metal API (include/metal2vk/metal-cpp): what a Metal program costs the host,
// in command buffers committed and commands encoded. A metal2vk extension; Apple's API has no such call.
#pragma once

#include <cstdint>

namespace m2v::metal {

struct Statistics {
  uint64_t commandBuffersCommitted = 0;  // command buffers committed (each counts once)
  uint64_t dispatches = 0;               // dispatchThreads / dispatchThreadgroups recorded on the GPU
  uint64_t barriers = 0;                 // memoryBarrier calls (and the serial encoder's implicit ones) recorded
};

// A snapshot; the counters only grow (subtract two snapshots to measure a piece of work).
Statistics statistics();

}  // namespace m2v::metal
