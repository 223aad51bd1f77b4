#pragma once
// `expect` clauses: what a spec promises about its schedule, checked by `schedc verify`
// (regression use): metric bounds, per-rank peak memory, "optimal", "same as family X".

#include <cstdint>
#include <string>
#include <vector>

#include "ir/simulate.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::ir {

enum class Metric { Makespan, MaxRankSpan, BubbleRatio, SpanBubbleRate, PeakMemory, Busy };
enum class Cmp { Eq, Le, Lt, Ge, Gt };

/// "makespan", "max_rank_span", "bubble_ratio", "span_bubble_rate", "peak_memory", "busy".
std::string_view to_string(Metric m);
std::optional<Metric> parse_metric(std::string_view s);
std::string_view to_string(Cmp c);  // "==", "<=", "<", ">=", ">"

struct Expectation {
  enum class Kind {
    MetricBound,  // metric (max over ranks for per-rank metrics, or of `rank`) cmp value
    PerRank,      // per-rank metric equals `values` elementwise
    Optimal,      // the solver proved the schedule optimal
    SameAs,       // the schedule's orders equal those of family `family`
  };
  Kind kind = Kind::MetricBound;
  Metric metric = Metric::Makespan;
  int32_t rank = -1;  // MetricBound on one rank's peak_memory / busy; -1 = max over ranks
  Cmp cmp = Cmp::Eq;
  double value = 0;
  std::vector<double> values;
  std::string unit;  // of `value`/`values` as written (`ms`, `GiB`), empty when plain

  std::string family;
  SourceLoc loc;
};

/// Checks MetricBound and PerRank clauses against simulated metrics (relative tolerance 1e-9);
/// every failure becomes an `expect-failed` diagnostic at the clause. Optimal and SameAs are the
/// driver's (they need the solver and the families). Returns true when all checked clauses hold.
bool check_metric_expectations(const std::vector<Expectation>& expect, const Metrics& m, Diagnostics& diags);

}  // namespace schedc::ir
