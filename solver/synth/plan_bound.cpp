// The plan bound (plan.h): a lower bound over every partition of a model into a problem's stages,
// by branch and bound over the partitions and by dynamic programs over the stages' layer ranges
// (docs/solver.md, "The plan").

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

// More stages than this are not enumerated (the recursion goes one stage deep per level).
constexpr int32_t kMaxEnumeratedStages = 4096;

// ---- The cheap bound of one partition (partition_space_bound's leaves and prefixes) ----------

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

// The least largest b[r] + x_r w over integers x_r >= 0 with sum n: where n more layers, each at
// least w of work on whichever rank it lands, go to ranks that already hold b[r] (the caller's
// scratch copy, reordered here). The continuous water level lambda (sum max(0, lambda - b[r]) =
// n w) is below it, and lambda + w above (at most one layer short on every rank below the level),
// so the answer is the first level in [lambda, lambda + w] at which the ranks take n whole layers:
// each rank's next whole layer is one candidate. Near ties count a layer more (1e-9 of one), so
// rounding only ever lowers the answer, and never below lambda.
double least_spread(std::vector<double>& b, int64_t n, double w) {
  std::sort(b.begin(), b.end());
  if (n <= 0 || !(w > 0) || b.empty()) return b.empty() ? 0.0 : b.back();
  double sum = 0, lambda = 0;
  for (size_t j = 0; j < b.size(); ++j) {
    sum += b[j];
    lambda = (sum + static_cast<double>(n) * w) / static_cast<double>(j + 1);
    if (j + 1 == b.size() || lambda <= b[j + 1]) break;
  }
  int64_t have = 0;
  std::vector<double> next;
  next.reserve(b.size());
  for (double v : b) {
    const double k = v <= lambda ? std::floor((lambda - v) / w + 1e-9) : 0;
    have += static_cast<int64_t>(k);
    next.push_back(v + (k + 1) * w);
  }
  const int64_t need = n - have;
  if (need <= 0) return std::max(lambda, b.back());
  if (need > static_cast<int64_t>(next.size())) return std::max(lambda, b.back());  // rounding: the level stands
  std::nth_element(next.begin(), next.begin() + (need - 1), next.end());
  return std::max({lambda, b.back(), next[static_cast<size_t>(need - 1)]});
}

}  // namespace

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
  // least_sure[i]: the least sure work of one of the layers 0..i-1.
  std::vector<double> least_sure(static_cast<size_t>(L) + 1, std::numeric_limits<double>::infinity());
  for (int32_t i = 0; i < L; ++i) {
    suffix_sure[static_cast<size_t>(i) + 1] = suffix_sure[static_cast<size_t>(i)] + sure_of[static_cast<size_t>(i)];
    least_sure[static_cast<size_t>(i) + 1] = std::min(least_sure[static_cast<size_t>(i)],
                                                      sure_of[static_cast<size_t>(i)]);
  }
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
  // Fill under the cap (ir::lower_bound's term 3, its head half): before rank r's first backward
  // can start (at least H_B, the forward chain to the last stage and the backward chain down to
  // r's latest stage), r runs only forwards and they all stay in memory, at most its room times
  // its dearest forward per unit of activation; so r idles at least H_B - fill before it, and
  // that idle time (like its head) comes before all of its work: the offset of its term, and of
  // its share in the spread of the layers still to place. On a node: H_B only grows with layers, the room
  // only shrinks, and a stage still to get layers has a ratio of at most the larger of its fixed
  // part's and its possible layers' (a mediant), so the term bounds every completion. One
  // direction, split or fused backwards (a chain of B or BW), no recomputation (memory_term).
  const bool fill_term = memory_term && heads && base.backward != ir::BackwardMode::Mixed;
  auto ratio = [](double f, double a) { return a > 0 ? f / a : f > 0 ? std::numeric_limits<double>::infinity() : 0.0; };
  std::vector<double> fixed_ratio(static_cast<size_t>(S)), layer_ratio(static_cast<size_t>(L) + 1, 0);
  std::vector<std::vector<int32_t>> stages_of(static_cast<size_t>(pp));
  if (fill_term) {
    for (int32_t t = 0; t < S; ++t) {
      fixed_ratio[static_cast<size_t>(t)] = ratio(fixed.forward[static_cast<size_t>(t)], act[static_cast<size_t>(t)]);
      stages_of[static_cast<size_t>(base.rank_of(0, ir::StageId(t)).value)].push_back(t);
    }
    for (int32_t i = 0; i < L; ++i)
      layer_ratio[static_cast<size_t>(i) + 1] = std::max(
          layer_ratio[static_cast<size_t>(i)], ratio(fwd_of[static_cast<size_t>(i)], act_of[static_cast<size_t>(i)]));
  }
  std::vector<double> head_b(static_cast<size_t>(S)), fwd_left(static_cast<size_t>(L) + 1, 0);  // [i]: layers 0..i-1
  for (int32_t i = 0; i < L; ++i)
    fwd_left[static_cast<size_t>(i) + 1] = fwd_left[static_cast<size_t>(i)] + fwd_of[static_cast<size_t>(i)];
  // before_work[r]: what rank r surely idles before its work, by the fill term (0 without it);
  // first_b_of[r], most_of[r]: its H_B and its dearest forward per unit of activation (infinite:
  // no fill term on r).
  std::vector<double> before_work(static_cast<size_t>(pp), 0), first_b_of(static_cast<size_t>(pp), 0),
      most_of(static_cast<size_t>(pp), std::numeric_limits<double>::infinity());
  auto fill_offsets = [&](int32_t s, int32_t end) {
    if (!fill_term) return;
    // head_b[t]: the least start of B(mb, t) (chain durations and the lags between ranks). Every
    // layer still to place adds its forward to the chain wherever it lands.
    double chain = fwd_left[static_cast<size_t>(end)];
    for (int32_t t = 0; t < S; ++t)
      chain += fwd[static_cast<size_t>(t)] + (t + 1 < S && change[0][static_cast<size_t>(t)] ? base.cost.comm : 0);
    for (int32_t t = S - 1; t >= 0; --t) {
      head_b[static_cast<size_t>(t)] = chain;
      chain += back[static_cast<size_t>(t)] + (t > 0 && change[0][static_cast<size_t>(t - 1)] ? base.cost.comm : 0);
    }
    for (int32_t r = 0; r < pp; ++r) {
      before_work[static_cast<size_t>(r)] = 0;
      const auto& mine = stages_of[static_cast<size_t>(r)];
      if (mine.empty()) continue;
      double first_b = std::numeric_limits<double>::infinity(), most = 0;
      for (int32_t t : mine) {
        first_b = std::min(first_b, head_b[static_cast<size_t>(t)]);
        most = std::max(most, t > s ? ratio(fwd[static_cast<size_t>(t)], act[static_cast<size_t>(t)])
                                    : std::max(fixed_ratio[static_cast<size_t>(t)],
                                               end > 0 ? layer_ratio[static_cast<size_t>(end)] : 0.0));
      }
      const double room = *base.stated_cap_of(ir::RankId(r)) - rank_static[static_cast<size_t>(r)];
      first_b_of[static_cast<size_t>(r)] = first_b;
      most_of[static_cast<size_t>(r)] = most;
      if (!(room >= 0) || std::isinf(most)) continue;
      before_work[static_cast<size_t>(r)] = std::max(0.0, first_b - room * most);
    }
  };
  // `end`: the layers 0..end-1 are still to place, on stages 0..s (s the next to get layers).
  // A rank's term: its work after its first input can arrive (heads of the stages placed so far,
  // which only grow). The layers still to place land whole on the ranks of the stages still
  // empty, so one of those ranks ends with at least their average work, and (one direction: a
  // stage's layers on one rank) at least what the least even spread of whole layers, each at
  // least the least of their sure work, gives it (least_spread).
  std::vector<double> term(static_cast<size_t>(pp)), spread, head_of(static_cast<size_t>(pp), 0);
  // head_of[r]: the earliest rank r's first forward's input can arrive (0 without `heads`).
  auto rank_heads = [&] {
    double head = 0;
    for (int32_t r = 0; r < pp; ++r) {
      head_of[static_cast<size_t>(r)] = heads ? head : 0;
      head += fwd[static_cast<size_t>(std::min(r, S - 1))] + (r + 1 < pp ? base.cost.comm : 0);
    }
  };
  const bool whole_layers = base.num_directions() == 1;
  auto bound_now = [&](int32_t s, int32_t end) {
    double best = memory_bound();
    fill_offsets(s, end);
    rank_heads();
    for (int32_t r = 0; r < pp; ++r) {
      term[static_cast<size_t>(r)] = std::max(head_of[static_cast<size_t>(r)], before_work[static_cast<size_t>(r)]) +
                                     rank_work[static_cast<size_t>(r)];
      best = std::max(best, term[static_cast<size_t>(r)]);
    }
    if (end > 0 && s >= 0) {
      const auto& rs = ranks_before[static_cast<size_t>(s) + 1];
      double total = base.microbatches * suffix_sure[static_cast<size_t>(end)];
      for (int32_t r : rs) total += rank_work[static_cast<size_t>(r)];
      best = std::max(best, total / static_cast<double>(rs.size()));
      if (whole_layers) {
        spread.clear();
        for (int32_t r : rs) spread.push_back(term[static_cast<size_t>(r)]);
        best = std::max(best, least_spread(spread, end, base.microbatches * least_sure[static_cast<size_t>(end)]));
      }
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
  // The root's spread with the rooms shrinking (one direction): every layer on rank r adds at
  // least w (its least sure work over the microbatches) to r's work and at least s (the least
  // static memory of a layer) to r's static memory, so r holds at most room_r / s layers (a plan
  // over the cap is outside the space), and its fill shrinks by s times its ratio a layer. With x
  // layers r's term is at least both
  //   head_r + work_r + x w   and   H_B,r - (room_r - x s) most_r + work_r + x w,
  // each nondecreasing in x; a makespan T allows at most X_r(T) layers on r, and a T with
  // sum X_r(T) < L is below every plan. Bisection finds the largest such T, the floor of the whole
  // branch and bound (counts err upwards by 1e-9 of a layer, so rounding only lowers it).
  double root_floor = 0;
  if (whole_layers && L > 0) {
    fill_offsets(S - 1, L);
    const double w = base.microbatches * least_sure[static_cast<size_t>(L)];
    double s_min = std::numeric_limits<double>::infinity();
    for (int32_t i = 0; i < L; ++i) s_min = std::min(s_min, stat_of[static_cast<size_t>(i)]);
    std::vector<double> room_of(static_cast<size_t>(pp), 0);
    rank_heads();
    bool open = true;  // every rank's static memory fits its cap with no layers
    for (int32_t r = 0; r < pp; ++r) {
      room_of[static_cast<size_t>(r)] = base.memory.cap
                                            ? *base.stated_cap_of(ir::RankId(r)) - rank_static[static_cast<size_t>(r)]
                                            : std::numeric_limits<double>::infinity();
      open = open && room_of[static_cast<size_t>(r)] >= 0;
    }
    const double inf = std::numeric_limits<double>::infinity();
    // The layers rank r can take at makespan T (-1: not even none).
    auto layers_at = [&](int32_t r, double T) {
      const auto z = static_cast<size_t>(r);
      const double slack = T - head_of[z] - rank_work[z];
      if (slack < 0) return -1.0;
      double x = w > 0 ? slack / w : inf;
      const double room = room_of[z];
      if (s_min > 0 && std::isfinite(room)) x = std::min(x, room / s_min);
      if (fill_term && std::isfinite(most_of[z]) && std::isfinite(room)) {
        const double left = T - rank_work[z] - first_b_of[z] + room * most_of[z], per = w + s_min * most_of[z];
        if (left < 0) return -1.0;
        if (per > 0) x = std::min(x, left / per);
      }
      return std::floor(std::min(x, static_cast<double>(L)) + 1e-9);
    };
    auto fits = [&](double T) {
      double total = 0;
      for (int32_t r = 0; r < pp; ++r) {
        const double x = layers_at(r, T);
        if (x < 0) return false;
        total += x;
      }
      return total >= L;
    };
    if (open && fits(inf)) {
      double lo = 0, hi = std::max(1.0, limit < inf ? limit : 1.0);
      for (int k = 0; k < 200 && !fits(hi); ++k) hi *= 2;
      if (fits(hi)) {
        for (int k = 0; k < 100; ++k) {
          const double mid = lo + (hi - lo) / 2;
          (fits(mid) ? hi : lo) = mid;
        }
        root_floor = lo;
      }
    } else {
      root_floor = limit;  // no partition's static memory fits: nothing of the space is a plan
    }
  }
  go(S - 1, L, root_floor);
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

}  // namespace schedc::solver
