#pragma once
// Exhaustive enumeration for tiny problems: every per-rank order consistent with the
// dependencies among a rank's own actions, combined over the ranks (deadlocks skipped), so a
// test knows the true optimum and can hold a solver or an encoding to it exactly.

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "ir/simulate.h"

namespace schedc::test {

/// Every order of `acts` that respects the dependencies between actions of the same rank.
inline std::vector<std::vector<ir::Action>> rank_orders(const ir::Problem& p, const std::vector<ir::Action>& acts) {
  using namespace ir;
  std::vector<std::vector<Action>> out;
  std::vector<Action> cur;
  std::vector<char> used(acts.size(), 0);
  auto placed = [&](Action a) { return std::find(cur.begin(), cur.end(), a) != cur.end(); };
  auto on_rank = [&](Action a) { return std::find(acts.begin(), acts.end(), a) != acts.end(); };
  std::function<void()> go = [&] {
    if (cur.size() == acts.size()) {
      out.push_back(cur);
      return;
    }
    for (size_t i = 0; i < acts.size(); ++i) {
      if (used[i]) continue;
      Action a = acts[i];
      int mb = a.mb.value, s = a.stage.value;
      std::vector<Action> deps;
      if (a.kind == ActionKind::F && s > 0) deps.push_back(F(mb, s - 1));
      if (a.kind == ActionKind::B || a.kind == ActionKind::BW) {
        deps.push_back(F(mb, s));
        if (s + 1 < p.num_stages()) deps.push_back(Action{a.kind, MbId(mb), StageId(s + 1)});
      }
      if (a.kind == ActionKind::W) deps.push_back(B(mb, s));
      bool ok = std::all_of(deps.begin(), deps.end(), [&](Action d) { return !on_rank(d) || placed(d); });
      if (!ok) continue;
      used[i] = 1;
      cur.push_back(a);
      go();
      cur.pop_back();
      used[i] = 0;
    }
  };
  go();
  return out;
}

/// The best objective over every valid schedule (per-rank orders combined, deadlocks skipped).
inline double brute_force(const ir::Problem& p) {
  using namespace ir;
  const bool fused = p.backward == BackwardMode::Fused;
  std::vector<std::vector<Action>> acts(static_cast<size_t>(p.ranks));
  for (int mb = 0; mb < p.microbatches; ++mb)
    for (int s = 0; s < p.num_stages(); ++s)
      for (Action a :
           fused ? std::vector<Action>{F(mb, s), BW(mb, s)} : std::vector<Action>{F(mb, s), B(mb, s), W(mb, s)})
        acts[rank_of(p, a).index()].push_back(a);
  std::vector<std::vector<std::vector<Action>>> choices;
  for (const auto& a : acts) choices.push_back(rank_orders(p, a));
  double best = std::numeric_limits<double>::infinity();
  Schedule s;
  s.problem = p;
  s.ranks.resize(acts.size());
  std::function<void(size_t)> go = [&](size_t r) {
    if (r == acts.size()) {
      auto peaks = peak_memory(s);
      for (int k = 0; k < p.ranks; ++k)
        if (auto cap = p.cap_of(RankId(k)); cap && peaks[static_cast<size_t>(k)] > *cap + 1e-9) return;
      SimResult sim = simulate(s);
      if (sim.timeline) best = std::min(best, sim.timeline->metrics.objective_value(p.objective));
      return;
    }
    for (const auto& o : choices[r]) {
      s.ranks[r] = o;
      go(r + 1);
    }
  };
  go(0);
  return best;
}

}  // namespace schedc::test
