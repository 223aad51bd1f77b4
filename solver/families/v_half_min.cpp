// V-Half and V-Min ("Pipeline Parallelism with Controllable Memory", Qi et al., NeurIPS 2024):
// V-shaped schedules whose steady state repeats every 6 slots per microbatch with the four passes
// of rank i at fixed offsets (the paper's building blocks, as sail-sg's zbv_greedy.py writes
// them). The offsets set how long activations live, so about 1/2 (V-Half) or 1/3 (V-Min) of
// 1F1B's. The order comes from simulating the execution: a free rank runs its ready pass with the
// earliest slot, within the memory the repeating pattern itself needs; W passes fill the gaps.
// This squeezes the warm-up and cool-down as the paper's reordering pass does.

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

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
    if (ev[e].slot == slot) {
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

std::optional<ir::Schedule> generate_v(const FamilyContext& cx, Pattern (*pattern)(int32_t, int32_t)) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t m = p.microbatches, n = p.ranks;
  ListScheduler ls(p);
  ls.queue_weights(true);
  std::vector<int64_t> limit;
  for (int32_t r = 0; r < n; ++r) {
    const int32_t s0 = stage_on(p, 0, r, 0), s1 = stage_on(p, 0, r, 1);
    const Pattern pat = pattern(n, r);
    // The rank's F and B passes in slot order: one fixed stream.
    std::vector<std::pair<int64_t, ir::Action>> slots;
    for (int32_t k = 0; k < m; ++k) {
      int64_t base = 6 * int64_t{k};
      slots.emplace_back(pat[0] + base, ir::F(k, s0));
      slots.emplace_back(pat[1] + base, ir::F(k, s1));
      slots.emplace_back(pat[2] + base, ir::B(k, s1));
      slots.emplace_back(pat[3] + base, ir::B(k, s0));
    }
    std::sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ir::Action> order;
    for (const auto& [slot, a] : slots) order.push_back(a);
    ls.add_stream(r, std::move(order));
    limit.push_back(pattern_peak(ls, pat, m, ir::F(0, s0), ir::F(0, s1)));
  }
  // The next F or B when its memory fits the pattern's own peak, else the oldest W.
  bool ok = ls.run([&](int32_t r, const ListScheduler::Candidate& c,
                       const ListScheduler::RankState& st) -> std::optional<int64_t> {
    if (c.stream < 0) return 1;
    int64_t delta = ls.memory_delta(c.action);
    if (delta > 0 && st.memory + delta > limit[static_cast<size_t>(r)]) return std::nullopt;
    return 0;
  });
  if (!ok) return cx.internal("the list scheduler could not complete the streams");
  return ls.take();
}

}  // namespace

std::optional<ir::Schedule> generate_v_half(const FamilyContext& cx) { return generate_v(cx, v_half); }
std::optional<ir::Schedule> generate_v_min(const FamilyContext& cx) { return generate_v(cx, v_min); }

}  // namespace schedc::solver::fam
