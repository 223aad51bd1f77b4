// solver::solve_plan (plan.h; docs/solver.md, "The plan").

#include "solver/synth/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/action.h"
#include "ir/lower_bound.h"
#include "solver/synth/progress.h"
#include "support/numbers.h"

namespace schedc::solver {

namespace {

using Clock = std::chrono::steady_clock;
using Counts = std::vector<int32_t>;

// The shares of the plan's one time limit (of the clock, or in deterministic mode of the count):
// the first look at each initial candidate, the moves of a layer between neighbouring stages, and
// what is left to the best candidate's search.
constexpr double kScreenShare = 0.3;
constexpr double kMoveShare = 0.35;
// A neighbour's search: this share of the limit each, and never less than this many seconds.
constexpr double kNeighbourShare = 0.02;
constexpr double kMinNeighbourSeconds = 0.05;
constexpr double kMinDeterministicCharge = 0.05;
// The branch and bound of the plan bound: partitions bounded by ir::lower_bound, then nodes.
constexpr int64_t kFullBounds = 3000;
constexpr int64_t kMaxNodes = 2'000'000;
// The plan bound's share of the limit (kept back from the searches), and the branch and bound's
// speed it is sized by: nodes times stages a second, about (a node is a pass over the stages).
constexpr double kBoundShare = 0.1;
constexpr double kNodeStagesPerSecond = 1e7;
constexpr double kBoundActionsPerSecond = 2e7;
// The dynamic program's bound is skipped above this many (stage, start, count) cells.
constexpr double kMaxDpCells = 2e8;
// More stages than this are not enumerated (the recursion goes one stage deep per level).
constexpr int32_t kMaxEnumeratedStages = 4096;

// ---- The cheap bound of one partition (partition_space_bound's leaves and prefixes) ----------

// What an action surely occupies its rank for: its cost, or with overlapped F&B units the part of
// a unit it cannot give away (the forward min(F, FB/2), a backward min(work, max(FB - F, FB/2))
// for the most generous forward stage of its rank; see ir/lower_bound.cpp's shares), both with
// their overheads. Two members of a unit never claim more than the unit's FB plus overheads.
// Per stage and direction: one microbatch's sure work on its rank, and the forward's cost (for
// the rank's head). Overlapped units are priced by what they surely keep.
struct StageCosts {
  std::vector<double> sure;     // [stage]
  std::vector<double> forward;  // [stage]: cost_of(F)
};

StageCosts stage_costs(const ir::Problem& p) {
  const int32_t S = p.num_stages();
  StageCosts c;
  c.sure.assign(static_cast<size_t>(S), 0);
  c.forward.assign(static_cast<size_t>(S), 0);
  const bool units = p.cost.FB.has_value();
  // The most a backward of a rank can save in a unit: max over the forward stages of that rank.
  std::vector<double> beta(static_cast<size_t>(p.ranks), 0);
  if (units)
    for (int32_t s = 0; s < S; ++s) {
      const double fb = p.cost.FB->at(static_cast<size_t>(s)), f = p.cost.F.at(static_cast<size_t>(s));
      const auto r = static_cast<size_t>(p.rank_of(0, ir::StageId(s)).value);
      beta[r] = std::max(beta[r], std::max(fb - f, fb / 2));
    }
  for (int32_t s = 0; s < S; ++s) {
    const auto z = static_cast<size_t>(s);
    const auto r = static_cast<size_t>(p.rank_of(0, ir::StageId(s)).value);
    const ir::Action f = ir::F(0, s), b = ir::B(0, s), w = ir::W(0, s), bw = ir::BW(0, s);
    double fwd = ir::cost_of(p, f);
    c.forward[z] = fwd;
    double back = 0;
    switch (p.backward) {
      case ir::BackwardMode::Split: back = ir::cost_of(p, b) + ir::cost_of(p, w); break;
      case ir::BackwardMode::Fused: back = ir::cost_of(p, bw); break;
      case ir::BackwardMode::Mixed: back = std::min(ir::cost_of(p, b) + ir::cost_of(p, w), ir::cost_of(p, bw)); break;
    }
    if (units) {
      // Members of units: the forward keeps min(F, FB/2) of its work, the input-gradient part of
      // the backward min(work, beta); W (split) is never a member.
      const double fb = p.cost.FB->at(z), fw = p.cost.F.at(z);
      fwd = ir::overhead_of(p, f) + std::min(fw, fb / 2);
      const bool fused = p.backward == ir::BackwardMode::Fused;
      const ir::Action x = fused ? bw : b;
      const double xw = ir::cost_of(p, x) - ir::overhead_of(p, x);
      double kept = ir::overhead_of(p, x) + std::min(xw, beta[r]);
      back = fused ? kept : std::min(back, kept + ir::cost_of(p, w));
      if (p.backward == ir::BackwardMode::Mixed) back = std::min(back, ir::overhead_of(p, bw) + std::min(xw, beta[r]));
    }
    if (p.recompute == ir::Recompute::All) back += ir::cost_of(p, ir::R(0, s));
    c.sure[z] = fwd + back;
  }
  return c;
}

// The bound of a problem from its ranks' sure work: every rank's microbatches' work, after the
// earliest its first forward's input can arrive (single direction and a placement whose rank r
// first holds stage r). Never above ir::lower_bound's per-rank and chain terms, so never above
// any schedule's makespan.
double work_bound(const ir::Problem& p, const StageCosts& c) {
  std::vector<double> work(static_cast<size_t>(p.ranks), 0);
  for (int32_t d = 0; d < p.num_directions(); ++d)
    for (int32_t s = 0; s < p.num_stages(); ++s)
      work[static_cast<size_t>(p.rank_of(d, ir::StageId(s)).value)] += p.microbatches_of(d) *
                                                                       c.sure[static_cast<size_t>(s)];
  const bool heads = p.objective == ir::Objective::Makespan && p.num_directions() == 1 &&
                     p.placement != ir::PlacementKind::Custom && !p.cost.FB;
  double best = 0, head = 0;
  for (int32_t r = 0; r < p.ranks; ++r) {
    best = std::max(best, (heads ? head : 0) + work[static_cast<size_t>(r)]);
    head += c.forward[static_cast<size_t>(std::min(r, p.num_stages() - 1))] + (r + 1 < p.ranks ? p.cost.comm : 0);
  }
  return best;
}

}  // namespace

std::vector<int32_t> stages_per_rank_choices(ir::PlacementKind placement) {
  switch (placement) {
    case ir::PlacementKind::Looped: return {1, 2, 4};
    case ir::PlacementKind::VShape: return {2};
    case ir::PlacementKind::Wave: return {2, 4};
    case ir::PlacementKind::Custom: return {};
  }
  return {};
}

std::vector<PlanShape> plan_shapes(const PlanSpace& space) {
  using P = ir::PlacementKind;
  const int32_t stated = space.base.stages_per_rank;
  std::vector<PlanShape> out;
  auto add = [&](P placement) {
    if (space.vpp_auto) {
      for (int32_t v : stages_per_rank_choices(placement)) out.push_back({placement, v});
      return;
    }
    const bool fits = placement == P::Looped || placement == P::Custom || (placement == P::VShape && stated == 2) ||
                      (placement == P::Wave && stated >= 2);
    if (fits) out.push_back({placement, stated});
  };
  if (space.placement_auto) {
    for (P placement : {P::Looped, P::VShape, P::Wave}) add(placement);
  } else {
    add(space.base.placement);
  }
  return out;
}

// The bound of a partition space by dynamic programming over the stages: terms of one stage that
// depend only on where its layers start and how many it has (through prefix sums over the model's
// layers), each a lower bound on every schedule of a partition with that stage, so the least over
// partitions of their largest is exact for these terms: dp[s][c] = the least largest term of the
// stages before s over the ways to give them the first c layers. O(S L^2). The terms (single
// kinds of layers or many, every placement; none with overlapped units):
// - the stage's work on its rank after its input can first arrive (each direction);
// - under a cap, without recomputation: the chain of ceil(n / k) activation windows (the memory
//   term of partition_space_bound), the room counting this stage's static memory and the fixed
//   part of the other stages on its rank.
double partition_dp_bound(const ir::Problem& base, const ir::Model& model) {
  const int32_t S = base.num_stages(), L = model.num_layers();
  // Too large a table: no bound from here (the caller's stands).
  if (base.cost.FB || S < 1 || static_cast<double>(S) * (L + 1.0) * (L + 1.0) * base.num_directions() > kMaxDpCells)
    return 0;
  Counts zeros(static_cast<size_t>(S), 0);
  const ir::Problem empty = ir::with_partition(base, model, zeros);
  const StageCosts fixed = stage_costs(empty);
  const bool fused = base.backward == ir::BackwardMode::Fused;
  const bool recompute_all = base.recompute == ir::Recompute::All && !base.cost.R;
  const bool memory = base.memory.cap && base.recompute == ir::Recompute::Off && model.deltas_follow;
  const bool makespan = base.objective == ir::Objective::Makespan;
  // Prefix sums over the layers: forward, input-gradient chain, sure work, activations, static.
  std::vector<double> pf(static_cast<size_t>(L) + 1, 0), pb = pf, ps = pf, pa = pf, pst = pf;
  for (int32_t i = 0; i < L; ++i) {
    const ir::LayerKind& k = model.kinds[static_cast<size_t>(model.layers[static_cast<size_t>(i)])];
    const auto z = static_cast<size_t>(i);
    pf[z + 1] = pf[z] + k.F;
    pb[z + 1] = pb[z] + k.B + (fused ? k.W : 0);
    ps[z + 1] = ps[z] + k.F + k.B + k.W + (recompute_all ? k.F : 0);
    pa[z + 1] = pa[z] + k.memory;
    pst[z + 1] = pst[z] + k.static_memory;
  }
  std::vector<double> ffwd(static_cast<size_t>(S)), fback(static_cast<size_t>(S));
  for (int32_t s = 0; s < S; ++s) {
    ffwd[static_cast<size_t>(s)] = ir::cost_of(empty, ir::F(0, s));
    fback[static_cast<size_t>(s)] = ir::cost_of(empty, fused ? ir::BW(0, s) : ir::B(0, s));
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
  // The fixed static memory each rank holds whatever the partition.
  std::vector<double> fixed_static(static_cast<size_t>(base.ranks), 0);
  for (int32_t d = 0; d < base.num_directions(); ++d)
    for (int32_t s = 0; s < S; ++s)
      fixed_static[static_cast<size_t>(base.rank_of(d, ir::StageId(s)).value)] += empty.memory.static_memory.at(
          static_cast<size_t>(s));
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
  std::vector<double> dp(static_cast<size_t>(L) + 1, inf), next(static_cast<size_t>(L) + 1);
  dp[0] = 0;
  for (int32_t s = 0; s < S; ++s) {
    std::fill(next.begin(), next.end(), inf);
    for (int32_t c = 0; c <= L; ++c) {
      if (dp[static_cast<size_t>(c)] == inf) continue;
      // The last stage takes every layer left.
      const int32_t lo = s == S - 1 ? L - c : 0, hi = L - c;
      for (int32_t n = lo; n <= hi; ++n) {
        const double v = std::max(dp[static_cast<size_t>(c)], term(s, c, n));
        if (v < next[static_cast<size_t>(c + n)]) next[static_cast<size_t>(c + n)] = v;
      }
    }
    dp.swap(next);
  }
  return dp[static_cast<size_t>(L)] == inf ? 0 : dp[static_cast<size_t>(L)];
}

PartitionBound partition_space_bound(const ir::Problem& base, const ir::Model& model, double limit, int64_t full_bounds,
                                     int64_t max_nodes) {
  const int32_t S = base.num_stages(), L = model.num_layers(), pp = base.ranks;
  PartitionBound out;
  out.value = limit;
  Counts counts(static_cast<size_t>(S), 0);
  // One partition only: its own bound.
  if (S == 1 || L == 0) {
    counts[static_cast<size_t>(S - 1)] = L;
    ir::Problem q = ir::with_partition(base, model, counts);
    out.leaves = 1;
    out.value = std::min(limit, ir::validate(q).empty() ? ir::lower_bound(q).value : work_bound(q, stage_costs(q)));
    return out;
  }
  // Too many stages to enumerate: the bound with no layers anywhere, below every partition's
  // (costs only grow with layers) -- sound, and weak.
  if (S > kMaxEnumeratedStages) {
    ir::Problem q = ir::with_partition(base, model, counts);
    out.value = std::min(limit, work_bound(q, stage_costs(q)));
    out.exhaustive = false;
    return out;
  }
  // Each stage's sure work and forward cost are its fixed part (no layers: the embedding, the
  // head, the overheads) plus its layers' (work_bound is linear in the layers without units,
  // which partition = auto does not allow). The stages are given their layers from the last to
  // the first, so a node is a suffix of the partition, the stages before it empty:
  // - its own cheap bound bounds every completion, since costs only grow with layers;
  // - the layers still to place land on the ranks of the stages still empty, so one of those
  //   ranks ends with at least their average work;
  // - with the makespan objective, ir::lower_bound of the node's problem (the earlier stages
  //   empty): a schedule of a completion is one of that problem, with no longer durations and
  //   no more memory at any moment (every delta shrinks with the layers, the static memory too),
  //   so it ends no later: the node's optimum, and its bound, are below the completion's. (A
  //   rank's span is not monotone so, hence makespan only.) The rank whose memory binds is an
  //   early one, and the round trip its microbatches make is the later stages', known here.
  const StageCosts fixed = stage_costs(ir::with_partition(base, model, counts));
  const bool recompute_all = base.recompute == ir::Recompute::All && !base.cost.R;
  std::vector<double> sure_of(static_cast<size_t>(L)), fwd_of(static_cast<size_t>(L));
  for (int32_t i = 0; i < L; ++i) {
    const ir::LayerKind& k = model.kinds[static_cast<size_t>(model.layers[static_cast<size_t>(i)])];
    sure_of[static_cast<size_t>(i)] = k.F + k.B + k.W + (recompute_all ? k.F : 0);
    fwd_of[static_cast<size_t>(i)] = k.F;
  }
  std::vector<double> suffix_sure(static_cast<size_t>(L) + 1, 0);  // [i]: layers 0..i-1
  for (int32_t i = 0; i < L; ++i)
    suffix_sure[static_cast<size_t>(i) + 1] = suffix_sure[static_cast<size_t>(i)] + sure_of[static_cast<size_t>(i)];
  std::vector<double> sure = fixed.sure, fwd = fixed.forward;
  std::vector<double> rank_work(static_cast<size_t>(pp), 0);
  std::vector<std::vector<std::pair<int32_t, int64_t>>> holders(static_cast<size_t>(S));  // rank, microbatches
  for (int32_t d = 0; d < base.num_directions(); ++d)
    for (int32_t s = 0; s < S; ++s)
      holders[static_cast<size_t>(s)].push_back({base.rank_of(d, ir::StageId(s)).value, base.microbatches_of(d)});
  for (int32_t s = 0; s < S; ++s)
    for (auto [r, n] : holders[static_cast<size_t>(s)])
      rank_work[static_cast<size_t>(r)] += n * sure[static_cast<size_t>(s)];
  // ranks_before[s]: the ranks holding a stage below s (where the layers before s will go).
  std::vector<std::vector<int32_t>> ranks_before(static_cast<size_t>(S) + 1);
  {
    std::vector<char> seen(static_cast<size_t>(pp), 0);
    for (int32_t s = 0; s < S; ++s) {
      for (auto [r, n] : holders[static_cast<size_t>(s)]) seen[static_cast<size_t>(r)] = 1;
      for (int32_t r = 0; r < pp; ++r)
        if (seen[static_cast<size_t>(r)]) ranks_before[static_cast<size_t>(s) + 1].push_back(r);
    }
  }
  const bool heads = base.objective == ir::Objective::Makespan && base.num_directions() == 1 &&
                     base.placement != ir::PlacementKind::Custom && !base.cost.FB;
  // The memory term (without recomputation or overlapped units, under a cap): on the rank of
  // stage s, a microbatch's forward activations a_s stay from the end of F(mb, s) to the start of
  // its backward there (every other (microbatch, stage) holds 0 or more at any moment: the
  // deltas follow F), so at most k = room / a_s such windows overlap, room being the cap less the
  // rank's static memory. Each window lasts at least the round trip through the later stages
  // (their forwards and input-gradient backwards, and a comm lag each way at every change of
  // rank). Windows that overlap at most k at a time split into k chains of disjoint ones, so one
  // chain holds ceil(n / k) of them back to back: with the forward chain before the first and the
  // backward chain after the last, a bound on the makespan (on the rank's span: its own F and B
  // around them). Every value only grows with layers (the room shrinks), so it bounds every
  // completion of a suffix too.
  const ir::Problem empty = ir::with_partition(base, model, counts);
  const bool memory_term = base.memory.cap && base.recompute == ir::Recompute::Off && !base.cost.FB &&
                           model.deltas_follow;
  const bool fused = base.backward == ir::BackwardMode::Fused;
  std::vector<double> back(static_cast<size_t>(S)), act(static_cast<size_t>(S)), stat(static_cast<size_t>(S));
  for (int32_t s = 0; s < S; ++s) {
    back[static_cast<size_t>(s)] = ir::cost_of(empty, fused ? ir::BW(0, s) : ir::B(0, s));
    act[static_cast<size_t>(s)] = empty.memory.F.at(static_cast<size_t>(s));
    stat[static_cast<size_t>(s)] = empty.memory.static_memory.at(static_cast<size_t>(s));
  }
  std::vector<double> back_of(static_cast<size_t>(L)), act_of(static_cast<size_t>(L)), stat_of(static_cast<size_t>(L));
  for (int32_t i = 0; i < L; ++i) {
    const ir::LayerKind& k = model.kinds[static_cast<size_t>(model.layers[static_cast<size_t>(i)])];
    back_of[static_cast<size_t>(i)] = k.B + (fused ? k.W : 0);
    act_of[static_cast<size_t>(i)] = k.memory;
    stat_of[static_cast<size_t>(i)] = k.static_memory;
  }
  std::vector<double> rank_static(static_cast<size_t>(pp), 0);
  for (int32_t s = 0; s < S; ++s)
    for (auto [r, n] : holders[static_cast<size_t>(s)])
      rank_static[static_cast<size_t>(r)] += stat[static_cast<size_t>(s)];
  // change[d][s]: stages s and s + 1 of direction d are on different ranks.
  std::vector<std::vector<char>> change(static_cast<size_t>(base.num_directions()),
                                        std::vector<char>(static_cast<size_t>(S), 0));
  for (int32_t d = 0; d < base.num_directions(); ++d)
    for (int32_t s = 0; s + 1 < S; ++s)
      change[static_cast<size_t>(d)][static_cast<size_t>(s)] = base.rank_of(d, ir::StageId(s)) !=
                                                               base.rank_of(d, ir::StageId(s + 1));
  const bool makespan = base.objective == ir::Objective::Makespan;
  std::vector<double> trips(static_cast<size_t>(S), 0);
  // The area form of the same windows: at every moment the rank holds at least the activations of
  // the windows open then, so over the time its windows can be open (after the earliest forward
  // chain to one of its stages, before the shortest backward chain from one) its room times that
  // time is at least the sum of a_s times the windows' lengths, over every stage of the rank.
  std::vector<double> area(static_cast<size_t>(pp)), first_f(static_cast<size_t>(pp)), last_b(static_cast<size_t>(pp));
  auto memory_bound = [&]() {
    if (!memory_term) return 0.0;
    double best = 0;
    std::fill(area.begin(), area.end(), 0.0);
    std::fill(first_f.begin(), first_f.end(), std::numeric_limits<double>::infinity());
    std::fill(last_b.begin(), last_b.end(), std::numeric_limits<double>::infinity());
    for (int32_t d = 0; d < base.num_directions(); ++d) {
      const auto& ch = change[static_cast<size_t>(d)];
      const double n = base.microbatches_of(d);
      // trips[s]: the round trip after stage s; before_f / before_b: the chains up to s.
      double trip = 0, before_f = 0, before_b = 0;
      for (int32_t s = S - 1; s >= 0; --s) {
        trips[static_cast<size_t>(s)] = trip;
        trip += fwd[static_cast<size_t>(s)] + back[static_cast<size_t>(s)] +
                (s > 0 && ch[static_cast<size_t>(s - 1)] ? 2 * base.cost.comm : 0);
      }
      for (int32_t s = 0; s < S; ++s) {
        const double lag = s > 0 && ch[static_cast<size_t>(s - 1)] ? base.cost.comm : 0;
        before_f += fwd[static_cast<size_t>(s)] + lag;
        before_b += back[static_cast<size_t>(s)] + lag;
        const double a = act[static_cast<size_t>(s)];
        if (!(a > 0)) continue;
        const ir::RankId r = base.rank_of(d, ir::StageId(s));
        const double room = *base.stated_cap_of(r) - rank_static[static_cast<size_t>(r.value)];
        const double k = std::floor(room / a * (1 + 1e-9));
        if (k < 1) return std::numeric_limits<double>::infinity();  // not one microbatch fits
        const double windows = std::ceil(n / k) * trips[static_cast<size_t>(s)];
        best = std::max(best, makespan ? before_f + windows + before_b
                                       : fwd[static_cast<size_t>(s)] + windows + back[static_cast<size_t>(s)]);
        const auto z = static_cast<size_t>(r.value);
        area[z] += a * n * trips[static_cast<size_t>(s)] / room;
        first_f[z] = std::min(first_f[z], makespan ? before_f : fwd[static_cast<size_t>(s)]);
        last_b[z] = std::min(last_b[z], makespan ? before_b : back[static_cast<size_t>(s)]);
      }
    }
    for (int32_t r = 0; r < pp; ++r)
      if (area[static_cast<size_t>(r)] > 0)
        best = std::max(best, first_f[static_cast<size_t>(r)] + area[static_cast<size_t>(r)] +
                                  last_b[static_cast<size_t>(r)]);
    return best;
  };
  // `end`: the layers 0..end-1 are still to place, on stages 0..s (s the next to get layers).
  auto bound_now = [&](int32_t s, int32_t end) {
    double best = memory_bound(), head = 0;

    for (int32_t r = 0; r < pp; ++r) {
      best = std::max(best, (heads ? head : 0) + rank_work[static_cast<size_t>(r)]);
      head += fwd[static_cast<size_t>(std::min(r, S - 1))] + (r + 1 < pp ? base.cost.comm : 0);
    }
    if (end > 0 && s >= 0) {
      const auto& rs = ranks_before[static_cast<size_t>(s) + 1];
      double total = base.microbatches * suffix_sure[static_cast<size_t>(end)];
      for (int32_t r : rs) total += rank_work[static_cast<size_t>(r)];
      best = std::max(best, total / static_cast<double>(rs.size()));
    }
    return best;
  };
  auto place = [&](int32_t s, int32_t first, int32_t n, double sign) {
    const double ds = suffix_sure[static_cast<size_t>(first + n)] - suffix_sure[static_cast<size_t>(first)];
    double df = 0;
    for (int32_t i = first; i < first + n; ++i) df += fwd_of[static_cast<size_t>(i)];
    sure[static_cast<size_t>(s)] += sign * ds;
    fwd[static_cast<size_t>(s)] += sign * df;
    for (auto [r, m] : holders[static_cast<size_t>(s)]) rank_work[static_cast<size_t>(r)] += sign * m * ds;
    if (!memory_term) return;
    double db = 0, da = 0, dst = 0;
    for (int32_t i = first; i < first + n; ++i)
      db += back_of[static_cast<size_t>(i)], da += act_of[static_cast<size_t>(i)],
          dst += stat_of[static_cast<size_t>(i)];
    back[static_cast<size_t>(s)] += sign * db;
    act[static_cast<size_t>(s)] += sign * da;
    for (auto [r, m] : holders[static_cast<size_t>(s)]) rank_static[static_cast<size_t>(r)] += sign * dst;
  };

  // The node problems ir::lower_bound may take: about `full_bounds` leaves' worth of actions.
  const bool node_bounds = base.objective == ir::Objective::Makespan && model.deltas_follow;
  int64_t node_bound_budget = full_bounds;
  // Best first at the leaves: the `full_bounds` partitions of least cheap bound get
  // ir::lower_bound; every other leaf, and every subtree cut off, keeps its cheap bound.
  struct Leaf {
    double cheap;
    Counts counts;
    bool operator<(const Leaf& o) const { return cheap < o.cheap; }
  };
  std::vector<Leaf> heap;    // a max-heap of the least cheap bounds
  double discarded = limit;  // the least bound of what is not in the heap
  auto threshold = [&] {
    double t = std::min(limit, discarded);
    if (static_cast<int64_t>(heap.size()) >= full_bounds && !heap.empty()) t = std::min(t, heap.front().cheap);
    return t;
  };
  const Counts balanced = ir::balanced_partition(model, S);
  int64_t nodes = 0;
  // Stage s gets its layers, ending at `end` (layers end - n .. end - 1); `floor` is what the
  // node's ancestors proved for every completion.
  std::function<void(int32_t, int32_t, double)> go = [&](int32_t s, int32_t end, double floor) {
    ++nodes;
    double prefix = std::max(floor, bound_now(s, end));
    if (prefix < threshold() && node_bounds && node_bound_budget > 0 && s < S - 1 && s > 0) {
      --node_bound_budget;
      ir::Problem q = ir::with_partition(base, model, counts);
      if (ir::validate(q).empty()) prefix = std::max(prefix, ir::lower_bound(q).value);
    }
    if (prefix >= threshold()) {
      discarded = std::min(discarded, prefix);
      return;
    }
    if (nodes > max_nodes) {
      discarded = std::min(discarded, prefix);
      out.exhaustive = false;
      return;
    }
    if (s == 0) {
      place(s, 0, end, 1);
      counts[0] = end;
      const double cheap = std::max(prefix, bound_now(-1, 0));
      ++out.leaves;
      if (cheap < threshold()) {
        heap.push_back({cheap, counts});
        std::push_heap(heap.begin(), heap.end());
        if (static_cast<int64_t>(heap.size()) > full_bounds) {
          std::pop_heap(heap.begin(), heap.end());
          discarded = std::min(discarded, heap.back().cheap);
          heap.pop_back();
        }
      } else {
        discarded = std::min(discarded, cheap);
      }
      counts[0] = 0;
      place(s, 0, end, -1);
      return;
    }
    // The balanced count first, then outwards: small bounds come early and cut the rest.
    const int32_t centre = std::min(balanced[static_cast<size_t>(s)], end);
    for (int32_t k = 0; centre - k >= 0 || centre + k <= end; ++k)
      for (int32_t n : {centre - k, centre + k}) {
        if (n < 0 || n > end || (k > 0 && n == centre)) continue;
        place(s, end - n, n, 1);
        counts[static_cast<size_t>(s)] = n;
        go(s - 1, end - n, prefix);
        counts[static_cast<size_t>(s)] = 0;
        place(s, end - n, n, -1);
        if (k == 0) break;
      }
  };
  go(S - 1, L, 0);
  // The least of: every bound left out, and the heap's partitions at their full bound.
  // A partition the problem's rules refuse (its static memory over the cap) has no schedule: it
  // is outside the space.
  double value = discarded;
  for (const Leaf& leaf : heap) {
    ir::Problem q = ir::with_partition(base, model, leaf.counts);
    if (ir::validate(q).empty()) value = std::min(value, std::max(leaf.cheap, ir::lower_bound(q).value));
  }
  // Both are below every partition's optimum; so is the larger.
  out.value = std::max(std::min(limit, value), partition_dp_bound(base, model));
  return out;
}

namespace {

// A candidate: a number of stages per rank and (with a model) a partition.
struct Candidate {
  PlanShape shape;
  int32_t vpp = 1;
  Counts counts;
  ir::Problem problem;
  double bound = 0;
  std::optional<SolveResult> result;
  std::string skipped;
  bool solved() const { return result && result->schedule && result->status != SolveStatus::Infeasible; }
};

// Memory-aware partitions: with a cap, the early stages hold more microbatches in flight (about
// S - s of them for stage s, over the stages per rank v), so they may need fewer layers than the
// balanced partition gives. For each pressure theta, the partition with the least largest stage
// time among those whose stage s fits theta * (S - s) / v microbatches in its share of the rank's
// room (the cap less its static memory, cut evenly over its stages); filled from the last stage,
// so the early stages get what is left.
std::vector<Counts> memory_aware_partitions(const ir::Problem& q, const ir::Model& m) {
  std::vector<Counts> out;
  if (!q.memory.cap) return out;
  const int32_t S = q.num_stages(), L = m.num_layers(), v = q.stages_per_rank;
  auto kind = [&](int32_t i) -> const ir::LayerKind& {
    return m.kinds[static_cast<size_t>(m.layers[static_cast<size_t>(i)])];
  };
  for (double theta : {0.25, 0.5, 0.75, 1.0, 1.5, 2.0}) {
    // Greedy from the last stage: stage s takes layers while its time stays within t and its
    // in-flight activations and static memory within its share of the rank's cap.
    auto fill = [&](double t, Counts* counts) {
      int32_t end = L;  // layers [0, end) are left for stages 0..s
      for (int32_t s = S - 1; s >= 0; --s) {
        const double cap = q.stated_cap_of(q.rank_of(0, ir::StageId(s))).value_or(0) / v;
        const double flight = theta * std::max(1.0, static_cast<double>(S - s) / v);
        int32_t begin = end;
        auto fits = [&](int32_t b) {
          ir::StageSums x = ir::stage_sums(m, s, S, b, end - b);
          return x.F + x.B + x.W <= t && flight * x.memory + x.static_memory <= cap;
        };
        if (s == 0) {
          begin = 0;
          if (!fits(0)) return false;
        } else {
          while (begin > 0 && fits(begin - 1)) --begin;
          if (!fits(begin)) return false;  // even its fixed part does not fit
        }
        if (counts) (*counts)[static_cast<size_t>(s)] = end - begin;
        end = begin;
      }
      return end == 0;
    };
    double hi = 0;
    for (int32_t i = 0; i < L; ++i) hi += kind(i).F + kind(i).B + kind(i).W;
    for (int32_t s : {0, S - 1}) {
      ir::StageSums x = ir::stage_sums(m, s, S, 0, 0);
      hi += x.F + x.B + x.W;
    }
    if (!fill(hi, nullptr)) continue;
    double lo = 0;
    for (int it = 0; it < 60; ++it) {
      double mid = (lo + hi) / 2;
      (fill(mid, nullptr) ? hi : lo) = mid;
    }
    Counts c(static_cast<size_t>(S), 0);
    if (fill(hi, &c)) out.push_back(std::move(c));
  }
  return out;
}

class Planner {
 public:
  Planner(const PlanSpace& space, const SolveOptions& o) : space_(space), o_(o), start_(Clock::now()) {}

  PlanResult run() {
    PlanResult out;
    ProgressReporter progress(o_.progress, o_.tty, start_);
    progress_ = &progress;
    // The initial candidates: per shape (placement and stages per rank), the stated (or
    // balanced) partition and, with a model under a cap, the memory-aware ones.
    const std::vector<PlanShape> shapes = plan_shapes(space_);
    shapes_ = shapes.size();
    for (const PlanShape& shape : shapes) {
      const ir::Problem q = shaped(shape);
      std::vector<Counts> parts;
      if (space_.model) {
        parts.push_back(ir::balanced_partition(*space_.model, q.num_stages()));
        for (Counts& c : memory_aware_partitions(q, *space_.model))
          if (std::find(parts.begin(), parts.end(), c) == parts.end()) parts.push_back(std::move(c));
      } else {
        parts.emplace_back();
      }
      for (Counts& c : parts) add(shape, std::move(c), q);
    }
    // Screening, in the order of the bounds.
    std::vector<size_t> order(cands_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cands_[a].bound < cands_[b].bound; });
    const double limit = o_.time_limit_s;
    const bool moves = space_.model != nullptr;
    const double screen = limit * (moves ? kScreenShare : 1.0);
    size_t valid = 0;
    for (const Candidate& c : cands_) valid += c.skipped.empty();
    for (size_t k = 0; k < order.size() && !interrupted_; ++k) {
      Candidate& c = cands_[order[k]];
      if (!c.skipped.empty()) continue;
      if (best_ && c.bound >= objective(*best_)) {
        c.skipped = "its bound " + format_number(c.bound) + " is no better than " + format_number(objective(*best_));
        continue;
      }
      solve(order[k], screen / static_cast<double>(std::max<size_t>(valid, 1)), {});
    }
    if (moves && best_ && !interrupted_) move_layers(limit * kMoveShare);
    // The leftover to the best candidate while its gap is open: its search goes on from its
    // schedule (a warm start: never worse).
    if (best_ && !interrupted_ && cands_[*best_].result->status != SolveStatus::Optimal && rest() > 0.01 * limit) {
      const size_t b = *best_;
      solve(b, rest(), {{"plan", *cands_[b].result->schedule}});
    }
    return finish(out);
  }

 private:
  // The stated problem at a shape: with a model, only its stage count and placement change (the
  // partition's values come later); without one, the stated per-rank values cut evenly.
  ir::Problem shaped(const PlanShape& shape) const {
    ir::Problem q = space_.base;
    if (space_.vpp_auto && !space_.model) q = ir::with_stages_per_rank(space_.base, shape.stages_per_rank);
    q.stages_per_rank = shape.stages_per_rank;
    q.placement = shape.placement;
    return q;
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // What is left of the limit; deterministic runs count the shares given, not the clock.
  double rest() const {
    const double limit = o_.time_limit_s * (space_.model ? 1 - kBoundShare : 1);
    if (o_.deterministic) return std::max(limit - shared_, 0.0);
    return std::max(limit - elapsed(), 0.0);
  }
  double objective(size_t i) const { return cands_[i].result->objective; }

  // A new candidate (or the one already there); its index.
  size_t add(const PlanShape& shape, Counts counts, const ir::Problem& q) {
    for (size_t i = 0; i < cands_.size(); ++i)
      if (cands_[i].shape == shape && cands_[i].counts == counts) return i;
    Candidate c;
    c.shape = shape;
    c.vpp = shape.stages_per_rank;
    c.problem = space_.model ? ir::with_partition(q, *space_.model, counts) : q;
    c.counts = std::move(counts);
    if (auto errors = ir::validate(c.problem); !errors.empty()) c.skipped = errors.front().message;
    else c.bound = ir::lower_bound(c.problem).value;
    cands_.push_back(std::move(c));
    return cands_.size() - 1;
  }

  // Solves candidate i for `seconds` (at least a sliver), from the warm starts; a better result
  // than its last is kept, and the best candidate follows.
  void solve(size_t i, double seconds, std::vector<SolveOptions::WarmStart> warm) {
    Candidate& c = cands_[i];
    SolveOptions o = o_;
    o.progress = nullptr;
    o.time_limit_s = std::clamp(std::min(seconds, rest()), kMinTimeLimit, kMaxTimeLimit);
    // Deterministic runs count shares, not the clock, and a search's fixed work (incumbents,
    // families) is not in its share: each is charged at least a twentieth of the limit, so a plan
    // runs at most twenty searches however small their shares.
    shared_ += o_.deterministic ? std::max(o.time_limit_s, o_.time_limit_s * kMinDeterministicCharge) : o.time_limit_s;
    o.warm_starts = std::move(warm);
    if (c.result && c.result->schedule) o.warm_starts.push_back({"plan", *c.result->schedule});
    SolveResult r = synthesize(c.problem, o);
    if (r.interrupted) interrupted_ = true;
    const bool ok = r.schedule && r.status != SolveStatus::Infeasible;
    if (!c.result || (ok && (!c.solved() || r.objective < c.result->objective)) ||
        (ok && r.objective == c.result->objective && r.status == SolveStatus::Optimal))
      c.result = std::move(r);
    if (!c.solved()) return;
    if (!best_ || better(i, *best_)) best_ = i;
    ProgressState st;
    st.best = objective(*best_);
    st.found_by = "plan";
    st.unit = space_.base.time_unit;
    progress_->publish(st);
  }

  // A partition-space bound on the time tick every plan of the model is timed on (the layer
  // kinds' values and the problem's, its sums in doubles carry the last places' noise: 937.4 read
  // as 937.4000000000004): the nearest tick where it is that noise, else the tick below (lowering
  // a bound keeps it sound).
  double on_tick(double value, const ir::Problem& q) const {
    std::vector<double> values = ir::time_values(q);
    for (const ir::LayerKind& kind : space_.model->kinds) values.insert(values.end(), {kind.F, kind.B, kind.W});
    const auto scale = static_cast<double>(ir::exact_scale(values));
    const double ticks = value * scale, nearest = std::round(ticks);
    const double noise = 1e-9 * std::max(1.0, std::abs(ticks));
    return (std::abs(ticks - nearest) <= noise ? nearest : std::floor(ticks)) / scale;
  }

  // a's result beats b's: a smaller makespan, then fewer stages per rank, then the earlier one.
  bool better(size_t a, size_t b) const {
    const double x = objective(a), y = objective(b);
    if (x != y) return x < y;
    return cands_[a].vpp < cands_[b].vpp;
  }

  // Moves of one layer across one stage boundary, from the best candidate's partition: each
  // neighbour (skipped when its bound cannot beat the best) is searched from the best schedule
  // (same shape), the first that improves becomes the centre; until the share is used or no
  // neighbour improves.
  void move_layers(double share) {
    const double until = shared_ + share;
    const auto t_end = Clock::now() + std::chrono::duration<double>(share);
    auto left = [&] {
      return o_.deterministic ? until - shared_ : std::chrono::duration<double>(t_end - Clock::now()).count();
    };
    const double each = std::max(kMinNeighbourSeconds, o_.time_limit_s * kNeighbourShare);
    bool improved = true;
    while (improved && !interrupted_ && left() > 0) {
      improved = false;
      const size_t centre = *best_;
      const Candidate base = cands_[centre];
      const ir::Problem q = shaped(base.shape);
      std::vector<size_t> next;
      const int32_t S = static_cast<int32_t>(base.counts.size());
      for (int32_t s = 0; s + 1 < S; ++s)
        for (int dir : {-1, 1}) {
          Counts c = base.counts;
          const auto from = static_cast<size_t>(dir < 0 ? s : s + 1), to = static_cast<size_t>(dir < 0 ? s + 1 : s);
          if (c[from] == 0) continue;
          --c[from];
          ++c[to];
          const size_t before = cands_.size();
          const size_t j = add(base.shape, std::move(c), q);
          if (j < before || !cands_[j].skipped.empty()) continue;  // seen, or invalid
          next.push_back(j);
        }
      std::stable_sort(next.begin(), next.end(), [&](size_t a, size_t b) { return cands_[a].bound < cands_[b].bound; });
      for (size_t j : next) {
        if (interrupted_ || left() <= 0) break;
        if (cands_[j].bound >= objective(*best_)) {
          cands_[j].skipped = "its bound " + format_number(cands_[j].bound) + " is no better than " +
                              format_number(objective(*best_));
          continue;
        }
        solve(j, std::min(each, left()), {{"plan", *cands_[centre].result->schedule}});
        if (*best_ != centre) {
          improved = true;
          break;
        }
      }
    }
  }

  PlanResult finish(PlanResult& out) {
    out.candidates.reserve(cands_.size());
    for (const Candidate& c : cands_) {
      PlanCandidate row;
      row.placement = c.shape.placement;
      row.stages_per_rank = c.vpp;
      row.layers_per_stage = c.counts;
      row.bound = c.bound;
      if (c.solved()) {
        row.makespan = c.result->objective;
        row.status = std::string(to_string(c.result->status));
      } else if (c.result) {
        row.status = "no schedule meets the cap";
      } else {
        row.status = c.skipped.empty() ? "not tried: the time was used" : "skipped: " + c.skipped;
      }
      out.candidates.push_back(std::move(row));
    }
    // Without a solved candidate: the first tried one's answer (an infeasible cap explained).
    std::optional<size_t> pick = best_;
    for (size_t i = 0; !pick && i < cands_.size(); ++i)
      if (cands_[i].result) pick = i;
    if (!pick) {
      for (const Candidate& c : cands_)
        if (!c.skipped.empty()) {
          out.error = c.skipped;
          break;
        }
      if (out.error.empty()) out.error = "no candidate was tried";
      out.problem = cands_.empty() ? space_.base : cands_.front().problem;
      return out;
    }
    Candidate& c = cands_[*pick];
    out.candidates[*pick].chosen = best_.has_value();
    out.problem = c.problem;
    out.stages_per_rank = c.vpp;
    out.layers_per_stage = c.counts;
    out.solve = *c.result;
    if (!best_) return out;
    out.candidate_bound = out.solve.lower_bound;
    // The plan bound: no plan of the space beats it. Per stages-per-rank value tried, the least
    // bound over every partition (a branch and bound) or its candidate's own proved bound.
    const double best = out.solve.objective;
    double bound = best;
    std::vector<PlanShape> seen;
    for (const Candidate& k : cands_) {
      if (std::find(seen.begin(), seen.end(), k.shape) != seen.end()) continue;
      seen.push_back(k.shape);
      if (!space_.model) {
        if (!k.skipped.empty() && !k.result) {
          // An invalid candidate is outside the space; one skipped by its bound is above it.
          if (k.bound > 0) bound = std::min(bound, k.bound);
          continue;
        }
        bound = std::min(bound, k.result ? k.result->lower_bound : k.bound);
        continue;
      }
      // Half the bound's share for ir::lower_bound on the best partitions and nodes (two calls
      // a partition, at about kBoundActionsPerSecond), half for the nodes' cheap bounds.
      const double per_shape = o_.time_limit_s * kBoundShare / static_cast<double>(std::max<size_t>(shapes_, 1));
      const double actions = static_cast<double>(ir::num_action_slots(k.problem));
      const auto full = static_cast<int64_t>(std::clamp(
          per_shape / 2 * kBoundActionsPerSecond / 2 / std::max(actions, 1.0), 4.0, static_cast<double>(kFullBounds)));
      const auto nodes = static_cast<int64_t>(
          std::max(1000.0, per_shape / 2 * kNodeStagesPerSecond / std::max(1, k.problem.num_stages())));
      PartitionBound pb = partition_space_bound(shaped(k.shape), *space_.model, best, full, std::min(kMaxNodes, nodes));
      out.partitions_bounded += pb.leaves;
      out.bound_exhaustive = out.bound_exhaustive && pb.exhaustive;
      bound = std::min(bound, on_tick(pb.value, k.problem));
    }
    // A space of one candidate (no model to cut): the plan's bound is its own (what its search proved).
    if (!space_.model && cands_.size() == 1) bound = out.solve.lower_bound;
    SolveResult& r = out.solve;
    // A valid schedule below the plan bound is a bug: the bound is dropped, never clamped to it.
    r.lower_bound = bound;
    if (bound > r.objective + 1e-9 * std::max(1.0, std::abs(r.objective))) {
      r.bound_error = "a valid schedule (plan, " + format_number(r.objective) + ") is below the plan bound " +
                      format_number(bound) + "; this is a bug in schedc, and no bound is claimed";
      r.lower_bound = 0;
      r.bound_reason = "none (dropped: a valid schedule was below it)";
    }
    r.gap = r.objective > 0 ? (r.objective - r.lower_bound) / r.objective : 0;
    const bool proved = r.objective <= r.lower_bound + 1e-9 * std::max(1.0, std::abs(r.objective));
    r.status = proved ? SolveStatus::Optimal : SolveStatus::Feasible;
    if (!proved && r.bound_error.empty()) r.bound_reason = "the least bound over every plan of the space searched";
    r.seconds = elapsed();
    r.interrupted = interrupted_;
    // The document's record claims what the plan proved, not what its candidate did alone.
    if (r.schedule && r.schedule->provenance && r.schedule->provenance->solve) {
      ir::SolveRecord& rec = *r.schedule->provenance->solve;
      rec.status = std::string(to_string(r.status));
      rec.lower_bound = r.lower_bound;
      rec.gap = r.gap;
      rec.bound = r.bound_reason;
      if (!o_.deterministic) rec.seconds = std::round(r.seconds * 1000) / 1000;
      rec.interrupted = interrupted_;
    }
    ProgressState st;
    st.best = r.objective;
    st.found_by = "plan";
    st.bound = r.lower_bound;
    st.unit = space_.base.time_unit;
    progress_->publish(st, true);
    return out;
  }

  const PlanSpace& space_;
  const SolveOptions& o_;
  Clock::time_point start_;
  std::vector<Candidate> cands_;
  std::optional<size_t> best_;
  double shared_ = 0;
  size_t shapes_ = 0;
  bool interrupted_ = false;
  ProgressReporter* progress_ = nullptr;
};

}  // namespace

PlanResult solve_plan(const PlanSpace& space, const SolveOptions& options) {
  if (!space.vpp_auto && !space.placement_auto && !space.model) {
    PlanResult out;
    out.solve = synthesize(space.base, options);
    out.problem = space.base;
    out.stages_per_rank = space.base.stages_per_rank;
    out.candidate_bound = out.solve.lower_bound;
    return out;
  }
  return Planner(space, options).run();
}

}  // namespace schedc::solver
