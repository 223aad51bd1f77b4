// Interleaved zero bubble: ZB1P over vpp >= 2 looped chunks, after PyTorch's
// ScheduleInterleavedZeroBubble. Rank r follows interleaved 1F1B's schedule table (groups of g
// microbatches through each chunk in turn) with a warm-up of (vpp-1)g + (pp-1-r) forwards, one per
// hop instead of interleaved 1F1B's two, since a B no longer waits for its W; then F, B pairs, the
// W of the k-th backward right after the (k+r)-th B, so that rank r's last r W passes fill its
// cool-down. The table has PyTorch's max(1, m/pp) rounds of g = m / rounds microbatches each;
// PyTorch refuses an m that the rounds do not divide, schedc then makes the groups differ by at
// most one (the larger first, g the first's size), which keeps the order optimal for F = B = W
// without comm latency whenever m >= pp (tests/unit/families checks a grid).
//
// That order is fixed whatever the costs. The timed variants keep it as the plan and run the
// problem's costs through the greedy list scheduler: whenever the plan's next pass is not ready, a
// rank runs what is (the plan's next pass of the other kind, a pending W, in some variants any
// chunk's next B) if it ends before that pass could start, or, in the eager variants, even if it
// delays it; every rank stays within the fixed order's peak (its highest rank's). Forwards keep
// the table's order: one taken early from a later group could hold memory the plan needs. The
// family returns the best of the fixed order and the timed ones, the fixed one on ties.

#include <algorithm>
#include <array>
#include <limits>
#include <utility>
#include <vector>

#include "ir/simulate.h"
#include "solver/families/common.h"

