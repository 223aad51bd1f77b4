// V-Half and V-Min ("Pipeline Parallelism with Controllable Memory", Qi et al., NeurIPS 2024):
// V-shaped schedules whose steady state repeats every 6 slots per microbatch with the four passes
// of rank i at fixed offsets (the paper's building blocks, as sail-sg's zbv_greedy.py writes
// them). The offsets set how long activations live, so about 1/2 (V-Half) or 1/3 (V-Min) of
// ZB-V's. Each rank runs its F and B passes in slot order as soon as possible, within the memory
// the repeating pattern itself needs, with W passes where the rank would wait anyway; a second
// run also lets a later pass go early when that delays nothing and keeps the rest of the pattern
// within that memory (the paper's reordering of the warm-up and cool-down). The faster of the two
// is kept.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "ir/simulate.h"
#include "solver/families/common.h"

namespace schedc::solver::fam {
namespace {

// Slot offsets of rank i's F (chunk 0), F (chunk 1), B (chunk 1), B (chunk 0) for microbatch 0;
// microbatch k adds 6k.
using Pattern = std::array<int64_t, 4>;

Pattern v_half(int32_t n, int32_t i) {
  int64_t gap = n % 2 == 0 ? 3 : 0;
  return {2 * i, 3 * n - i - 2, 3 * n + gap + 2 * i - 1, 6 * n + gap - i - 2};
}

Pattern v_min(int32_t n, int32_t i) {
  int64_t gap = n % 3 == 0 ? 2 : 0;
  return {i, 2 * n - i - 1, 2 * n + gap + i, 4 * n + gap - i - 1};
}

// Peak memory of one rank running the pattern in slot order with its W passes in the free slots
// (in the problem's memory units, fixed-point).
int64_t pattern_peak(const ListScheduler& ls, const Pattern& pat, int32_t m, ir::Action f0, ir::Action f1) {
  struct Ev {
    int64_t slot;
    int32_t type, mb;
  };
  std::vector<Ev> ev;
  for (int32_t k = 0; k < m; ++k)
    for (int32_t t = 0; t < 4; ++t) ev.push_back({pat[static_cast<size_t>(t)] + 6 * int64_t{k}, t, k});
  std::sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.slot < b.slot; });
  const int32_t s0 = f0.stage.value, s1 = f1.stage.value;
  auto action = [&](int32_t type, int32_t mb) {
    switch (type) {
      case 0: return ir::F(mb, s0);
      case 1: return ir::F(mb, s1);
      case 2: return ir::B(mb, s1);
      default: return ir::B(mb, s0);
    }
  };
  std::vector<ir::Action> pending_w;
  size_t next_w = 0, e = 0;
  int64_t cur = 0, peak = 0;
  for (int64_t slot = 0; e < ev.size(); ++slot) {
    if (ev[e].slot <= slot) {  // slots are distinct per rank; <= keeps this loop finite regardless
      ir::Action a = action(ev[e].type, ev[e].mb);
      cur += ls.memory_delta(a);
      if (a.kind == ir::ActionKind::B) pending_w.push_back(ir::W(a.mb.value, a.stage.value));
      ++e;
    } else if (next_w < pending_w.size()) {
      cur += ls.memory_delta(pending_w[next_w++]);
    }
    peak = std::max(peak, cur);
  }
  return peak;
}

struct Attempt {
  ir::Schedule schedule;
  bool within_limits = false;
  bool expired = false;  // the deadline passed before the pattern completed
};

