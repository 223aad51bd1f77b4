#pragma once
// Random problems and random valid schedules for property tests: a valid schedule is a random
// topological order of all actions dealt out to the owning ranks, so it never deadlocks. Wide
// problems draw from the whole model (custom placements, per-stage costs over many orders of
// magnitude, overlapped F&B units with cheaper or dearer FB), and overlapped units can be added
// to a valid schedule without making it deadlock.

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "ir/schedule.h"
#include "ir/simulate.h"

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
  // One direction mostly, two often, three or four (pairs rotated) now and then.
  const int dir_pick = uniform(rng, 0, 7);
  p.directions = dir_pick < 2 ? 2 : dir_pick == 2 ? uniform(rng, 3, 4) : 1;
  p.microbatches = uniform(rng, 1, o.max_microbatches);
  if (p.directions > 1)
    p.microbatches = p.directions * uniform(rng, 1, std::max(1, (o.max_microbatches + 1) / p.directions));
  if (p.directions > 1 && uniform(rng, 0, 3) == 0) {
    // A stated split: at least one microbatch each, the rest (one fewer in all) anywhere.
    p.microbatches = std::max(p.directions, p.microbatches - 1);
    p.direction_microbatches.assign(static_cast<size_t>(p.directions), 1);
    for (int i = p.directions; i < p.microbatches; ++i)
      ++p.direction_microbatches[static_cast<size_t>(uniform(rng, 0, p.directions - 1))];
  }
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

