#pragma once
// Random valid schedules for property tests: a random problem, then a random topological order of
// all its actions (each rank's order is that order's subsequence, so it is deadlock-free by
// construction), with random overlapped F&B units where they are legal.

#include <random>
#include <vector>

#include "ir/schedule.h"
#include "ir/verify.h"

namespace schedc::test {

using Rng = std::mt19937;
inline int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

inline ir::Problem random_problem(Rng& rng) {
  using namespace ir;
  Problem p;
  p.ranks = uniform(rng, 1, 5);
  switch (uniform(rng, 0, 2)) {
    case 0: p.placement = PlacementKind::Looped, p.stages_per_rank = uniform(rng, 1, 3); break;
    case 1: p.placement = PlacementKind::VShape, p.stages_per_rank = 2; break;
    default: p.placement = PlacementKind::Wave, p.stages_per_rank = uniform(rng, 2, 3); break;
  }
  p.direction = uniform(rng, 0, 3) == 0 ? Direction::Bidirectional : Direction::Single;
  p.microbatches = uniform(rng, 1, 6);
  if (p.direction == Direction::Bidirectional) p.microbatches = 2 * uniform(rng, 1, 3);
  p.backward = static_cast<BackwardMode>(uniform(rng, 0, 2));
  p.cost.F = PerStage::of(uniform(rng, 0, 3));
  p.cost.B = PerStage::of(uniform(rng, 0, 3));
  p.cost.W = PerStage::of(uniform(rng, 0, 2));
  p.cost.comm = uniform(rng, 0, 1);
  return p;
}

/// A random valid schedule for `p` (ir::verify accepts it; asserted by the caller).
inline ir::Schedule random_schedule(const ir::Problem& p, Rng& rng, bool with_overlap) {
  using namespace ir;
  const int S = p.num_stages(), m = p.microbatches;
  std::vector<Action> all;
  std::vector<char> fused(static_cast<size_t>(m * S), p.backward == BackwardMode::Fused);
  for (int mb = 0; mb < m; ++mb)
    for (int s = 0; s < S; ++s) {
      char& f = fused[static_cast<size_t>(mb * S + s)];
      if (p.backward == BackwardMode::Mixed) f = static_cast<char>(uniform(rng, 0, 1));
      all.push_back(F(mb, s));
      if (f) {
        all.push_back(BW(mb, s));
      } else {
        all.push_back(B(mb, s));
        all.push_back(W(mb, s));
      }
    }
  std::vector<char> done(num_action_slots(p), 0);
  auto is_done = [&](Action a) { return done[action_id(p, a).index()] != 0; };
  auto bwd = [&](int mb, int s) { return fused[static_cast<size_t>(mb * S + s)] ? BW(mb, s) : B(mb, s); };
  auto ready = [&](Action a) {
    int mb = a.mb.value, s = a.stage.value;
    switch (a.kind) {
      case ActionKind::F: return s == 0 || is_done(F(mb, s - 1));
      case ActionKind::B:
      case ActionKind::BW: return is_done(F(mb, s)) && (s + 1 == S || is_done(bwd(mb, s + 1)));
      case ActionKind::W: return is_done(B(mb, s));
    }
    return false;
  };
  Schedule sched;
  sched.problem = p;
  sched.ranks.resize(static_cast<size_t>(p.ranks));
  while (!all.empty()) {
    std::vector<size_t> cand;
    for (size_t i = 0; i < all.size(); ++i)
      if (ready(all[i])) cand.push_back(i);
    size_t pick = cand[static_cast<size_t>(uniform(rng, 0, static_cast<int>(cand.size()) - 1))];
    Action a = all[pick];
    all.erase(all.begin() + static_cast<long>(pick));
    done[action_id(p, a).index()] = 1;
    sched.ranks[rank_of(p, a).index()].push_back(a);
  }
  if (!with_overlap) return sched;
  // Overlapped F&B units: adjacent (F, B|BW) or (B|BW, F) on one rank, kept only if verify agrees.
  sched.overlap.resize(sched.ranks.size());
  for (size_t r = 0; r < sched.ranks.size(); ++r) {
    const auto& o = sched.ranks[r];
    for (size_t i = 0; i + 1 < o.size(); ++i) {
      bool pair = (o[i].kind == ActionKind::F && is_backward(o[i + 1].kind)) ||
                  (is_backward(o[i].kind) && o[i + 1].kind == ActionKind::F);
      if (!pair || uniform(rng, 0, 2) != 0) continue;
      sched.overlap[r].push_back(static_cast<int32_t>(i));
      if (!verify(sched).empty()) {
        sched.overlap[r].pop_back();
        continue;
      }
      ++i;
    }
  }
  return sched;
}

}  // namespace schedc::test