// Runs the pattern. Strict: each rank's F and B passes in slot order. Squeezed: a later pass may
// also run early, when it is ready, ends before the next pass in slot order could start, and the
// memory it holds until its own slot keeps the rest of the pattern under the limit (the condition
// of the paper's reordering pass, checked against the passes still to come in slot order).
Attempt run_pattern(const ir::Problem& p, Pattern (*pattern)(int32_t, int32_t), bool squeeze,
                    const Deadline* deadline) {
  const int32_t m = p.microbatches, n = p.ranks;
  ListScheduler ls(p, deadline);
  ls.queue_weights(true);
  struct Item {
    int64_t slot;
    int32_t type;
    ir::Action action;
  };
  std::vector<Pattern> pats;
  std::vector<int64_t> limit;
  std::vector<std::vector<Item>> order(static_cast<size_t>(n));        // [rank]: passes in slot order
  std::vector<std::vector<int32_t>> position(static_cast<size_t>(n));  // [rank][type * m + mb]
  for (int32_t r = 0; r < n; ++r) {
    const int32_t s0 = stage_on(p, 0, r, 0), s1 = stage_on(p, 0, r, 1);
    const Pattern pat = pattern(n, r);
    std::vector<std::vector<ir::Action>> by_type(4);
    auto& items = order[static_cast<size_t>(r)];
    for (int32_t k = 0; k < m; ++k) {
      const ir::Action a[4] = {ir::F(k, s0), ir::F(k, s1), ir::B(k, s1), ir::B(k, s0)};
      for (int32_t t = 0; t < 4; ++t) {
        by_type[static_cast<size_t>(t)].push_back(a[t]);
        items.push_back({pat[static_cast<size_t>(t)] + 6 * int64_t{k}, t, a[t]});
      }
    }
    std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.slot < y.slot; });
    auto& pos = position[static_cast<size_t>(r)];
    pos.assign(static_cast<size_t>(4 * m), 0);
    for (size_t i = 0; i < items.size(); ++i)
      pos[static_cast<size_t>(items[i].type * m + items[i].action.mb.value)] = static_cast<int32_t>(i);
    for (auto& stream : by_type) ls.add_stream(r, std::move(stream));  // stream index = pattern type
    pats.push_back(pat);
    limit.push_back(pattern_peak(ls, pat, m, ir::F(0, s0), ir::F(0, s1)));
  }
  // The next microbatch of each pattern type on a rank (m when the type is done).
  auto next_mb = [&](int32_t r, int32_t t) {
    auto h = ls.head(r, t);
    return h ? h->mb.value : m;
  };
  // earliest_start of a rank's next pass, cached until the next action runs anywhere.
  struct Bound {
    size_t version = SIZE_MAX;
    ir::Action head;
    int64_t start = 0;
  };
  std::vector<Bound> bounds(static_cast<size_t>(n));
  auto head_start = [&](int32_t r, ir::Action head) {
    Bound& b = bounds[static_cast<size_t>(r)];
    if (b.version != ls.runs() || !(b.head == head)) b = {ls.runs(), head, ls.earliest_start(head)};
    return b.start;
  };
  bool ok = ls.run([&](int32_t r, const ListScheduler::Candidate& c,
                       const ListScheduler::RankState& st) -> std::optional<int64_t> {
    const size_t R = static_cast<size_t>(r);
    const int64_t lim = limit[R];
    auto grow = [&](ir::Action a) { return std::max<int64_t>(0, ls.memory_delta(a)); };
    int32_t first = static_cast<int32_t>(order[R].size());  // position of the next pass in slot order
    for (int32_t t = 0; t < 4; ++t)
      if (int32_t k = next_mb(r, t); k < m) first = std::min(first, position[R][static_cast<size_t>(t * m + k)]);
    const Item* head = first < static_cast<int32_t>(order[R].size()) ? &order[R][static_cast<size_t>(first)] : nullptr;
    if (c.stream >= 0 && head && c.action == head->action)
      return st.memory + grow(c.action) <= lim ? std::optional<int64_t>(0) : std::nullopt;
    const int64_t at = std::max(st.free_at, c.ready);
    const bool before_head = !head || at + ls.duration(c.action) <= head_start(r, head->action);
    if (c.stream < 0) {  // a W: where the next pass would wait anyway, or to make room for it
      bool blocked = head && st.memory + grow(head->action) > lim;
      return (before_head || blocked) ? std::optional<int64_t>(2) : std::nullopt;
    }
    if (!squeeze || !before_head) return std::nullopt;
    // Memory from now to the candidate's own slot, the passes in between kept in slot order
    // (pending W passes not counted: an upper bound), must stay within the limit with it held.
    const int32_t own = position[R][static_cast<size_t>(c.stream * m + c.action.mb.value)];
    if (own - first > 8 * n) return std::nullopt;  // far ahead: not worth the look
    int64_t cur = st.memory + ls.memory_delta(c.action), high = cur;
    for (int32_t i = first; i < own; ++i) {
      const Item& it = order[R][static_cast<size_t>(i)];
      if (it.action.mb.value < next_mb(r, it.type)) continue;  // already ran
      cur += ls.memory_delta(it.action);
      high = std::max(high, cur);
    }
    if (high > lim) return std::nullopt;
    return c.action.kind == ir::ActionKind::F ? 3 : 1;
  });
  Attempt out;
  out.expired = ls.expired();
  if (!ok) return out;
  out.schedule = ls.take();
  out.within_limits = ls.overrides() == 0;
  return out;
}

std::optional<ir::Schedule> generate_v(const FamilyContext& cx, Pattern (*pattern)(int32_t, int32_t)) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  Attempt strict = run_pattern(p, pattern, false, cx.deadline);
  if (strict.expired) return std::nullopt;
  Attempt squeezed = run_pattern(p, pattern, true, cx.deadline);
  if (squeezed.expired) return std::nullopt;
  if (!strict.within_limits && !squeezed.within_limits && strict.schedule.ranks.empty())
    return cx.internal("the list scheduler could not complete the pattern");
  // Keep the squeezed order when it stayed within the pattern's memory and is not slower.
  auto makespan = [](const ir::Schedule& s) {
    ir::SimResult r = ir::simulate(s);
    return r.timeline ? r.timeline->metrics.makespan : std::numeric_limits<double>::infinity();
  };
  if (squeezed.within_limits && !squeezed.schedule.ranks.empty() &&
      (!strict.within_limits || makespan(squeezed.schedule) <= makespan(strict.schedule)))
    return std::move(squeezed.schedule);
  return std::move(strict.schedule);
}

}  // namespace

std::optional<ir::Schedule> generate_v_half(const FamilyContext& cx) { return generate_v(cx, v_half); }
std::optional<ir::Schedule> generate_v_min(const FamilyContext& cx) { return generate_v(cx, v_min); }

}  // namespace schedc::solver::fam