namespace detail {

// A random topological order dealt out to the ranks. With `pair_percent` > 0, after an action is
// dealt, that often a ready action of the other sort (forward / input-gradient backward) of another
// microbatch on the same rank is dealt right after it, so that the rank's order holds adjacent
// pairs that can become overlapped units. `pair_percent` = 0 draws exactly what it always drew.
inline ir::Schedule random_order(const ir::Problem& p, Rng& rng, int pair_percent) {
  using namespace ir;
  using Key = std::tuple<int, int, int>;
  const int S = p.num_stages();
  std::vector<Action> todo;
  std::map<std::pair<int, int>, bool> recomputed;  // (mb, stage) with an R
  for (int mb = 0; mb < p.microbatches; ++mb)
    for (int st = 0; st < S; ++st) {
      todo.push_back(F(mb, st));
      // Recomputation: every forward with `all`, about half with `allowed` (no draw when `off`).
      if (p.recompute == Recompute::All || (p.recompute == Recompute::Allowed && uniform(rng, 0, 1))) {
        todo.push_back(R(mb, st));
        recomputed[{mb, st}] = true;
      }
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
  auto ready_now = [&](Action a) {
    int mb = a.mb.value, st = a.stage.value;
    bool ok = true;
    if (a.kind == ActionKind::F && st > 0) ok = is_done(ActionKind::F, mb, st - 1);
    if (a.kind == ActionKind::B || a.kind == ActionKind::BW)
      ok = is_done(ActionKind::F, mb, st) &&
           (st + 1 == S || is_done(ActionKind::B, mb, st + 1) || is_done(ActionKind::BW, mb, st + 1)) &&
           (!recomputed.count({mb, st}) || is_done(ActionKind::R, mb, st));
    if (a.kind == ActionKind::R) ok = is_done(ActionKind::F, mb, st);
    if (a.kind == ActionKind::W) ok = is_done(ActionKind::B, mb, st);
    return ok;
  };
  auto deal = [&](size_t pick) {
    Action a = todo[pick];
    todo.erase(todo.begin() + static_cast<std::ptrdiff_t>(pick));
    done[{static_cast<int>(a.kind), a.mb.value, a.stage.value}] = true;
    s.ranks[rank_of(p, a).index()].push_back(a);
    return a;
  };
  while (!todo.empty()) {
    std::vector<size_t> ready;
    for (size_t i = 0; i < todo.size(); ++i)
      if (ready_now(todo[i])) ready.push_back(i);
    size_t pick = ready[static_cast<size_t>(uniform(rng, 0, static_cast<int>(ready.size()) - 1))];
    Action a = deal(pick);
    if (pair_percent <= 0 || a.kind == ActionKind::W || a.kind == ActionKind::R || uniform(rng, 1, 100) > pair_percent)
      continue;
    std::vector<size_t> partners;
    for (size_t i = 0; i < todo.size(); ++i) {
      Action b = todo[i];
      bool other_sort = (a.kind == ActionKind::F) ? is_backward(b.kind) : b.kind == ActionKind::F;
      if (other_sort && b.mb != a.mb && rank_of(p, b) == rank_of(p, a) && ready_now(b)) partners.push_back(i);
    }
    if (!partners.empty()) deal(partners[static_cast<size_t>(uniform(rng, 0, static_cast<int>(partners.size()) - 1))]);
  }
  return s;
}

}  // namespace detail

/// A random valid schedule of `p` (no cap check: set the cap from its peak if needed).
inline ir::Schedule random_valid(const ir::Problem& p, Rng& rng) { return detail::random_order(p, rng, 0); }

/// A random valid schedule whose orders often hold a forward next to a backward of another
/// microbatch (candidates for overlapped units; see `add_random_overlap`).
inline ir::Schedule random_valid_paired(const ir::Problem& p, Rng& rng, int pair_percent = 60) {
  return detail::random_order(p, rng, pair_percent);
}

/// Marks about `percent` % of the adjacent (F, B or BW) pairs of `s` as overlapped F&B units, in a
/// random order, keeping only the units that leave the schedule deadlock-free (a unit waits for
/// the inputs of both members, which may depend on its first member through another rank). The
/// schedule stays valid for ir::verify apart from the memory cap, which units do not change.
/// Returns the number of units marked.
inline int add_random_overlap(ir::Schedule& s, Rng& rng, int percent = 50) {
  using namespace ir;
  s.overlap.resize(s.ranks.size());
  std::vector<std::pair<size_t, int32_t>> cand;
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i + 1 < s.ranks[r].size(); ++i) {
      Action a = s.ranks[r][i], b = s.ranks[r][i + 1];
      bool pair = (a.kind == ActionKind::F && is_backward(b.kind)) || (b.kind == ActionKind::F && is_backward(a.kind));
      // Every backward of a microbatch depends on all of its forwards: such a unit never starts.
      if (pair && a.mb != b.mb) cand.push_back({r, static_cast<int32_t>(i)});
    }
  std::shuffle(cand.begin(), cand.end(), rng);
  int marked = 0;
  for (auto [r, i] : cand) {
    if (uniform(rng, 1, 100) > percent) continue;
    auto& units = s.overlap[r];
    auto at = std::lower_bound(units.begin(), units.end(), i);
    bool clash = (at != units.end() && *at <= i + 1) || (at != units.begin() && *(at - 1) >= i - 1);
    if (clash) continue;
    at = units.insert(at, i);
    if (simulate(s).timeline) {
      ++marked;
      continue;
    }
    units.erase(at);
  }
  if (!s.has_overlap()) s.overlap.clear();
  return marked;
}

/// Allows recomputation (`all` one time in three, else `allowed`): a kept input of 0 to F (in
/// quarters), R's cost the forward's or a drawn one. random_valid then draws R's.
inline void add_random_recompute(ir::Problem& p, Rng& rng) {
  for (size_t st = 0; st < static_cast<size_t>(p.num_stages()); ++st)
    if (p.memory.F.at(st) < 0) return;  // no input fits between 0 and a negative F
  p.recompute = uniform(rng, 0, 2) == 0 ? ir::Recompute::All : ir::Recompute::Allowed;
  std::vector<double> input;
  for (size_t st = 0; st < static_cast<size_t>(p.num_stages()); ++st)
    input.push_back(p.memory.F.at(st) * uniform(rng, 0, 4) / 4.0);
  p.memory.input = ir::PerStage::list(input);
  if (uniform(rng, 0, 1)) p.cost.R = ir::PerStage::of(uniform(rng, 0, 3) * 0.5);
}

