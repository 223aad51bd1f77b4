// The plan bound's dynamic programs over the stages' layer ranges (plan_bound_internal.h;
// docs/solver.md, "The plan").

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "ir/action.h"
#include "ir/lower_bound.h"
#include "solver/synth/plan.h"
#include "solver/synth/plan_bound_internal.h"

namespace schedc::solver {

namespace {

// The dynamic program's bound is skipped above this many (stage, start, count) cells.
constexpr double kMaxDpCells = 2e8;
// The memory area's tables (two doubles a (stage, start, count)) are skipped above this many
// entries; its bisection takes at most this many passes for each multiplier.
constexpr double kMaxAreaEntries = 4e6;
constexpr int kAreaSteps = 48;

}  // namespace

// The bounds of a partition space by dynamic programming over the stages: terms of one stage
// that depend only on where its layers start and how many it has (through prefix sums over the
// model's layers). None with overlapped units. Two programs share the terms:
//
// The least largest term: dp[s][c] = the least largest term of the stages before s over the ways
// to give them the first c layers, O(S L^2); each term is a lower bound on every schedule of a
// partition with that stage, so the least over partitions of their largest is a bound. The terms
// (single kinds of layers or many, every placement):
// - the stage's work on its rank after its input can first arrive (each direction);
// - under a cap, without recomputation: the chain of ceil(n / k) activation windows (the memory
//   term of partition_space_bound), the room counting this stage's static memory and the fixed
//   part of the other stages on its rank.
//
// The memory area, over every rank at once (under a cap, the deltas following F, with or without
// recomputation): a microbatch's activations a_s stay on the rank of stage s from the start of its
// F to the start of its backward there, at least its F and the round trip through the later
// stages; a split B keeps half of them until its W. A recomputed one keeps only its input i_s that
// long, and all of a_s from its R's start, at least the R's cost. Every (microbatch, stage) holds 0
// or more at every moment, so each rank's room (its cap less its static memory) times the makespan
// is at least the sum of those areas over its stages; summed over the ranks the room is the caps
// less the whole static memory, the same for every partition. The ranks' work is at least the sum
// of their stages' sure work plus every R, at most ranks x makespan. So a partition whose optimum
// is T has every term <= T, and for every mu >= 0 some choice of recomputed forwards with
//   mu sum(areas) + sum(R costs) <= (mu room + ranks) T - work,
// a sum over the stages: a makespan T that no partition allows (the least left-hand side over
// partitions, by dynamic programming over the stages' cells whose term is at most T, each cell's
// microbatches recomputed or not as minimises it, above the right-hand side) is below every
// partition's optimum. Bisection finds the largest such T it can prove; mu = infinity is the area
// alone (each forward recomputed or not as its area is least).
double partition_dp_bound(const ir::Problem& base, const ir::Model& model) {
  const int32_t S = base.num_stages(), L = model.num_layers();
  // Too large a table: no bound from here (the caller's stands).
  const double cells = static_cast<double>(S) * (L + 1.0) * (L + 1.0) * base.num_directions();
  if (base.cost.FB || S < 1 || cells > kMaxDpCells) return 0;
  Counts zeros(static_cast<size_t>(S), 0);
  const ir::Problem empty = ir::with_partition(base, model, zeros);
  const StageCosts fixed = stage_costs(empty);
  const bool fused = base.backward == ir::BackwardMode::Fused, split = base.backward == ir::BackwardMode::Split;
  const bool recompute_all = base.recompute == ir::Recompute::All && !base.cost.R;
  const bool memory = base.memory.cap && base.recompute == ir::Recompute::Off && model.deltas_follow;
  // The area needs R's cost from the layers (no stated cost.R) when anything may be recomputed.
  const bool area = base.memory.cap && model.deltas_follow && (base.recompute == ir::Recompute::Off || !base.cost.R);
  const bool may_recompute = base.recompute == ir::Recompute::Allowed, all = base.recompute == ir::Recompute::All;
  const bool makespan = base.objective == ir::Objective::Makespan;
  // Prefix sums over the layers: forward, input-gradient chain, sure work, activations, static,
  // recompute input.
  std::vector<double> pf(static_cast<size_t>(L) + 1, 0), pb = pf, ps = pf, pa = pf, pst = pf, pin = pf;
  for (int32_t i = 0; i < L; ++i) {
    const ir::LayerKind& k = model.kinds[static_cast<size_t>(model.layers[static_cast<size_t>(i)])];
    const auto z = static_cast<size_t>(i);
    pf[z + 1] = pf[z] + k.F;
    pb[z + 1] = pb[z] + k.B + (fused ? k.W : 0);
    ps[z + 1] = ps[z] + k.F + k.B + k.W + (recompute_all ? k.F : 0);
    pa[z + 1] = pa[z] + k.memory;
    pst[z + 1] = pst[z] + k.static_memory;
    pin[z + 1] = pin[z] + (model.derive_input ? k.input : 0);
  }
  std::vector<double> ffwd(static_cast<size_t>(S)), fback(static_cast<size_t>(S)), fredo(static_cast<size_t>(S));
  for (int32_t s = 0; s < S; ++s) {
    ffwd[static_cast<size_t>(s)] = ir::cost_of(empty, ir::F(0, s));
    fback[static_cast<size_t>(s)] = ir::cost_of(empty, fused ? ir::BW(0, s) : ir::B(0, s));
    fredo[static_cast<size_t>(s)] = ir::cost_of(empty, ir::R(0, s));
  }
  // Per direction: the fixed parts of the chains up to and after each stage, with their lags.
  struct Chains {
    std::vector<double> before_f, before_b, after;  // [s]: fixed parts; lags included
  };
  std::vector<Chains> chains(static_cast<size_t>(base.num_directions()));
  for (int32_t d = 0; d < base.num_directions(); ++d) {
    Chains& c = chains[static_cast<size_t>(d)];
    c.before_f.assign(static_cast<size_t>(S), 0), c.before_b = c.before_f, c.after = c.before_f;
    double f = 0, b = 0;
    for (int32_t s = 0; s < S; ++s) {
      const double lag = s > 0 && base.rank_of(d, ir::StageId(s - 1)) != base.rank_of(d, ir::StageId(s))
                             ? base.cost.comm
                             : 0;
      f += ffwd[static_cast<size_t>(s)] + lag, b += fback[static_cast<size_t>(s)] + lag;
      c.before_f[static_cast<size_t>(s)] = f, c.before_b[static_cast<size_t>(s)] = b;
    }
    double a = 0;
    for (int32_t s = S - 1; s >= 0; --s) {
      c.after[static_cast<size_t>(s)] = a;
      const double lag = s > 0 && base.rank_of(d, ir::StageId(s - 1)) != base.rank_of(d, ir::StageId(s))
                             ? base.cost.comm
                             : 0;
      a += ffwd[static_cast<size_t>(s)] + fback[static_cast<size_t>(s)] + 2 * lag;
    }
  }
  // The fixed static memory each rank holds whatever the partition, and the room of all ranks
  // together: their caps less every stage's static memory (each direction's copy), layers too.
  std::vector<double> fixed_static(static_cast<size_t>(base.ranks), 0);
  double room = 0, work = 0;
  for (int32_t r = 0; area && r < base.ranks; ++r) room += *base.stated_cap_of(ir::RankId(r));
  for (int32_t d = 0; d < base.num_directions(); ++d)
    for (int32_t s = 0; s < S; ++s) {
      const double st = empty.memory.static_memory.at(static_cast<size_t>(s));
      fixed_static[static_cast<size_t>(base.rank_of(d, ir::StageId(s)).value)] += st;
      room -= st;
      work += base.microbatches_of(d) * fixed.sure[static_cast<size_t>(s)];
    }
  for (int32_t d = 0; d < base.num_directions(); ++d) {
    room -= pst[static_cast<size_t>(L)];
    work += base.microbatches_of(d) * ps[static_cast<size_t>(L)];
  }
  const double inf = std::numeric_limits<double>::infinity();
  auto term = [&](int32_t s, int32_t c, int32_t n) {
    const auto z = static_cast<size_t>(s), lo = static_cast<size_t>(c), hi = static_cast<size_t>(c + n);
    const double fwd = ffwd[z] + pf[hi] - pf[lo], back = fback[z] + pb[hi] - pb[lo];
    const double sure = fixed.sure[z] + ps[hi] - ps[lo], act = empty.memory.F.at(z) + pa[hi] - pa[lo];
    double best = 0;
    for (int32_t d = 0; d < base.num_directions(); ++d) {
      const Chains& ch = chains[static_cast<size_t>(d)];
      const double n_d = base.microbatches_of(d);
      const double before_f = ch.before_f[z] + pf[hi], before_b = ch.before_b[z] + pb[hi];
      best = std::max(best, (makespan ? before_f - fwd : 0) + n_d * sure);
      if (!memory || !(act > 0)) continue;
      const ir::RankId r = base.rank_of(d, ir::StageId(s));
      const double room = *base.stated_cap_of(r) - fixed_static[static_cast<size_t>(r.value)] - (pst[hi] - pst[lo]);
      const double k = std::floor(room / act * (1 + 1e-9));
      if (k < 1) return inf;
      const double trip = ch.after[z] + (pf[static_cast<size_t>(L)] - pf[hi]) + (pb[static_cast<size_t>(L)] - pb[hi]);
      const double windows = std::ceil(n_d / k) * trip;
      best = std::max(best, makespan ? before_f + windows + before_b : fwd + windows + back);
    }
    return best;
  };
  // A cell's part of mu sum(areas) + sum(R costs) (mu < 0: infinity, the areas alone).
  auto weight = [&](int32_t s, int32_t c, int32_t n, double mu) {
    const auto z = static_cast<size_t>(s), lo = static_cast<size_t>(c), hi = static_cast<size_t>(c + n);
    const double fwd = ffwd[z] + pf[hi] - pf[lo], back = fback[z] + pb[hi] - pb[lo];
    const double act = empty.memory.F.at(z) + pa[hi] - pa[lo];
    const double kept = (empty.memory.input ? empty.memory.input->at(z) : 0) + pin[hi] - pin[lo];
    const double redo = fredo[z] + pf[hi] - pf[lo];
    double sum = 0;
    for (int32_t d = 0; d < base.num_directions(); ++d) {
      const double trip = chains[static_cast<size_t>(d)].after[z] + (pf[static_cast<size_t>(L)] - pf[hi]) +
                          (pb[static_cast<size_t>(L)] - pb[hi]);
      const double tail = split ? act / 2 * back : 0;
      const double whole = act * (fwd + trip) + tail;
      const double checkpointed = kept * (fwd + trip) + (act - kept) * redo + tail;
      double one = 0;
      if (all) one = mu < 0 ? checkpointed : mu * checkpointed;  // R's work is in `work` already
      else if (!may_recompute) one = mu < 0 ? whole : mu * whole;
      else one = mu < 0 ? std::min(whole, checkpointed) : std::min(mu * whole, mu * checkpointed + redo);
      sum += base.microbatches_of(d) * one;
    }
    return sum;
  };
  // The least sum of `value` over partitions whose every cell passes `allowed` (inf: none).
  std::vector<double> dp(static_cast<size_t>(L) + 1), next(static_cast<size_t>(L) + 1);
  auto least = [&](auto&& allowed, auto&& value, bool sum) {
    std::fill(dp.begin(), dp.end(), inf);
    dp[0] = 0;
    for (int32_t s = 0; s < S; ++s) {
      std::fill(next.begin(), next.end(), inf);
      for (int32_t c = 0; c <= L; ++c) {
        if (dp[static_cast<size_t>(c)] == inf) continue;
        // The last stage takes every layer left.
        const int32_t lo = s == S - 1 ? L - c : 0, hi = L - c;
        for (int32_t n = lo; n <= hi; ++n) {
          if (!allowed(s, c, n)) continue;
          const double x = value(s, c, n);
          const double v = sum ? dp[static_cast<size_t>(c)] + x : std::max(dp[static_cast<size_t>(c)], x);
          if (v < next[static_cast<size_t>(c + n)]) next[static_cast<size_t>(c + n)] = v;
        }
      }
      dp.swap(next);
    }
    return dp[static_cast<size_t>(L)];
  };
  auto any = [](int32_t, int32_t, int32_t) { return true; };
  const double minmax = least(any, term, false);
  if (minmax == inf) return 0;
  const double entries = static_cast<double>(S) * (L + 1.0) * (L + 1.0);
  if (!area || entries > kMaxAreaEntries) return minmax;
  // The cells' terms and weights, tabled once: the bisection's passes only read them.
  const auto W = static_cast<size_t>(L) + 1;
  auto at = [&](int32_t s, int32_t c, int32_t n) {
    return (static_cast<size_t>(s) * W + static_cast<size_t>(c)) * W + static_cast<size_t>(n);
  };
  std::vector<double> terms(static_cast<size_t>(entries), inf), weights(terms.size(), inf);
  for (int32_t s = 0; s < S; ++s)
    for (int32_t c = 0; c <= L; ++c)
      for (int32_t n = s == S - 1 ? L - c : 0; n <= L - c; ++n) terms[at(s, c, n)] = term(s, c, n);
  const double mu0 = base.ranks / std::max(std::abs(room), 1e-300);
  std::vector<double> mus = {-1};
  if (may_recompute) mus.insert(mus.end(), {mu0 / 4, mu0, 4 * mu0});
  double best = minmax;
  for (double mu : mus) {
    for (int32_t s = 0; s < S; ++s)
      for (int32_t c = 0; c <= L; ++c)
        for (int32_t n = s == S - 1 ? L - c : 0; n <= L - c; ++n) weights[at(s, c, n)] = weight(s, c, n, mu);
    // Some partition passes every test at T (it is not ruled out). Lenient on rounding, so that
    // a T it refuses is refused for certain.
    auto possible = [&](double T) {
      const double slack = 1e-9 * std::max(1.0, std::abs(T));
      auto ok = [&](int32_t s, int32_t c, int32_t n) { return terms[at(s, c, n)] <= T + slack; };
      auto w = [&](int32_t s, int32_t c, int32_t n) { return weights[at(s, c, n)]; };
      const double lhs = least(ok, w, true);
      if (lhs == inf) return false;
      const double rhs = mu < 0 ? room * T : (mu * room + base.ranks) * T - work;
      return lhs <= rhs + 1e-9 * std::max({1.0, std::abs(lhs), std::abs(rhs)});
    };
    if (possible(best)) continue;
    double lo = best, hi = std::max(2 * best, 1.0);
    int left = kAreaSteps;
    while (left > 0 && !possible(hi)) lo = hi, hi *= 2, --left;
    for (; left > 0 && hi - lo > 1e-7 * hi; --left) {
      const double mid = lo + (hi - lo) / 2;
      (possible(mid) ? hi : lo) = mid;
    }
    best = lo;  // the largest makespan shown out of reach
  }
  return best;
}

}  // namespace schedc::solver
