#include "ir/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <span>
#include <unordered_map>

#include "ir/action.h"
#include "ir/dep_graph.h"
#include "ir/lower_bound_terms.h"
#include "ir/schedule.h"

namespace schedc::ir {
namespace {

using namespace bound;

// The durations of every node of one (direction, stage), in ticks, given the overlapped units its
// rank can form (docs/solver.md section 1, "Overlapped F&B units").
struct StageDurations {
  int64_t f_dur = 0, f_share = 0;
  int64_t b_dur = 0, b_share = 0;  // the B node (split, mixed) or the BW node (fused)
  int64_t w_dur = 0, w_share = 0;  // split and mixed only
};

// What the forwards and backwards of one rank can form as units: the dearest backward that can
// join one, the least FB of its forward stages, and the cap on a backward's work share.
struct RankUnits {
  int64_t c_max = 0;
  int64_t fb_min = kNever;
  int64_t beta = kNever;
};

Costs stage_costs(const Problem& p, int64_t scale) {
  Costs c;
  const int32_t S = p.num_stages();
  for (int32_t s = 0; s < S; ++s) {
    auto z = static_cast<size_t>(s);
    // An action's messages may differ between directions (custom placements): the least cost of
    // the stage's actions over the directions. A unit pays FB, its forward's overhead and at
    // least one action overhead for its backward.
    auto least = [&](ActionKind k) {
      double v = cost_of(p, Action{k, MbId(0), StageId(s)});
      for (int32_t d = 1; d < p.num_directions(); ++d)
        v = std::min(v, cost_of(p, Action{k, MbId(p.first_microbatch(d)), StageId(s)}));
      return to_fixed(v, scale);
    };
    c.f.push_back(least(ActionKind::F));
    c.b.push_back(least(ActionKind::B));
    c.w.push_back(least(ActionKind::W));
    c.bw.push_back(least(ActionKind::BW));
    if (p.cost.FB) {
      double f_overhead = overhead_of(p, F(0, s));
      for (int32_t d = 1; d < p.num_directions(); ++d)
        f_overhead = std::min(f_overhead, overhead_of(p, F(p.first_microbatch(d), s)));
      c.fb.push_back(to_fixed(p.cost.FB->at(z) + f_overhead + p.cost.action_overhead, scale));
    }
    for (double v : {p.cost.F.at(z), p.cost.B.at(z), p.cost.W.at(z), p.cost.action_overhead, p.cost.message_overhead}) {
      double x = v * static_cast<double>(scale);
      if (std::abs(x - std::round(x)) > 1e-3) c.rounding = 1;
    }
  }
  return c;
}

std::vector<StageDurations> stage_durations(const Problem& p, const Costs& c, std::vector<RankUnits>& units) {
  const bool fused = p.backward == BackwardMode::Fused, mixed = p.backward == BackwardMode::Mixed;
  const int32_t S = p.num_stages(), D = p.num_directions();
  auto joinable = [&](size_t s) { return fused || mixed ? c.bw[s] : c.b[s]; };  // bw >= b
  for (int32_t d = 0; d < D; ++d)
    for (int32_t s = 0; s < S; ++s) {
      RankUnits& u = units[p.rank_of(d, StageId(s)).index()];
      u.c_max = std::max(u.c_max, joinable(static_cast<size_t>(s)));
      if (!c.fb.empty()) u.fb_min = std::min(u.fb_min, c.fb[static_cast<size_t>(s)]);
    }
  // A forward of stage s saves in a unit with a backward x when FB_s < F_s + cost(x). For those
  // pairs the backward's share is capped at beta = max(FB_s - F_s, FB_s / 2) (at most FB_s), and
  // every forward keeps what FB leaves after the largest share a backward can have.
  if (!c.fb.empty())
    for (int32_t d = 0; d < D; ++d)
      for (int32_t s = 0; s < S; ++s) {
        auto z = static_cast<size_t>(s);
        RankUnits& u = units[p.rank_of(d, StageId(s)).index()];
        int64_t gap = c.fb[z] - c.f[z];
        if (gap < u.c_max) u.beta = std::min(u.beta, std::max(gap, c.fb[z] / 2));
      }
  std::vector<StageDurations> out(static_cast<size_t>(D * S));
  for (int32_t d = 0; d < D; ++d)
    for (int32_t s = 0; s < S; ++s) {
      auto z = static_cast<size_t>(s);
      const RankUnits& u = units[p.rank_of(d, StageId(s)).index()];
      int64_t f = c.f[z], b = c.b[z], w = c.w[z], bw = c.bw[z];
      StageDurations& o = out[static_cast<size_t>(d * S + s)];
      // cap_b, cap_bw: the largest share of a B, of a BW; d_b, d_bw: the least step they run in.
      int64_t cap_b = 0, cap_bw = 0, d_b = 0, d_bw = 0;
      if (!c.fb.empty()) {
        o.f_share = std::min(f, c.fb[z] - std::min(u.c_max, u.beta));
        o.f_dur = std::min(f, c.fb[z]);
        cap_b = std::min(b, u.beta);
        cap_bw = std::min(bw, u.beta);
        d_b = std::min(b, u.fb_min);
        d_bw = std::min(bw, u.fb_min);
      } else {
        // A unit lasts the sum of its members' costs, rounded once to ticks.
        o.f_share = o.f_dur = f;
        cap_b = std::max<int64_t>(0, b - c.rounding);
        cap_bw = std::max<int64_t>(0, bw - c.rounding);
        d_b = b;
        d_bw = bw;
      }
      if (fused) {
        o.b_share = cap_bw;
        o.b_dur = d_bw;
      } else if (!mixed) {
        o.b_share = cap_b;
        o.b_dur = d_b;
        o.w_share = o.w_dur = w;
      } else {
        // The B and W nodes stand for a B and a W, or for one BW: their shares together stay
        // within the BW's, and the W share fits after the B node's chain duration in every step
        // the BW can run in (so that the one-machine bound can place both).
        o.b_share = b + w > 0 ? static_cast<int64_t>(std::min<Wide>(cap_b, Wide{cap_bw} * b / (b + w))) : 0;
        o.w_share = std::min(w, cap_bw - o.b_share);
        o.b_dur = std::min(d_b, d_bw - o.w_share);
        o.w_dur = std::min(w, d_bw - o.b_dur);
      }
    }
  return out;
}

// Microbatches of one direction are interchangeable: some optimal schedule runs them in order on
// every stage, overlapped units included (docs/solver.md), so the graph's microbatch-order edges
// keep every bound below the optimum. In a mixed problem a W node may stand for the end of a BW;
// its W's are in order only when every BW can become B;W and every unit two single actions
// without ending later.
// Whether some overlapped unit can end before its two members would one after the other. Where
// none can, a unit is never better than its members run one after the other (the one whose delta
// is not above zero first, else the backward: its prefix sums stay within the unit's, and every
// output comes no later), so some optimal schedule has no units.
bool units_may_save(const Costs& c, const std::vector<RankUnits>& units) {
  auto saves = [](const RankUnits& u) { return u.beta != kNever; };
  return c.fb.empty() ? c.rounding != 0 : std::any_of(units.begin(), units.end(), saves);
}

bool weights_in_order(const Problem& p, const Costs& c, const std::vector<RankUnits>& units) {
  if (p.backward != BackwardMode::Mixed) return p.backward == BackwardMode::Split;
  const bool units_save = units_may_save(c, units);
  bool bw_splits = true;
  for (int32_t s = 0; s < p.num_stages(); ++s)
    if (c.bw[static_cast<size_t>(s)] != c.b[static_cast<size_t>(s)] + c.w[static_cast<size_t>(s)]) bw_splits = false;
  return !units_save && bw_splits;
}

Dag build_dag(const Problem& p, const Costs& c, std::vector<RankUnits>& units) {
  const int32_t S = p.num_stages();
  std::vector<StageDurations> sd = stage_durations(p, c, units);
  Dag g{DepGraph(p, {.microbatch_order = true, .order_weights = weights_in_order(p, c, units)}), {}, {}, {}, {}};
  const size_t n = g.size();
  g.dur.resize(n);
  g.share.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Action a = g.act(i);
    const StageDurations& o = sd[static_cast<size_t>(p.direction_of(a.mb) * S + a.stage.value)];
    g.dur[i] = a.kind == ActionKind::F ? o.f_dur : a.kind == ActionKind::W ? o.w_dur : o.b_dur;
    g.share[i] = a.kind == ActionKind::F ? o.f_share : a.kind == ActionKind::W ? o.w_share : o.b_share;
  }
  // Paths stay below 9.2e18 ticks: at most 4e6 nodes of at most 1e12 ticks (2e12 for a BW, whose
  // problems have two nodes per stage) plus one comm lag of at most 1e12 each.
  g.head = g.graph.heads(g.dur);
  g.tail = g.graph.tails(g.dur);
  return g;
}

// Least time from the end of F(mb, s) to the start of its own backward, per direction and stage:
// the rest of the forward pass and the backward pass back to s (chain durations), with comm on
// every rank change.
std::vector<int64_t> return_chains(const Problem& p, const Dag& g) {
  const ActionKind bk = p.backward == BackwardMode::Fused ? ActionKind::BW : ActionKind::B;
  const int32_t S = p.num_stages(), D = p.num_directions();
  std::vector<int64_t> out(static_cast<size_t>(D * S), 0);
  for (int32_t d = 0; d < D; ++d) {
    int32_t mb = p.first_microbatch(d);
    for (int32_t s = S - 2; s >= 0; --s) {
      int32_t f0 = node_of(p, mb, s, ActionKind::F), b0 = node_of(p, mb, s, bk);
      int32_t f = node_of(p, mb, s + 1, ActionKind::F), b = node_of(p, mb, s + 1, bk);
      int64_t lag = g.graph.lag(f0, f) + g.graph.lag(b, b0);
      out[static_cast<size_t>(d * S + s)] = out[static_cast<size_t>(d * S + s + 1)] + g.dur[static_cast<size_t>(f)] +
                                            g.dur[static_cast<size_t>(b)] + lag;
    }
  }
  return out;
}

// Jackson's preemptive schedule: the optimal preemptive one-machine makespan with release times
// (heads), processing times (work shares) and delivery times (tails), a lower bound on the
// non-preemptive one.
Wide jackson_bound(const Dag& g, std::span<const int32_t> jobs) {
  std::vector<int32_t> by_head(jobs.begin(), jobs.end());
  std::sort(by_head.begin(), by_head.end(),
            [&](int32_t a, int32_t b) { return g.head[static_cast<size_t>(a)] < g.head[static_cast<size_t>(b)]; });
  // Work left per job, by its place in by_head: sized by this rank's jobs, not the whole graph
  // (per rank, a graph-sized array made the bound quadratic: 32 GB of zeroing at pp 1024).
  std::priority_queue<std::pair<int64_t, int32_t>> ready;  // (tail, place in by_head)
  std::vector<int64_t> left(by_head.size(), 0);
  Wide t = 0, best = 0;
  size_t next = 0;
  while (next < by_head.size() || !ready.empty()) {
    if (ready.empty()) t = std::max<Wide>(t, g.head[static_cast<size_t>(by_head[next])]);
    while (next < by_head.size() && g.head[static_cast<size_t>(by_head[next])] <= t) {
      auto j = static_cast<size_t>(by_head[next]);
      left[next] = g.share[j];
      ready.push({g.tail[j], static_cast<int32_t>(next)});
      ++next;
    }
    auto [q, k] = ready.top();
    auto place = static_cast<size_t>(k);
    Wide release = next < by_head.size() ? Wide{g.head[static_cast<size_t>(by_head[next])]} : Wide{kNever};
    auto run = static_cast<int64_t>(std::min<Wide>(left[place], release - t));
    t += run;
    left[place] -= run;
    if (left[place] == 0) {
      ready.pop();
      best = std::max(best, t + q);
    }
  }
  return best;
}

// Lone forwards under saving units (docs/solver.md section 1, term 5): before r's first backward
// can start (H_B) every step is a lone forward, and each lone forward leaves one backward of r
// without a partner (units pair one forward with one backward; r holds as many of each). A lone
// forward and a lone backward cost `e` more than their work shares, while the lone forwards cover
// at most `f_max` each (and `fill` in all, under a cap) of [earliest, H_B). With k lone forwards
// the rank needs work + k e + max(0, H_B - earliest - min(k f_max, fill)) after its earliest
// start; this returns the earliest start plus the least of that over k >= 1, without the work (0
// when no unit saves on the rank).
Wide lone_forward_start(const Problem& p, const Dag& g, const Costs& c, std::span<const int32_t> jobs, Wide fill) {
  if (c.fb.empty()) return 0;
  const bool fused = p.backward == BackwardMode::Fused, mixed = p.backward == BackwardMode::Mixed;
  int64_t earliest = kNever, first_backward = kNever, f_max = 0;
  int64_t e_f = kNever, e_x = kNever;
  for (int32_t i : jobs) {
    auto id = static_cast<size_t>(i);
    Action a = g.act(id);
    earliest = std::min(earliest, g.head[id]);
    auto z = a.stage.index();
    if (a.kind == ActionKind::F) {
      f_max = std::max(f_max, c.f[z]);
      e_f = std::min(e_f, c.f[z] - g.share[id]);
    } else if (a.kind != ActionKind::W) {
      first_backward = std::min(first_backward, g.head[id]);
      int64_t extra = 0;
      if (fused) {
        extra = c.bw[z] - g.share[id];
      } else if (!mixed) {
        extra = c.b[z] - g.share[id];
      } else {
        // A lone B (its W alone too) or a lone BW.
        auto w = static_cast<size_t>(node_of(p, a.mb.value, a.stage.value, ActionKind::W));
        int64_t both = g.share[id] + g.share[w];
        extra = std::min(c.b[z] + c.w[z] - both, c.bw[z] - both);
      }
      e_x = std::min(e_x, extra);
    }
  }
  if (f_max == 0 || first_backward == kNever || e_f == kNever || e_x == kNever) return 0;
  const Wide e = Wide{std::max<int64_t>(0, e_f)} + std::max<int64_t>(0, e_x);
  const Wide d = std::max<Wide>(0, Wide{first_backward} - earliest);
  const Wide coverable = fill < 0 ? d : std::min(d, fill);
  // At least one pair is lone: the backward of r's last forward has no forward left to join.
  // k e + max(0, d - min(k f_max, fill)) is convex in k: least at k = 1, or, while e < f_max, where
  // the lone forwards cover all they can (k = coverable / f_max, when that is above 1).
  Wide extra = e + std::max<Wide>(0, d - std::min<Wide>(f_max, coverable));
  if (e < f_max && coverable > f_max) extra = std::min(extra, (d - coverable) + floor_div(coverable * e, f_max));
  return extra > 0 ? earliest + extra : 0;
}

LowerBound compute(const Problem& p, std::vector<LowerBound>* terms) {
  const int64_t scale = time_scale(p), mscale = memory_scale(p);
  const Costs c = stage_costs(p, scale);
  std::vector<RankUnits> units(static_cast<size_t>(p.ranks));
  Dag g = build_dag(p, c, units);
  const std::vector<int64_t> chains = return_chains(p, g);
  LowerBound best;
  auto offer = [&](Wide ticks, std::string why) {
    double v = static_cast<double>(ticks) / static_cast<double>(scale);
    if (terms) terms->push_back({v, why});
    if (v > best.value) best = {v, std::move(why)};
  };

  std::vector<StageMemory> mem;
  for (int32_t s = 0; s < p.num_stages(); ++s)
    mem.push_back({to_fixed(memory_delta(p, F(0, s)), mscale), to_fixed(memory_delta(p, B(0, s)), mscale),
                   to_fixed(memory_delta(p, W(0, s)), mscale)});

  if (p.objective == Objective::Makespan) {
    Wide cp = 0;
    for (size_t i = 0; i < g.size(); ++i) cp = std::max(cp, Wide{g.head[i]} + g.dur[i] + g.tail[i]);
    offer(cp, "the longest dependency chain");
  }
  std::vector<OneAtATime> ones(static_cast<size_t>(p.ranks));
  const bool units_save = units_may_save(c, units);
  for (int32_t r = 0; r < p.ranks; ++r) {
    const std::span<const int32_t> jobs = g.graph.on_rank(r);
    if (jobs.empty()) continue;
    Wide work = 0;
    for (int32_t j : jobs) work += g.share[static_cast<size_t>(j)];
    std::string rank = "rank " + std::to_string(r) + ": ";
    if (p.objective == Objective::MaxSpan) {
      offer(work, rank + "its work");
    } else {
      offer(jackson_bound(g, jobs), rank + "its work between the earliest start and the latest finish");
    }
    if (p.recompute == Recompute::All) {
      // Every (microbatch, stage) of the rank also recomputes, after its F (no earlier than the
      // rank's earliest head) and before its backward (no later than the least tail allows).
      Wide redo = 0, first = kNever, last = kNever;
      for (int32_t j : jobs) {
        const Action a = g.act(static_cast<size_t>(j));
        if (a.kind == ActionKind::F) redo += to_fixed(cost_of(p, R(a.mb.value, a.stage.value)), scale);
        first = std::min<Wide>(first, g.head[static_cast<size_t>(j)]);
        last = std::min<Wide>(last, g.tail[static_cast<size_t>(j)]);
      }
      offer(p.objective == Objective::MaxSpan ? work + redo : first + work + redo + last,
            rank + "its work and every recomputation (`recompute = all`)");
    }
    // Recomputation changes what a microbatch holds when (a checkpointed F keeps its input only):
    // the memory terms below assume every F keeps all it adds, so with recomputation none is
    // offered, and the bound is the uncapped one (a schedule's R's only add work and order).
    auto cap = p.recompute == Recompute::Off ? p.cap_of(RankId(r)) : std::nullopt;
    RankTerms t;
    if (cap) t = memory_terms(p, g, c, jobs, mem, chains, to_fixed(*cap, mscale));
    if (p.objective == Objective::Makespan)
      if (Wide lone = lone_forward_start(p, g, c, jobs, cap ? t.fill : Wide{-1}); lone > 0)
        offer(lone + work, rank + "its forwards before its first backward cannot join a unit");
    if (!cap) continue;
    Wide idle = t.disjoint ? t.idle_head + t.idle_tail : std::max(t.idle_head, t.idle_tail);
    Wide idle_span = t.disjoint ? t.idle_head_span + t.idle_tail : std::max(t.idle_head_span, t.idle_tail);
    bool makespan = p.objective == Objective::Makespan;
    offer(makespan ? t.earliest + t.work + idle : t.work + idle_span, rank + "fill and drain under the memory cap");
    if (t.throughput)
      offer(makespan ? t.earliest + t.throughput_span : t.throughput_span, rank + "memory throughput under the cap");
    OneAtATime& one = ones[static_cast<size_t>(r)];
    one = one_at_a_time(p, g, jobs, mem, chains, to_fixed(*cap, mscale));
    if (one.span > 0)
      offer(makespan ? one.first + one.span : one.span, rank + "the cap holds one microbatch at a time");
    if (makespan)
      if (Wide next = consecutive_microbatches(p, g, jobs, to_fixed(*cap, mscale)); next > 0)
        offer(next, rank + "a microbatch waits for room the one before it leaves");
    if (makespan)
      if (Wide windows = cap_windows(p, g, jobs, chains, to_fixed(*cap, mscale), units_save); windows > 0)
        offer(windows, rank + "the microbatches that fill the cap wait for their round trips");
  }
  if (p.objective == Objective::Makespan)
    if (Opening o = who_opens(p, g, ones); o.value > 0)
      offer(o.value, "ranks " + std::to_string(o.a) + " and " + std::to_string(o.b) +
                         ": one microbatch at a time, and which stay opens each");
  return best;
}

}  // namespace

LowerBound lower_bound(const Problem& p) { return compute(p, nullptr); }

std::vector<LowerBound> lower_bound_terms(const Problem& p) {
  std::vector<LowerBound> terms;
  compute(p, &terms);
  return terms;
}

}  // namespace schedc::ir