/// Sets `action_overhead` and `message_overhead` to random values (either may be 0): small
/// integers and halves, or values of the form k * 10^e spanning 1e-6..9e5 as random_cost's.
inline void add_random_overheads(ir::Problem& p, Rng& rng) {
  static const double small[] = {0, 0.25, 0.5, 1, 2};
  if (uniform(rng, 0, 2) == 0) {
    p.cost.action_overhead = uniform(rng, 1, 9) * std::pow(10.0, uniform(rng, -6, 5));
    p.cost.message_overhead = uniform(rng, 0, 1) * uniform(rng, 1, 9) * std::pow(10.0, uniform(rng, -6, 5));
    return;
  }
  p.cost.action_overhead = small[uniform(rng, 0, 4)];
  p.cost.message_overhead = small[uniform(rng, 0, 4)];
}

/// Declares FB = `factor` x (F + B) on every stage, rounded to 0.01: below 1, overlapped units
/// save; above 1 they cost more than their members.
inline void set_fb(ir::Problem& p, double factor) {
  std::vector<double> fb;
  for (size_t st = 0; st < static_cast<size_t>(p.num_stages()); ++st)
    fb.push_back(std::round(factor * (p.cost.F.at(st) + p.cost.B.at(st)) * 100) / 100);
  p.cost.FB = ir::PerStage::list(fb);
}

/// DualPipe's problem: two directions, mixed backward, F = B = W = 1, comm 0.1, no FB.
inline ir::Problem bidirectional_mixed(int pp, int m) {
  ir::Problem p;
  p.ranks = pp;
  p.microbatches = m;
  p.directions = 2;
  p.backward = ir::BackwardMode::Mixed;
  p.cost.comm = 0.1;
  return p;
}

/// Options of `random_wide_problem`.
struct WideProblemOptions {
  int max_ranks = 4;
  int max_microbatches = 6;
  int max_vpp = 4;
};

namespace detail {

// For a custom placement, one random stage -> rank map per direction.
inline void random_custom_map(ir::Problem& p, Rng& rng) {
  if (p.placement != ir::PlacementKind::Custom) return;
  for (int d = 0; d < p.num_directions(); ++d) {
    std::vector<int32_t> map;
    for (int s = 0; s < p.num_stages(); ++s) map.push_back(uniform(rng, 0, p.ranks - 1));
    p.stage_to_rank.push_back(map);
  }
}

// Fused, split, or mixed twice as often.
inline ir::BackwardMode random_backward(Rng& rng) {
  int b = uniform(rng, 0, 3);
  return b == 0 ? ir::BackwardMode::Fused : b == 1 ? ir::BackwardMode::Split : ir::BackwardMode::Mixed;
}

// A cost drawn from one of a few profiles: small integers (zero included), halves, or values of
// the form k * 10^e spanning 1e-6..9e5 (the model allows magnitudes up to 1e6).
inline double random_cost(Rng& rng, int profile) {
  switch (profile) {
    case 0: return uniform(rng, 0, 3);
    case 1: return uniform(rng, 1, 6) * 0.5;
    default: return uniform(rng, 1, 9) * std::pow(10.0, uniform(rng, -6, 5));
  }
}

inline ir::PerStage random_costs(Rng& rng, int stages, int profile, bool allow_list) {
  if (!allow_list || uniform(rng, 0, 1) == 0) return ir::PerStage::of(random_cost(rng, profile));
  std::vector<double> v;
  for (int s = 0; s < stages; ++s) v.push_back(random_cost(rng, profile));
  return ir::PerStage::list(v);
}

}  // namespace detail

