// The counters and the profile behind include/metal2vk/metal_statistics.h.
#include "metal2vk/metal_statistics.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "objects.h"

namespace m2v::metal {
namespace {

struct Profile {
  std::mutex mutex;
  std::map<std::string, KernelTime> kernels;
  double gpuNs = 0;
};

Profile& profile() {
  static Profile p;
  return p;
}

// JSON string literal content (kernel names are identifiers, but nothing here relies on it).
void writeEscaped(std::ostringstream& out, const std::string& text) {
  for (char c : text) {
    if (c == '"' || c == '\\')
      out << '\\' << c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out << ' ';
    else
      out << c;
  }
}

}  // namespace

StatisticsCounters& statisticsCounters() {
  static StatisticsCounters counters;
  return counters;
}

bool profiling() {
  static const bool enabled = [] {
    const char* env = std::getenv("M2V_METAL_PROFILE");
    return env && std::string(env) == "1";
  }();
  return enabled;
}

void recordTimings(const std::vector<m2v::DispatchTiming>& timings) {
  if (timings.empty()) return;
  double start = timings.front().startNs, end = timings.front().endNs;
  Profile& p = profile();
  std::lock_guard lock(p.mutex);
  for (const m2v::DispatchTiming& t : timings) {
    KernelTime& k = p.kernels[t.kernel];
    k.kernel = t.kernel;
    k.dispatches++;
    k.gpuNs += t.gpuNs;
    start = std::min(start, t.startNs);
    end = std::max(end, t.endNs);
  }
  p.gpuNs += end - start;
}

Statistics statistics() {
  const StatisticsCounters& c = statisticsCounters();
  Statistics s;
  s.commandBuffersCommitted = c.commandBuffersCommitted.load(std::memory_order_relaxed);
  s.dispatches = c.dispatches.load(std::memory_order_relaxed);
  s.barriers = c.barriers.load(std::memory_order_relaxed);
  Profile& p = profile();
  std::lock_guard lock(p.mutex);
  s.gpuNs = p.gpuNs;
  return s;
}

std::vector<KernelTime> kernelTimes() {
  Profile& p = profile();
  std::vector<KernelTime> out;
  {
    std::lock_guard lock(p.mutex);
    for (const auto& [name, k] : p.kernels) out.push_back(k);
  }
  std::sort(out.begin(), out.end(), [](const KernelTime& a, const KernelTime& b) { return a.gpuNs > b.gpuNs; });
  return out;
}

}  // namespace m2v::metal

extern "C" const char* m2v_metal_statistics_json() {
  using namespace m2v::metal;
  thread_local std::string text;
  const Statistics s = statistics();
  std::ostringstream out;
  out.precision(17);
  out << "{\"command_buffers\": " << s.commandBuffersCommitted << ", \"dispatches\": " << s.dispatches
      << ", \"barriers\": " << s.barriers << ", \"profiling\": " << (profiling() ? "true" : "false")
      << ", \"gpu_ns\": " << s.gpuNs << ", \"kernels\": [";
  bool first = true;
  for (const KernelTime& k : kernelTimes()) {
    out << (first ? "" : ", ") << "[\"";
    writeEscaped(out, k.kernel);
    out << "\", " << k.dispatches << ", " << k.gpuNs << "]";
    first = false;
  }
  out << "]}";
  text = out.str();
  return text.c_str();
}
