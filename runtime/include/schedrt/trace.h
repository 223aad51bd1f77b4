#pragma once
// Perfetto / Chrome trace JSON, written by the runtime for measured timelines and by schedc for
// simulated ones, so both open side by side in ui.perfetto.dev (docs/design.md section 4).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace schedrt {

/// Threads of a rank's process in the trace.
enum class TraceThread : int32_t { Compute = 0, Comm = 1 };

struct TraceEvent {
  int32_t rank = 0;
  TraceThread thread = TraceThread::Compute;
  std::string name;  // "F3.s1", "send F3.s1 -> 2", "(F7.s0 B3.s7)"
  std::string kind;  // "F", "B", "W", "BW", "FB", "send", "recv", ...
  int32_t microbatch = -1;
  int32_t stage = -1;
  double ts_us = 0;  // start, microseconds from the step's start
  double dur_us = 0;
};

/// The whole trace document: one process per rank ("rank r"), threads "compute" and "comm",
/// complete events ("ph": "X") in the given order, and `metadata` (key, already-JSON value) pairs
/// under "otherData". Ends with a newline.
std::string trace_json(const std::vector<TraceEvent>& events, int32_t ranks,
                       const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace schedrt
