// The counters behind include/metal2vk/metal_statistics.h.
#include "metal2vk/metal_statistics.h"

#include "objects.h"

namespace m2v::metal {

StatisticsCounters& statisticsCounters() {
  static StatisticsCounters counters;
  return counters;
}

Statistics statistics() {
  const StatisticsCounters& c = statisticsCounters();
  Statistics s;
  s.commandBuffersCommitted = c.commandBuffersCommitted.load(std::memory_order_relaxed);
  s.dispatches = c.dispatches.load(std::memory_order_relaxed);
  s.barriers = c.barriers.load(std::memory_order_relaxed);
  return s;
}

}  // namespace m2v::metal
