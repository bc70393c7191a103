// Process-wide counters of metal2vk's Metal API (include/metal2vk/metal-cpp): what a Metal program costs the host,
// in command buffers committed and commands encoded. A metal2vk extension; Apple's API has no such call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace m2v::metal {

struct Statistics {
  uint64_t commandBuffersCommitted = 0;  // command buffers committed (each counts once)
  uint64_t dispatches = 0;               // dispatchThreads / dispatchThreadgroups recorded on the GPU
  uint64_t barriers = 0;                 // memoryBarrier calls (and the serial encoder's implicit ones) recorded
  // With profiling on (below): GPU time of completed command buffers, each from its first dispatch's start to its
  // last dispatch's end (the time the GPU was busy with them, gaps between command buffers excluded).
  double gpuNs = 0;
};

// A snapshot; the counters only grow (subtract two snapshots to measure a piece of work).
Statistics statistics();

// Profiling: with the environment variable M2V_METAL_PROFILE=1 at the first command buffer, every dispatch is timed
// on the GPU (timestamp queries around it: a small cost per dispatch) and its time is added to its kernel's total.
bool profiling();
struct KernelTime {
  std::string kernel;  // the entry point's name (MLX's kernel name)
  uint64_t dispatches = 0;
  double gpuNs = 0;  // sum of the dispatches' own spans (dispatches without a barrier between them may overlap)
};
// Totals per kernel since the process started, largest time first; empty without profiling.
std::vector<KernelTime> kernelTimes();

}  // namespace m2v::metal

// The same as JSON, for callers that find functions by name (Python's ctypes in a process that loaded MLX):
// {"command_buffers": N, "dispatches": N, "barriers": N, "profiling": bool, "gpu_ns": X,
//  "kernels": [["name", dispatches, gpu_ns], ...]}. The string stays valid until the thread's next call.
extern "C" const char* m2v_metal_statistics_json();
