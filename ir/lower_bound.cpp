#include "ir/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <span>
#include <unordered_map>

#include "ir/action.h"
#include "ir/dep_graph.h"
#include "ir/schedule.h"

namespace schedc::ir {
namespace {

// Sums over many actions can pass int64 (a path may hold 4e6 actions of up to 1e12 ticks; a
// memory integral multiplies that by memory values of up to 1e12 fixed-point units), so every
// term is summed in 128 bits and converted to double the way the simulator converts its ticks.
__extension__ typedef __int128 Wide;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

Wide floor_div(Wide a, Wide b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
Wide ceil_div(Wide a, Wide b) { return -floor_div(-a, b); }

// The dependency graph of a problem (ir::DepGraph, canonical: the split backward B then W unless
// the problem is fused; a mixed problem's BW maps onto its B and W nodes, docs/solver.md section
// 1) with the microbatch-order edges, and the bound's own durations in fixed-point ticks. Every
// node carries two, because an overlapped F&B unit makes its members share one interval: `dur`,
// the least time from the node's start to its outputs (chains: heads, tails, the critical path),
// and `share`, the least busy time it adds to its rank (per-rank work).
struct Dag {
  DepGraph graph;
  std::vector<int64_t> dur, share;
  std::vector<int64_t> head, tail;

  Action act(size_t v) const { return graph.action(static_cast<int32_t>(v)); }
  size_t size() const { return graph.size(); }
};

int32_t node_of(const Problem& p, int32_t mb, int32_t s, ActionKind k) { return DepGraph::canonical_node(p, k, mb, s); }

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

struct Costs {
  std::vector<int64_t> f, b, w, bw, fb;  // per stage; fb empty when FB is not declared
  // 1 when an undeclared unit's FB (the sum of its members' costs, rounded once) may round one
  // tick below the sum of the members' rounded costs: some cost is not a whole number of ticks.
  int64_t rounding = 0;
};

Costs stage_costs(const Problem& p, int64_t scale) {
  Costs c;
  const int32_t S = p.num_stages();
  for (int32_t s = 0; s < S; ++s) {
    auto z = static_cast<size_t>(s);
    c.f.push_back(to_fixed(cost_of(p, F(0, s)), scale));
    c.b.push_back(to_fixed(cost_of(p, B(0, s)), scale));
    c.w.push_back(to_fixed(cost_of(p, W(0, s)), scale));
    c.bw.push_back(to_fixed(cost_of(p, BW(0, s)), scale));
    if (p.cost.FB) c.fb.push_back(to_fixed(p.cost.FB->at(z), scale));
    for (double v : {p.cost.F.at(z), p.cost.B.at(z), p.cost.W.at(z)}) {
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
bool weights_in_order(const Problem& p, const Costs& c, const std::vector<RankUnits>& units) {
  if (p.backward != BackwardMode::Mixed) return p.backward == BackwardMode::Split;
  auto saves = [](const RankUnits& u) { return u.beta != kNever; };
  bool units_save = c.fb.empty() ? c.rounding != 0 : std::any_of(units.begin(), units.end(), saves);
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
    int32_t mb = d == 0 ? 0 : p.microbatches / 2;
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

// Memory values of a rank's stages in the verifier's fixed point.
struct StageMemory {
  int64_t f = 0, b = 0, w = 0;
};

struct RankTerms {
  Wide work = 0;              // sum of work shares
  int64_t earliest = kNever;  // least head
  Wide idle_head = 0;         // before the first backward, beyond what forwards can fill
  Wide idle_tail = 0;         // after the last forward, beyond what pending backwards can fill
  Wide idle_head_span = 0;    // the same measured from the rank's first action
  bool disjoint = false;      // the cap forces a backward before the last forward
  bool throughput = false;    // the memory-throughput term applies
  Wide throughput_span = 0;   // least time from the rank's first start to its last end by it
  Wide fill = -1;             // forward work that fits before the first backward; -1: no limit
};

// The memory terms of one rank under its cap: fill and drain (Zero Bubble appendix B,
// generalised) and the memory throughput (docs/solver.md section 1 derives both).
RankTerms memory_terms(const Problem& p, const Dag& g, const Costs& c, std::span<const int32_t> jobs,
                       const std::vector<StageMemory>& mem, const std::vector<int64_t>& chains, int64_t cap) {
  RankTerms t;
  const bool fused = p.backward == BackwardMode::Fused, split = p.backward == BackwardMode::Split;
  const int32_t S = p.num_stages();
  int64_t first_backward = kNever;
  std::vector<int64_t> f_costs;
  bool fill_bounded = true, drain_bounded = true, one_memory = true, flows = true;
  int64_t min_mem_f = kNever, min_chain = kNever, min_first = kNever, last_step = kNever;
  Wide fill = 0, drain_num = 0, drain_den = 1, integral = 0;
  auto more = [](Wide n1, Wide d1, Wide n2, Wide d2) { return n1 * d2 > n2 * d1; };  // n1/d1 > n2/d2
  for (int32_t i : jobs) {
    auto id = static_cast<size_t>(i);
    Action a = g.act(id);
    t.work += g.share[id];
    t.earliest = std::min(t.earliest, g.head[id]);
    if (a.kind != ActionKind::F) {
      if (a.kind != ActionKind::W) first_backward = std::min(first_backward, g.head[id]);
      if (a.kind == (split ? ActionKind::W : fused ? ActionKind::BW : ActionKind::B))
        last_step = std::min(last_step, g.dur[id]);
      continue;
    }
    auto z = a.stage.index();
    const StageMemory& sm = mem[z];
    int64_t f = c.f[z], b = c.b[z], w = c.w[z], bw = c.bw[z];
    if (!f_costs.empty() && sm.f != min_mem_f) one_memory = false;
    f_costs.push_back(f);
    min_mem_f = std::min(min_mem_f, sm.f);
    // Fill: forwards before the first backward run alone at their cost and all stay in memory.
    if (sm.f <= 0) fill_bounded = drain_bounded = false;
    else fill = std::max(fill, floor_div(Wide{cap} * f, sm.f));
    // Drain: after the last forward, the work left to in-flight microbatches is at most
    // (memory held) x (work per memory held); the held amounts must never be negative.
    bool held_ok = fused || (sm.f + sm.b >= 0 && sm.f + sm.b + sm.w >= 0 && (w == 0 || sm.f + sm.b > 0));
    if (!held_ok) drain_bounded = false;
    if (drain_bounded) {
      int64_t to_do = fused ? bw : split ? b + w : std::max(bw, b + w);
      if (more(to_do, sm.f, drain_num, drain_den)) drain_num = to_do, drain_den = sm.f;
      if (!fused && w > 0 && more(w, sm.f + sm.b, drain_num, drain_den)) drain_num = w, drain_den = sm.f + sm.b;
    }
    int64_t chain = chains[static_cast<size_t>(p.direction_of(a.mb) * S + a.stage.value)];
    min_chain = std::min(min_chain, chain);
    min_first = std::min(min_first, g.dur[id] + chain);
    // Throughput: memory F holds from F's start to its backward's start, F + B from B to W.
    if (sm.f < 0 || (!fused && (sm.f + sm.b < 0 || sm.f + sm.b + sm.w < 0))) flows = false;
    integral += Wide{sm.f} * (g.dur[id] + chain);
    if (split) {
      auto b_node = static_cast<size_t>(node_of(p, a.mb.value, a.stage.value, ActionKind::B));
      integral += Wide{sm.f + sm.b} * g.dur[b_node];
    }
  }
  if (f_costs.empty() || first_backward == kNever) return t;
  if (flows && cap > 0 && integral > 0 && last_step != kNever) {
    t.throughput = true;
    t.throughput_span = ceil_div(integral, cap) + last_step;
  }
  if (fill_bounded) {
    // One memory value (the usual case): only whole forwards fit, the dearest ones at most.
    if (one_memory) {
      auto k = static_cast<size_t>(cap / min_mem_f);
      std::sort(f_costs.rbegin(), f_costs.rend());
      Wide sum = 0;
      for (size_t i = 0; i < std::min(k, f_costs.size()); ++i) sum += f_costs[i];
      fill = std::min(fill, sum);
      t.disjoint = k < f_costs.size();
    }
    t.fill = fill;
    t.idle_head = std::max<Wide>(0, Wide{first_backward} - t.earliest - fill);
    t.idle_head_span = std::max<Wide>(0, Wide{min_first} - fill);
  }
  if (drain_bounded) {
    Wide pending = floor_div(std::max<Wide>(0, Wide{cap} - min_mem_f) * drain_num, drain_den);
    t.idle_tail = std::max<Wide>(0, Wide{min_chain} - pending);
  }
  return t;
}

// One microbatch at a time (docs/solver.md section 1, term 6): when the cap leaves no room for a
// forward beside what any other microbatch still holds on r (and no microbatch ever holds less
// than nothing, so the others only add to it), their stays on r cannot overlap. In a
// split problem a microbatch holds F from its forward's start and F + B from its B's start until
// its W starts; if any of those amounts plus any forward of r exceeds the cap, another forward of r
// must come after that W in r's order, so after it ends (a W is never in a unit): the stays
// [F.start, W.end) are disjoint, each at least d(F) + L + d(B) + d(W). Where only two forwards
// cannot coexist (or the backward is fused or mixed, whose BW may share a unit with the next
// forward), the stays end at the backward's start: d(F) + L, and the last backward still runs.
// Returns the least span from the first stay's start to the end (0 when the cap leaves room).
struct OneAtATime {
  Wide span = 0;
  int64_t first = kNever;  // least head of r's forwards
  bool to_w = false;       // the stays end at W's end (else at the backward's start)
  // What can open r's first stay: by the symmetry, the first microbatch of a direction on one of
  // its stages of r. Its forward's head, and the least length of that stay.
  struct First {
    int32_t direction = 0, stage = 0;
    int64_t head = 0;
    Wide stay = 0;
  };
  std::vector<First> firsts;
};

OneAtATime one_at_a_time(const Problem& p, const Dag& g, std::span<const int32_t> jobs,
                         const std::vector<StageMemory>& mem, const std::vector<int64_t>& chains, int64_t cap) {
  OneAtATime out;
  const bool split = p.backward == BackwardMode::Split;
  const int32_t S = p.num_stages();
  int64_t min_f = kNever, min_held = kNever;
  for (int32_t i : jobs) {
    Action a = g.act(static_cast<size_t>(i));
    if (a.kind != ActionKind::F) continue;
    const StageMemory& m = mem[a.stage.index()];
    // Every other (mb, s) of r must hold a non-negative amount at all times, finished ones too:
    // one that frees more than it took makes room for another forward.
    if (m.f < 0 || (p.backward != BackwardMode::Fused && (m.f + m.b < 0 || m.f + m.b + m.w < 0))) return out;
    min_f = std::min(min_f, m.f);
    min_held = std::min(min_held, split ? std::min(m.f, m.f + m.b) : m.f);
  }
  if (min_f == kNever || min_f <= 0) return out;
  const bool to_w = split && min_held > 0 && Wide{min_held} + min_f > cap;
  if (!to_w && Wide{min_f} + min_f <= cap) return out;
  out.to_w = to_w;
  int64_t last = kNever;  // the least time r still runs after its last stay ends
  for (int32_t i : jobs) {
    auto id = static_cast<size_t>(i);
    Action a = g.act(id);
    if (a.kind != ActionKind::F) continue;
    out.first = std::min(out.first, g.head[id]);
    const int32_t d = p.direction_of(a.mb);
    const bool opens = a.mb.value == (d == 0 ? 0 : p.microbatches / 2);
    const ActionKind bk = p.backward == BackwardMode::Fused ? ActionKind::BW : ActionKind::B;
    auto b = static_cast<size_t>(node_of(p, a.mb.value, a.stage.value, bk));
    Wide stay = Wide{g.dur[id]} + chains[static_cast<size_t>(p.direction_of(a.mb) * S + a.stage.value)];
    if (to_w) {
      auto w = static_cast<size_t>(node_of(p, a.mb.value, a.stage.value, ActionKind::W));
      stay += Wide{g.dur[b]} + g.dur[w];
      last = 0;
    } else {
      last = std::min(last, g.dur[b]);
    }
    out.span += stay;
    if (opens) out.firsts.push_back({d, a.stage.value, g.head[id], stay});
  }
  out.span += last == kNever ? 0 : last;
  return out;
}

// Who opens the stays (docs/solver.md section 1, term 9). Where ranks a and b each hold one
// microbatch at a time (term 6), every stay of a rank follows its first one, and term 6 starts that
// one at the least head of the rank's forwards. But the first microbatch X_a of a's first stay may
// pass through b on another (microbatch, stage) than b's own first stay X_b: that stay Y on b
// starts after b's first stay ended, and X_a's stay ends no earlier than the path from Y's forward
// back to it. So X_a's stay ends at least head(X_b) + stay(X_b) + path(Y, end of X_a's stay), and
// a's other stays follow. For each choice of the two first stays the bound is the largest of each
// rank's head + span and the two crossings; the least over the choices holds. Makespan only (the
// first stays are first microbatches by the symmetry). Returns 0 where no two ranks apply.
struct Opening {
  Wide value = 0;
  int32_t a = -1, b = -1;
};

Opening who_opens(const Problem& p, const Dag& g, const std::vector<OneAtATime>& ones) {
  Opening out;
  const int32_t S = p.num_stages(), D = p.num_directions();
  std::vector<int32_t> ranks;
  size_t work = 0;
  for (int32_t r = 0; r < p.ranks; ++r)
    if (ones[static_cast<size_t>(r)].span > 0 && !ones[static_cast<size_t>(r)].firsts.empty())
      ranks.push_back(r), work += ones[static_cast<size_t>(r)].firsts.size();
  // Pairs times choices times stages: a few million steps at most (4e6 at pp 256, vpp 4, two
  // directions); larger problems go without the term.
  if (ranks.size() < 2 || Wide{work} * work * static_cast<Wide>(S) / p.ranks > 40'000'000) return out;
  const ActionKind bk = p.backward == BackwardMode::Fused ? ActionKind::BW : ActionKind::B;
  // The first microbatch of each direction: its chain F_0 .. F_{S-1}, then its backwards from the
  // last stage, and the least time from the start of the chain's first node to each node's start
  // (chain durations and comm lags; every path within the microbatch runs along it).
  std::vector<std::vector<Wide>> along(static_cast<size_t>(D));
  std::vector<std::vector<int32_t>> chain(static_cast<size_t>(D));
  for (int32_t d = 0; d < D; ++d) {
    const int32_t mb = d == 0 ? 0 : p.microbatches / 2;
    auto& c = chain[static_cast<size_t>(d)];
    for (int32_t s = 0; s < S; ++s) c.push_back(node_of(p, mb, s, ActionKind::F));
    for (int32_t s = S - 1; s >= 0; --s) c.push_back(node_of(p, mb, s, bk));
    auto& t = along[static_cast<size_t>(d)];
    t.assign(c.size(), 0);
    for (size_t i = 1; i < c.size(); ++i)
      t[i] = t[i - 1] + g.dur[static_cast<size_t>(c[i - 1])] + g.graph.lag(c[i - 1], c[i]);
  }
  // The stages of each direction on each rank.
  std::vector<std::vector<int32_t>> stages_on(static_cast<size_t>(p.ranks * D));
  for (int32_t d = 0; d < D; ++d)
    for (int32_t s = 0; s < S; ++s) stages_on[static_cast<size_t>(p.rank_of(d, StageId(s)).value * D + d)].push_back(s);
  using First = OneAtATime::First;
  // The least end of a's first stay x given b's first stay y, plus a's other stays (0: no crossing).
  auto crossing = [&](int32_t a, const First& x, int32_t b, const First& y) -> Wide {
    const OneAtATime& oa = ones[static_cast<size_t>(a)];
    const auto dx = static_cast<size_t>(x.direction);
    const size_t back = static_cast<size_t>(2 * S - 1 - x.stage);  // x's backward on the chain
    Wide after = 0;                                                // from the backward's start to the stay's end
    if (oa.to_w) {
      const int32_t mb = x.direction == 0 ? 0 : p.microbatches / 2;
      after = Wide{g.dur[static_cast<size_t>(chain[dx][back])]} +
              g.dur[static_cast<size_t>(node_of(p, mb, x.stage, ActionKind::W))];
    }
    Wide path = -1;
    for (int32_t t : stages_on[static_cast<size_t>(b * D + x.direction)])
      if (x.direction != y.direction || t != y.stage)
        path = std::max(path, along[dx][back] - along[dx][static_cast<size_t>(t)] + after);
    if (path < 0) return 0;
    return Wide{y.head} + y.stay + path + (oa.span - x.stay);
  };
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t j = i + 1; j < ranks.size(); ++j) {
      const int32_t a = ranks[i], b = ranks[j];
      const OneAtATime &oa = ones[static_cast<size_t>(a)], &ob = ones[static_cast<size_t>(b)];
      Wide least = -1;
      for (const First& x : oa.firsts)
        for (const First& y : ob.firsts) {
          Wide v = std::max(
              {Wide{x.head} + oa.span, Wide{y.head} + ob.span, crossing(a, x, b, y), crossing(b, y, a, x)});
          least = least < 0 ? v : std::min(least, v);
        }
      if (least > out.value) out = {least, a, b};
    }
  return out;
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

// Consecutive microbatches under the cap (docs/solver.md section 1, term 8). Take two
// microbatches k and k + 1 of one direction, in order on every stage (symmetry), and rank r. Along
// r's order the pair of their started sets (A, B) moves from nothing to everything on r, one
// action (or a unit of one of each) at a time; with every other microbatch holding a non-negative
// amount, each pair of sets on the way holds at most the cap. For a forward Y of r, the sets A that
// can stand beside B when Y(k + 1) starts tell which of k's actions must have started by then: so
// Y(k + 1)'s step ends at least E_k + c after Y(k)'s (E_k), where c is the least over those A of a
// one-machine bound on what runs between them (k's actions reachable from Y(k), released at their
// path length from Y(k)'s end; k + 1's own earlier actions of r, released where their own sets A
// say; then Y itself). Chained over the direction's microbatches, between the first Y's head and
// the last one's tail. Split and fused problems (a mixed one may turn any BW into B;W: skipped).
// Makespan only: the symmetry may not keep a rank's span. Returns 0 where it does not apply.
Wide consecutive_microbatches(const Problem& p, const Dag& g, std::span<const int32_t> jobs, int64_t cap) {
  Wide out = 0;
  if (p.backward == BackwardMode::Mixed || cap < 0) return out;
  const bool fused = p.backward == BackwardMode::Fused;
  const int32_t S = p.num_stages();
  auto node = [&](int32_t mb, int32_t st, ActionKind k) { return static_cast<size_t>(node_of(p, mb, st, k)); };
  auto memory = [&](size_t v) { return g.graph.memory(static_cast<int32_t>(v)); };
  // Every (mb, s) of r holds a non-negative amount at all times, finished ones too.
  for (int32_t i : jobs) {
    Action a = g.act(static_cast<size_t>(i));
    if (a.kind != ActionKind::F) continue;
    int64_t f = memory(static_cast<size_t>(i));
    int64_t held = fused ? f + memory(node(a.mb.value, a.stage.value, ActionKind::BW))
                         : f + memory(node(a.mb.value, a.stage.value, ActionKind::B));
    int64_t left = fused ? held : held + memory(node(a.mb.value, a.stage.value, ActionKind::W));
    if (f < 0 || held < 0 || left < 0) return out;
  }
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  for (int32_t d = 0; d < p.num_directions(); ++d) {
    const int32_t mb0 = d == 0 ? 0 : p.microbatches / 2;
    const int32_t count = p.num_directions() == 1 ? p.microbatches : d == 0 ? p.microbatches / 2 : p.microbatches - mb0;
    if (count < 2) continue;
    // The actions of microbatch mb0 on r, as (stage, kind); the same indices name mb0 + 1's.
    std::vector<std::pair<int32_t, ActionKind>> life;
    for (int32_t i : jobs) {
      Action a = g.act(static_cast<size_t>(i));
      if (a.mb.value == mb0) life.push_back({a.stage.value, a.kind});
    }
    const size_t n = life.size();
    if (n == 0 || n > 16) continue;
    auto at = [&](int32_t mb, size_t i) { return node(mb, life[i].first, life[i].second); };
    // Longest paths within one microbatch from each action's end to each action's start (chain
    // durations and lags; kNone where there is no path), in its topological order: forwards by
    // stage, then backwards from the last stage, each followed by its W.
    std::vector<size_t> topo;
    for (int32_t st = 0; st < S; ++st) topo.push_back(node(mb0, st, ActionKind::F));
    for (int32_t st = S - 1; st >= 0; --st) {
      topo.push_back(node(mb0, st, fused ? ActionKind::BW : ActionKind::B));
      if (!fused) topo.push_back(node(mb0, st, ActionKind::W));
    }
    std::vector<std::vector<int64_t>> path(n, std::vector<int64_t>(n, kNone));
    {
      const auto base = static_cast<size_t>(node_of(p, mb0, 0, ActionKind::F));
      const size_t per_mb = topo.size();
      auto local = [&](size_t v) { return v - base; };  // canonical ids of one microbatch are contiguous
      std::vector<int64_t> dist(per_mb);
      for (size_t i = 0; i < n; ++i) {
        std::fill(dist.begin(), dist.end(), kNone);
        const size_t u = at(mb0, i);
        for (const DepGraph::Edge& e : g.graph.succs(static_cast<int32_t>(u)))
          if (g.act(static_cast<size_t>(e.node)).mb.value == mb0)
            dist[local(static_cast<size_t>(e.node))] = std::max(dist[local(static_cast<size_t>(e.node))], e.lag);
        for (size_t v : topo) {
          int64_t dv = dist[local(v)];
          if (dv == kNone) continue;
          for (const DepGraph::Edge& e : g.graph.succs(static_cast<int32_t>(v)))
            if (g.act(static_cast<size_t>(e.node)).mb.value == mb0)
              dist[local(static_cast<size_t>(e.node))] = std::max(dist[local(static_cast<size_t>(e.node))],
                                                                  dv + g.dur[v] + e.lag);
        }
        for (size_t j = 0; j < n; ++j) path[i][j] = dist[local(at(mb0, j))];
      }
    }
    std::vector<uint32_t> preds(n, 0);
    std::vector<int64_t> delta(n);
    for (size_t j = 0; j < n; ++j) {
      delta[j] = memory(at(mb0, j));
      for (size_t i = 0; i < n; ++i)
        if (path[i][j] != kNone) preds[j] |= uint32_t{1} << i;
    }
    // Where two microbatches' peaks (at most their positive deltas) fit side by side the cap
    // orders nothing: c would be Y's own step.
    Wide peak = 0;
    for (size_t i = 0; i < n; ++i) peak += std::max<int64_t>(0, delta[i]);
    if (2 * peak <= cap) continue;
    // The pairs of started sets along r's order: reachable from (nothing, nothing) within the cap
    // and able to reach (everything, everything).
    const uint32_t full = n == 32 ? ~uint32_t{0} : (uint32_t{1} << n) - 1;
    auto key = [&](uint32_t a, uint32_t b) { return uint64_t{a} << 32 | b; };
    std::vector<std::pair<uint32_t, uint32_t>> states{{0, 0}};
    std::vector<Wide> holds{0};
    std::unordered_map<uint64_t, size_t> index{{key(0, 0), 0}};
    struct Step {
      size_t from, to;
      int added_b;  // the index k + 1 started here, -1 when none
    };
    std::vector<Step> steps;
    auto kind = [&](size_t i) { return life[i].second; };
    auto may_add_a = [&](uint32_t a, size_t i) { return !(a >> i & 1) && (preds[i] & ~a) == 0; };
    // k + 1's action comes after k's of the same stage and kind (W's are not assumed in order).
    auto may_add_b = [&](uint32_t a, uint32_t b, size_t j) {
      return !(b >> j & 1) && (preds[j] & ~b) == 0 && (kind(j) == ActionKind::W || (a >> j & 1));
    };
    for (size_t q = 0; q < states.size(); ++q) {
      auto [a, b] = states[q];
      const Wide h = holds[q];
      auto go = [&](uint32_t a2, uint32_t b2, Wide h2, int added) {
        if (h2 > cap) return;
        auto [it, fresh] = index.emplace(key(a2, b2), states.size());
        if (fresh) states.push_back({a2, b2}), holds.push_back(h2);
        steps.push_back({q, it->second, added});
      };
      for (size_t i = 0; i < n; ++i)
        if (may_add_a(a, i)) go(a | uint32_t{1} << i, b, h + delta[i], -1);
      for (size_t j = 0; j < n; ++j)
        if (may_add_b(a, b, j)) go(a, b | uint32_t{1} << j, h + delta[j], static_cast<int>(j));
      // A unit: a forward of one microbatch with a backward (B or BW) of the other.
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
          bool fb = (kind(i) == ActionKind::F && is_backward(kind(j))) ||
                    (is_backward(kind(i)) && kind(j) == ActionKind::F);
          if (fb && may_add_a(a, i) && may_add_b(a, b, j))
            go(a | uint32_t{1} << i, b | uint32_t{1} << j, h + delta[i] + delta[j], static_cast<int>(j));
        }
      if (states.size() > 200'000) break;  // never near this: at most 35 sets a side at vpp 4
    }
    if (states.size() > 200'000) continue;
    auto last = index.find(key(full, full));
    if (last == index.end()) continue;  // no pair passes r under the cap: leave it to the others
    std::vector<char> live(states.size(), 0);
    live[last->second] = 1;
    for (bool changed = true; changed;) {
      changed = false;
      for (const Step& st : steps)
        if (live[st.to] && !live[st.from]) live[st.from] = 1, changed = true;
    }
    for (size_t y = 0; y < n; ++y) {
      if (kind(y) != ActionKind::F) continue;
      // Releases relative to E_k = Y(k)'s end: k's actions reachable from Y(k) at their path
      // length. An action j of k + 1 started no earlier than any of k's started before it, and
      // after Y(k)'s step when Y(k) had started (a forward never shares a unit with a forward).
      auto rel_a = [&](uint32_t a, size_t j) {  // kNone when nothing bounds it
        int64_t r = (a >> y & 1) && kind(j) == ActionKind::F ? 0 : kNone;
        for (size_t i = 0; i < n; ++i)
          if ((a >> i & 1) && path[y][i] != kNone) r = std::max(r, path[y][i]);
        return r;
      };
      // k + 1's earlier actions: released at the least, over the steps that start them, of the
      // latest release among k's actions started by then.
      std::vector<int64_t> rel_b(n, std::numeric_limits<int64_t>::max());
      for (const Step& st : steps)
        if (st.added_b >= 0 && live[st.from] && live[st.to]) {
          auto j = static_cast<size_t>(st.added_b);
          rel_b[j] = std::min(rel_b[j], rel_a(states[st.to].first, j));
        }
      const int64_t y_share = g.share[at(mb0 + 1, y)], y_dur = g.dur[at(mb0 + 1, y)];
      Wide c = -1;
      for (const Step& st : steps) {
        if (st.added_b != static_cast<int>(y) || !live[st.from] || !live[st.to]) continue;
        auto [a, b] = states[st.to];
        std::vector<std::pair<int64_t, int64_t>> work;  // (release, share)
        for (size_t i = 0; i < n; ++i)
          if ((a >> i & 1) && path[y][i] != kNone) work.push_back({path[y][i], g.share[at(mb0, i)]});
        for (size_t j = 0; j < n; ++j)
          if (j != y && (b >> j & 1) && rel_b[j] != kNone && rel_b[j] != std::numeric_limits<int64_t>::max())
            work.push_back({rel_b[j], g.share[at(mb0 + 1, j)]});
        std::sort(work.rbegin(), work.rend());
        Wide best = 0, sum = 0;
        for (auto [release, share] : work) {
          sum += share;
          best = std::max(best, Wide{release} + sum);
        }
        Wide here = std::max<Wide>(best + y_share, y_dur);
        c = c < 0 ? here : std::min(c, here);
      }
      if (c <= 0) continue;
      const size_t y_last = at(mb0 + count - 1, y);
      Wide end = 0;  // of the last Y's step
      for (int32_t j = 0; j < count; ++j)
        end = std::max(end, Wide{g.head[at(mb0 + j, y)]} + y_dur + Wide{count - 1 - j} * c);
      out = std::max(out, end + g.tail[y_last]);
    }
  }
  return out;
}

}  // namespace

LowerBound lower_bound(const Problem& p) {
  const int64_t scale = time_scale(p), mscale = memory_scale(p);
  const Costs c = stage_costs(p, scale);
  std::vector<RankUnits> units(static_cast<size_t>(p.ranks));
  Dag g = build_dag(p, c, units);
  const std::vector<int64_t> chains = return_chains(p, g);
  LowerBound best;
  auto offer = [&](Wide ticks, std::string why) {
    double v = static_cast<double>(ticks) / static_cast<double>(scale);
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
    auto cap = p.cap_of(RankId(r));
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
  }
  if (p.objective == Objective::Makespan)
    if (Opening o = who_opens(p, g, ones); o.value > 0)
      offer(o.value, "ranks " + std::to_string(o.a) + " and " + std::to_string(o.b) +
                         ": one microbatch at a time, and which stay opens each");
  return best;
}

}  // namespace schedc::ir
