// The simulated timeline as a Chrome/Perfetto trace, written by the runtime's own writer so that a
// simulated and a measured trace open side by side. Times are the problem's own unit (`us` for a
// profiled spec) in the trace's microseconds; a problem in plain numbers takes 1 unit = 1 ms.

#include "codegen/emit.h"

#include <algorithm>
#include <tuple>

#include "ir/json_io.h"
#include "schedrt/trace.h"
#include "support/numbers.h"
#include "support/units.h"

namespace schedc::codegen {
namespace {

// Microseconds per time unit of `p`: its unit's (`ms` 1000, `us` 1, `ns` 0.001), else 1 ms.
double us_per_unit(const ir::Problem& p) {
  if (const Unit* u = find_unit(p.time_unit); u && u->dim == Dimension::Time) return u->scale / 1000;
  return 1000;
}

double to_us(const ir::Schedule& s, const ir::Timeline& t, int64_t ticks) {
  return t.time(ticks) * us_per_unit(s.problem);
}

// Compute events: one per action, one per overlapped unit (kind "FB", named "(F7.s0 BW3.s7)").
void add_compute(const ir::Schedule& s, const ir::Timeline& t, std::vector<schedrt::TraceEvent>& out) {
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& order = s.ranks[r];
    for (size_t i = 0; i < order.size(); ++i) {
      schedrt::TraceEvent e;
      e.rank = static_cast<int32_t>(r);
      e.thread = schedrt::TraceThread::Compute;
      e.ts_us = to_us(s, t, t.start[r][i]);
      e.dur_us = to_us(s, t, t.end[r][i] - t.start[r][i]);
      if (s.overlap_starts_at(r, static_cast<int32_t>(i)) && i + 1 < order.size()) {
        e.name = "(" + ir::format_action(order[i]) + " " + ir::format_action(order[i + 1]) + ")";
        e.kind = "FB";
        ++i;
      } else {
        e.name = ir::format_action(order[i]);
        e.kind = std::string(ir::to_string(order[i].kind));
        e.microbatch = order[i].mb.value;
        e.stage = order[i].stage.value;
      }
      out.push_back(std::move(e));
    }
  }
}

// Transfers: every dependency between two ranks occupies the sender's comm thread for `comm`,
// from the producer's end. Sorted by sender, start and name so that the output is stable.
void add_transfers(const ir::Schedule& s, const ir::Timeline& t, std::vector<schedrt::TraceEvent>& out) {
  const ir::Problem& p = s.problem;
  if (p.cost.comm <= 0) return;
  const ir::ScheduleIndex index(s);
  const int64_t comm = ir::to_fixed(p.cost.comm, t.scale);
  std::vector<schedrt::TraceEvent> sends;
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (ir::Action a : s.ranks[r])
      for (ir::Action d : ir::dependencies(p, a, index)) {
        ir::ScheduleIndex::Pos from = index.find(d);
        if (!from.found() || from.rank == static_cast<int32_t>(r)) continue;
        schedrt::TraceEvent e;
        e.rank = from.rank;
        e.thread = schedrt::TraceThread::Comm;
        e.name = "send " + ir::format_action(d) + " -> " + std::to_string(r);
        e.kind = "send";
        e.microbatch = d.mb.value;
        e.stage = d.stage.value;
        int64_t ready = t.end[static_cast<size_t>(from.rank)][static_cast<size_t>(from.index)];
        e.ts_us = to_us(s, t, ready);
        e.dur_us = to_us(s, t, comm);
        sends.push_back(std::move(e));
      }
  std::stable_sort(sends.begin(), sends.end(), [](const schedrt::TraceEvent& a, const schedrt::TraceEvent& b) {
    return std::tie(a.rank, a.ts_us, a.name) < std::tie(b.rank, b.ts_us, b.name);
  });
  out.insert(out.end(), sends.begin(), sends.end());
}

}  // namespace

std::string emit_perfetto(const ir::Schedule& s, const ir::Timeline& t) {
  std::vector<schedrt::TraceEvent> events;
  add_compute(s, t, events);
  add_transfers(s, t, events);
  std::vector<std::pair<std::string, std::string>> meta = {
      {"source", "\"schedc simulation\""},
      {"time_unit_us", format_number(us_per_unit(s.problem))},
      {"problem", ir::problem_json(s.problem)},
      {"metrics", ir::metrics_json(t.metrics)},
  };
  return schedrt::trace_json(events, s.problem.ranks, meta);
}

}  // namespace schedc::codegen
