#pragma once
// Random problems and random valid schedules for property tests: a valid schedule is a random
// topological order of all actions dealt out to the owning ranks, so it never deadlocks.

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "ir/schedule.h"

namespace schedc::test {

using Rng = std::mt19937;
inline int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

struct RandomProblemOptions {
  int max_ranks = 4;
  int max_microbatches = 5;
  bool vary_costs = true;  // per-stage costs, comm latency
};

inline ir::Problem random_problem(Rng& rng, const RandomProblemOptions& o = {}) {
  using namespace ir;
  Problem p;
  p.ranks = uniform(rng, 1, o.max_ranks);
  switch (uniform(rng, 0, 2)) {
    case 0: p.placement = PlacementKind::Looped, p.stages_per_rank = uniform(rng, 1, 3); break;
    case 1: p.placement = PlacementKind::VShape, p.stages_per_rank = 2; break;
    default: p.placement = PlacementKind::Wave, p.stages_per_rank = uniform(rng, 2, 3); break;
  }
  p.direction = uniform(rng, 0, 3) == 0 ? Direction::Bidirectional : Direction::Single;
  p.microbatches = uniform(rng, 1, o.max_microbatches);
  if (p.direction == Direction::Bidirectional) p.microbatches = 2 * uniform(rng, 1, (o.max_microbatches + 1) / 2);
  p.backward = static_cast<BackwardMode>(uniform(rng, 0, 2));
  p.cost.F = PerStage::of(uniform(rng, 1, 3));
  p.cost.B = PerStage::of(uniform(rng, 1, 3));
  p.cost.W = PerStage::of(uniform(rng, 0, 2));
  p.cost.comm = uniform(rng, 0, 1);
  if (o.vary_costs && uniform(rng, 0, 2) == 0) {
    std::vector<double> f;
    for (int s = 0; s < p.num_stages(); ++s) f.push_back(uniform(rng, 1, 4) * 0.5);
    p.cost.F = PerStage::list(f);
  }
  if (o.vary_costs && uniform(rng, 0, 3) == 0) p.cost.comm = 0.5;
  return p;
}

/// A random valid schedule of `p` (no cap check: set the cap from its peak if needed).
inline ir::Schedule random_valid(const ir::Problem& p, Rng& rng) {
  using namespace ir;
  using Key = std::tuple<int, int, int>;
  const int S = p.num_stages();
  std::vector<Action> todo;
  for (int mb = 0; mb < p.microbatches; ++mb)
    for (int st = 0; st < S; ++st) {
      todo.push_back(F(mb, st));
      bool fused = p.backward == BackwardMode::Fused || (p.backward == BackwardMode::Mixed && uniform(rng, 0, 1));
      if (fused) {
        todo.push_back(BW(mb, st));
      } else {
        todo.push_back(B(mb, st));
        todo.push_back(W(mb, st));
      }
    }
  Schedule s;
  s.problem = p;
  s.ranks.resize(static_cast<size_t>(p.ranks));
  std::map<Key, bool> done;
  auto is_done = [&](ActionKind k, int mb, int st) { return done.count({static_cast<int>(k), mb, st}) > 0; };
  while (!todo.empty()) {
    std::vector<size_t> ready;
    for (size_t i = 0; i < todo.size(); ++i) {
      Action a = todo[i];
      int mb = a.mb.value, st = a.stage.value;
      bool ok = true;
      if (a.kind == ActionKind::F && st > 0) ok = is_done(ActionKind::F, mb, st - 1);
      if (a.kind == ActionKind::B || a.kind == ActionKind::BW)
        ok = is_done(ActionKind::F, mb, st) &&
             (st + 1 == S || is_done(ActionKind::B, mb, st + 1) || is_done(ActionKind::BW, mb, st + 1));
      if (a.kind == ActionKind::W) ok = is_done(ActionKind::B, mb, st);
      if (ok) ready.push_back(i);
    }
    size_t pick = ready[static_cast<size_t>(uniform(rng, 0, static_cast<int>(ready.size()) - 1))];
    Action a = todo[pick];
    todo.erase(todo.begin() + static_cast<std::ptrdiff_t>(pick));
    done[{static_cast<int>(a.kind), a.mb.value, a.stage.value}] = true;
    s.ranks[rank_of(p, a).index()].push_back(a);
  }
  return s;
}

}  // namespace schedc::test
