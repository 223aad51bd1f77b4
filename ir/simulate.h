#pragma once
// The simulator: as-soon-as-possible execution of a schedule (docs/design.md section 3), exact for decimal
// inputs (fixed-point ticks), and its metrics; the reference semantics, so it uses no ir::DepGraph.

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/schedule.h"

namespace schedc::ir {

/// docs/design.md section 3 metrics, in the problem's time and memory units.
struct Metrics {
  double makespan = 0;
  double bubble_ratio = 0;
  double max_rank_span = 0;
  double span_bubble_rate = 0;
  std::vector<double> peak_memory;  // per rank
  std::vector<double> busy;         // per rank

  /// The value the problem's objective minimises (makespan or max_rank_span).
  double objective_value(Objective o) const { return o == Objective::Makespan ? makespan : max_rank_span; }
};

struct Timeline {
  int64_t scale = 1;  // ticks per time unit
  /// start[r][i], end[r][i]: ticks of rank r's i-th action; both members of an overlapped unit
  /// carry the unit's interval.
  std::vector<std::vector<int64_t>> start, end;
  Metrics metrics;

  double time(int64_t ticks) const { return static_cast<double>(ticks) / static_cast<double>(scale); }
};

/// Where a rank is stuck when the execution cannot complete.
struct Stall {
  RankId rank;
  int32_t position = 0;  // index of the first action that cannot start
  Action action;
  Action waits_for;  // a dependency that never completes (or has not yet)
};

struct SimResult {
  std::optional<Timeline> timeline;  // set when every rank completed
  std::vector<Stall> stalls;         // one per stuck rank otherwise
};

/// Runs the schedule. Every action must be in range; a missing or cyclic dependency stalls.
SimResult simulate(const Schedule& s);

/// Peak activation memory per rank: the largest prefix sum of deltas (at least 0).
std::vector<double> peak_memory(const Schedule& s);

}  // namespace schedc::ir