/// A random valid problem from the whole model: every placement (custom included), vpp up to
/// `max_vpp`, both directions, every backward mode, per-stage costs across many orders of
/// magnitude, comm 0 or not, an overlapped-unit cost FB below or above F + B (+ W), random memory
/// deltas of either sign, and either objective. No cap: set one from a schedule's peaks.
inline ir::Problem random_wide_problem(Rng& rng, const WideProblemOptions& o = {}) {
  using namespace ir;
  Problem p;
  p.ranks = uniform(rng, 1, o.max_ranks);
  switch (uniform(rng, 0, 3)) {
    case 0: p.placement = PlacementKind::Looped, p.stages_per_rank = uniform(rng, 1, o.max_vpp); break;
    case 1: p.placement = PlacementKind::VShape, p.stages_per_rank = 2; break;
    case 2: p.placement = PlacementKind::Wave, p.stages_per_rank = uniform(rng, 2, std::max(2, o.max_vpp)); break;
    default: p.placement = PlacementKind::Custom, p.stages_per_rank = uniform(rng, 1, o.max_vpp); break;
  }
  const int dir_pick = uniform(rng, 0, 5);
  p.directions = dir_pick < 2 ? 2 : dir_pick == 2 ? uniform(rng, 3, 4) : 1;
  p.microbatches = uniform(rng, 1, o.max_microbatches);
  if (p.directions > 1) p.microbatches = p.directions * uniform(rng, 1, std::max(1, o.max_microbatches / p.directions));
  detail::random_custom_map(p, rng);
  p.backward = detail::random_backward(rng);
  const int S = p.num_stages();
  const int profile = uniform(rng, 0, 2);
  p.cost.F = detail::random_costs(rng, S, profile, true);
  p.cost.B = detail::random_costs(rng, S, profile, true);
  p.cost.W = detail::random_costs(rng, S, profile, true);
  switch (uniform(rng, 0, 3)) {
    case 0: p.cost.comm = 0; break;
    case 1: p.cost.comm = detail::random_cost(rng, profile); break;
    case 2: p.cost.comm = detail::random_cost(rng, 2); break;
    default: p.cost.comm = 0.1; break;
  }
  // FB relative to the sums it competes with: below F + B, between F + B and F + B + W, above.
  if (uniform(rng, 0, 4) != 0) {
    static const double factors[] = {0, 0.3, 0.5, 0.6, 0.75, 0.9, 1, 1.1, 1.5};
    auto fb_of = [&](int s) {
      double f = p.cost.F.at(static_cast<size_t>(s)), bb = p.cost.B.at(static_cast<size_t>(s)),
             w = p.cost.W.at(static_cast<size_t>(s));
      double base = uniform(rng, 0, 1) ? f + bb : f + bb + w;
      double fb = factors[uniform(rng, 0, 8)] * base;
      return std::min(fb, kMaxMagnitude);
    };
    if (uniform(rng, 0, 1) == 0) {
      p.cost.FB = PerStage::of(fb_of(0));
    } else {
      std::vector<double> v;
      for (int s = 0; s < S; ++s) v.push_back(fb_of(s));
      p.cost.FB = PerStage::list(v);
    }
  }
  static const double mem_f[] = {1, 0.5, 2, 0, 1};
  static const double mem_b[] = {-0.5, 0, -1, 0.5, -2};
  static const double mem_w[] = {-0.5, -1, 0, 0.5, -2};
  p.memory.F = PerStage::of(mem_f[uniform(rng, 0, 4)]);
  p.memory.B = PerStage::of(mem_b[uniform(rng, 0, 4)]);
  p.memory.W = PerStage::of(mem_w[uniform(rng, 0, 4)]);
  if (uniform(rng, 0, 3) == 0) {
    std::vector<double> v;
    for (int s = 0; s < S; ++s) v.push_back(uniform(rng, 1, 4) * 0.5);
    p.memory.F = PerStage::list(v);
  }
  if (uniform(rng, 0, 3) == 0) p.objective = Objective::MaxSpan;
  return p;
}

/// Sets a cap at (or a little above) each rank's peak in `s`, uniform or per rank, so that the
/// schedule stays valid and the memory terms of the bound bind.
inline void cap_at_peaks(ir::Schedule& s, Rng& rng) {
  std::vector<double> peaks = ir::peak_memory(s);
  if (uniform(rng, 0, 1) == 0) {
    s.problem.memory.cap = ir::PerStage::of(*std::max_element(peaks.begin(), peaks.end()) + 0.5 * uniform(rng, 0, 1));
    return;
  }
  for (double& v : peaks) v += 0.5 * uniform(rng, 0, 1);
  s.problem.memory.cap = ir::PerStage::list(peaks);
}

}  // namespace schedc::test
