#pragma once
// Helpers for the family tests: build a problem the way the CLI does (family defaults for the
// fields not given), generate, and measure the figures the published formulas talk about.

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"

namespace schedc::test {

/// A problem for `family` with pp ranks and m microbatches, the family's defaults applied for
/// every field not listed in `given` (set those on the returned problem before generating).
inline ir::Problem family_problem(std::string_view family, int32_t pp, int32_t m,
                                  const std::vector<ir::Field>& given = {}, ir::Problem base = {}) {
  base.ranks = pp;
  base.microbatches = m;
  const solver::FamilyInfo* f = solver::find_family(family);
  if (f) solver::apply_family_defaults(*f, given, base);
  return base;
}

inline void set_costs(ir::Problem& p, double f, double b, double w) {
  p.cost.F = ir::PerStage::of(f);
  p.cost.B = ir::PerStage::of(b);
  p.cost.W = ir::PerStage::of(w);
}

struct Generated {
  std::optional<ir::Schedule> schedule;
  Diagnostics diags;
  bool ok() const { return schedule.has_value(); }
};

inline Generated generate(std::string_view family, const ir::Problem& p, const ir::Params& params = {}) {
  Generated g;
  g.schedule = solver::generate_family(family, p, params, SourceLoc{}, g.diags);
  return g;
}

inline ir::Params params(std::string key, double value) {
  ir::Params ps;
  ir::Param prm;
  prm.key = std::move(key);
  prm.value = value;
  ps.items.push_back(prm);
  return ps;
}

/// The figures of docs/design.md section 3 plus the published formulas' bubble: the idle time inside the
/// span of the busiest rank (max rank span minus max busy time, as the Zero Bubble paper counts).
struct Figures {
  double makespan = 0, bubble = 0, bubble_ratio = 0, span_bubble_rate = 0, peak = 0;
  std::vector<double> peaks, busy;
};

inline Figures figures(const ir::Schedule& s) {
  ir::SimResult r = ir::simulate(s);
  Figures f;
  if (!r.timeline) return f;
  const ir::Metrics& m = r.timeline->metrics;
  f.makespan = m.makespan;
  f.bubble = m.max_rank_span - *std::max_element(m.busy.begin(), m.busy.end());
  f.bubble_ratio = m.bubble_ratio;
  f.span_bubble_rate = m.span_bubble_rate;
  f.peaks = m.peak_memory;
  f.busy = m.busy;
  f.peak = *std::max_element(m.peak_memory.begin(), m.peak_memory.end());
  return f;
}

inline const std::vector<std::string>& all_family_names() {
  static const std::vector<std::string> names = {
      "gpipe",  "1f1b",  "interleaved-1f1b", "looped-bfs", "zb-h1",    "zb-h2", "interleaved-zb", "zb-v",
      "v-half", "v-min", "chimera",          "dualpipe",   "dualpipev"};
  return names;
}

}  // namespace schedc::test