namespace schedc::solver::fam {
namespace {

// (microbatch, chunk) pairs in table order.
using Table = std::vector<std::pair<int32_t, int32_t>>;

Table schedule_table(int32_t m, int32_t v, int32_t rounds) {
  Table table;
  table.reserve(static_cast<size_t>(m) * static_cast<size_t>(v));
  for (int32_t round = 0, start = 0; round < rounds; ++round) {
    const int32_t size = m / rounds + (round < m % rounds ? 1 : 0);
    for (int32_t chunk = 0; chunk < v; ++chunk)
      for (int32_t mb = start; mb < start + size; ++mb) table.emplace_back(mb, chunk);
    start += size;
  }
  return table;
}

// Rank r's forwards and backwards of table entry `k` (the backward on the mirrored chunk).
ir::Action forward_of(const ir::Problem& p, const Table& table, int32_t r, size_t k) {
  return ir::F(table[k].first, stage_on(p, 0, r, table[k].second));
}
ir::Action backward_of(const ir::Problem& p, const Table& table, int32_t r, size_t k) {
  return ir::B(table[k].first, stage_on(p, 0, r, p.stages_per_rank - 1 - table[k].second));
}

int32_t warmup_of(const ir::Problem& p, int32_t g, int32_t r, int32_t total) {
  return std::min<int32_t>((p.stages_per_rank - 1) * g + (p.ranks - 1 - r), total);
}

// PyTorch's order: the warm-up forwards, then F, B pairs with the W of backward k - r after
// backward k, then the cool-down backwards (same rule), then the W passes still pending.
ir::Schedule fixed_order(const ir::Problem& p, const Table& table, int32_t g) {
  const int32_t total = static_cast<int32_t>(table.size());
  OrderBuilder out(p);
  for (int32_t r = 0; r < p.ranks; ++r) {
    const int32_t warmup = warmup_of(p, g, r, total);
    auto at = [](int32_t k) { return static_cast<size_t>(k); };
    auto weight = [&](int32_t k) {
      ir::Action b = backward_of(p, table, r, at(k));
      return ir::W(b.mb.value, b.stage.value);
    };
    int32_t w = 0;
    for (int32_t k = 0; k < warmup; ++k) out.push(forward_of(p, table, r, at(k)));
    for (int32_t k = 0; k < total; ++k) {
      if (k + warmup < total) out.push(forward_of(p, table, r, at(k + warmup)));
      out.push(backward_of(p, table, r, at(k)));
      if (k >= r) out.push(weight(w++));
    }
    while (w < total) out.push(weight(w++));
  }
  return out.take();
}

struct Timing {
  bool eager = false;      // a ready F or B may run even when it delays the plan's next pass
  bool any_chunk = false;  // any chunk's next B may fill a gap, not only the plan's next one
};

// The fixed order as a plan, timed by the list scheduler (see the file comment). Streams 2c and
// 2c + 1 hold chunk c's forwards and backwards in table order; the plan's next pass is the first
// table entry of the kind the plan runs next (after the warm-up: F while fewer than backwards +
// warm-up + 1 forwards ran) that has not run.
std::optional<ir::Schedule> timed_order(const ir::Problem& p, const Table& table, int32_t g, int64_t limit, Timing opt,
                                        const Deadline* deadline) {
  const int32_t pp = p.ranks, v = p.stages_per_rank;
  const int32_t total = static_cast<int32_t>(table.size());
  ListScheduler ls(p, deadline);
  ls.queue_weights(true);
  for (int32_t r = 0; r < pp; ++r)
    for (int32_t c = 0; c < v; ++c) {
      std::vector<ir::Action> f, b;
      for (size_t k = 0; k < table.size(); ++k)
        if (table[k].second == c) f.push_back(forward_of(p, table, r, k)), b.push_back(backward_of(p, table, r, k));
      ls.add_stream(r, std::move(f));
      ls.add_stream(r, std::move(b));
    }
  // Streams only advance, so one pointer per rank and kind finds the first entry not run.
  std::vector<std::array<size_t, 2>> cursor(static_cast<size_t>(pp), {0, 0});
  auto planned = [&](int32_t r, int32_t kind) -> int32_t {
    size_t& k = cursor[static_cast<size_t>(r)][static_cast<size_t>(kind)];
    for (; k < table.size(); ++k) {
      const int32_t stream = 2 * table[k].second + kind;
      std::optional<ir::Action> h = ls.head(r, stream);
      if (h && h->mb.value <= table[k].first) return stream;
    }
    return -1;
  };
  auto fits = [&](ir::Action a, const ListScheduler::RankState& st) {
    int64_t d = ls.memory_delta(a);
    return d <= 0 || st.memory + d <= limit;
  };
  bool ok = ls.run(
      [&](int32_t r, const ListScheduler::Candidate& c, const ListScheduler::RankState& st) -> std::optional<int64_t> {
        if (!fits(c.action, st)) return std::nullopt;
        const bool is_weight = c.stream < 0;
        if (is_weight && (st.backwards == total || st.backwards >= st.weights + r + 1)) return 0;  // the plan's W
        const int32_t warmup = warmup_of(p, g, r, total);
        const bool forward_next = st.backwards == total || st.forwards < warmup ||
                                  (st.forwards < total && st.forwards < st.backwards + warmup + 1);
        const int32_t next = planned(r, forward_next ? 0 : 1);
        if (c.stream == next) return 1;
        const bool other_kind = c.stream == planned(r, forward_next ? 1 : 0);
        if (!is_weight && !other_kind && !(opt.any_chunk && c.action.kind == ir::ActionKind::B)) return std::nullopt;
        std::optional<ir::Action> head = next >= 0 ? ls.head(r, next) : std::nullopt;
        if (is_weight && head && !fits(*head, st)) return 1;  // frees the memory the next F needs
        const int64_t at = std::max(st.free_at, c.ready);
        const bool delays = head && at + ls.duration(c.action) > ls.earliest_start(*head);
        if (delays && (is_weight || !opt.eager)) return std::nullopt;
        if (is_weight) return 4;
        return c.action.kind == ir::ActionKind::B ? 2 : 3;
      });
  if (!ok || ls.overrides() > 0) return std::nullopt;
  return ls.take();
}

double objective(const ir::Schedule& s) {
  ir::SimResult r = ir::simulate(s);
  if (!r.timeline) return std::numeric_limits<double>::infinity();
  return r.timeline->metrics.objective_value(s.problem.objective);
}

}  // namespace

std::optional<ir::Schedule> generate_interleaved_zb(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t rounds = std::max(1, p.microbatches / p.ranks);
  const int32_t g = (p.microbatches + rounds - 1) / rounds;  // the first (largest) group
  const Table table = schedule_table(p.microbatches, p.stages_per_rank, rounds);

  ir::Schedule fixed = fixed_order(p, table, g);
  std::vector<double> peaks = ir::peak_memory(fixed);
  const int64_t limit = ir::to_fixed(*std::max_element(peaks.begin(), peaks.end()), ir::memory_scale(p));
  std::optional<ir::Schedule> best;
  double best_value = std::numeric_limits<double>::infinity();
  auto consider = [&](ir::Schedule s) {
    double v = objective(s);
    if (v < best_value) best_value = v, best = std::move(s);
  };
  consider(std::move(fixed));
  for (bool any_chunk : {false, true})
    for (bool eager : {false, true})
      if (auto s = timed_order(p, table, g, limit, {eager, any_chunk}, cx.deadline)) consider(std::move(*s));
  if (!best) return cx.internal("neither PyTorch's order nor a timed one completes");
  return best;
}

}  // namespace schedc::solver::fam
