#include "ir/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "ir/action.h"
#include "ir/schedule.h"
#include "support/numbers.h"

namespace schedc::ir {
namespace {

// The dependency DAG of a problem in fixed-point ticks, with the split backward (B then W) unless
// the problem is fused. A mixed problem's BW is never shorter on any chain than its B, and turning
// it into B;W keeps the timeline, so the split DAG bounds mixed schedules too.
struct Dag {
  std::vector<Action> act;
  std::vector<int64_t> dur;
  std::vector<int32_t> rank;
  std::vector<std::vector<std::pair<int32_t, int64_t>>> succ;  // (to, lag)
  std::vector<int64_t> head, tail;
};

int32_t node_of(const Problem& p, bool fused, int32_t mb, int32_t s, ActionKind k) {
  int32_t per = fused ? 2 : 3;
  int32_t slot = k == ActionKind::F ? 0 : (k == ActionKind::W ? 2 : 1);
  return (mb * p.num_stages() + s) * per + slot;
}

Dag build_dag(const Problem& p, int64_t scale, bool symmetry, double overlap_cap) {
  const bool fused = p.backward == BackwardMode::Fused;
  const int32_t S = p.num_stages(), m = p.microbatches, per = fused ? 2 : 3;
  const int64_t comm = to_fixed(p.cost.comm, scale);
  Dag g;
  size_t n = static_cast<size_t>(m) * static_cast<size_t>(S) * static_cast<size_t>(per);
  g.act.resize(n);
  g.dur.resize(n);
  g.rank.resize(n);
  g.succ.resize(n);
  for (int32_t mb = 0; mb < m; ++mb)
    for (int32_t s = 0; s < S; ++s)
      for (ActionKind k : {ActionKind::F, fused ? ActionKind::BW : ActionKind::B, ActionKind::W}) {
        if (fused && k == ActionKind::W) continue;
        auto id = static_cast<size_t>(node_of(p, fused, mb, s, k));
        Action a{k, MbId(mb), StageId(s)};
        g.act[id] = a;
        // Durations in the simulator's ticks; an overlapped unit may make a member count for less.
        g.dur[id] = to_fixed(cost_of(p, a), scale);
        if (k != ActionKind::W && std::isfinite(overlap_cap))
          g.dur[id] = std::min(g.dur[id], static_cast<int64_t>(std::floor(overlap_cap * static_cast<double>(scale))));
        g.rank[id] = rank_of(p, a).value;
      }
  auto edge = [&](int32_t from, int32_t to) {
    int64_t lag = g.rank[static_cast<size_t>(from)] == g.rank[static_cast<size_t>(to)] ? 0 : comm;
    g.succ[static_cast<size_t>(from)].push_back({to, lag});
  };
  ActionKind bk = fused ? ActionKind::BW : ActionKind::B;
  for (int32_t mb = 0; mb < m; ++mb)
    for (int32_t s = 0; s < S; ++s) {
      int32_t f = node_of(p, fused, mb, s, ActionKind::F), b = node_of(p, fused, mb, s, bk);
      if (s + 1 < S) {
        edge(f, node_of(p, fused, mb, s + 1, ActionKind::F));
        edge(node_of(p, fused, mb, s + 1, bk), b);
      }
      edge(f, b);
      if (!fused) edge(b, node_of(p, fused, mb, s, ActionKind::W));
    }
  // Microbatches of one direction are interchangeable: some optimal schedule runs them in order on
  // every stage (docs/solver.md), so these edges keep every bound below the optimum.
  if (symmetry)
    for (int32_t mb = 0; mb + 1 < m; ++mb) {
      if (p.direction_of(MbId(mb)) != p.direction_of(MbId(mb + 1))) continue;
      for (int32_t s = 0; s < S; ++s)
        for (ActionKind k : {ActionKind::F, bk, ActionKind::W}) {
          if (fused && k == ActionKind::W) continue;
          g.succ[static_cast<size_t>(node_of(p, fused, mb, s, k))].push_back({node_of(p, fused, mb + 1, s, k), 0});
        }
    }
  // B(mb, s+1) -> B(mb, s) runs against the id order: use an explicit topological order.
  std::vector<int32_t> indeg(n, 0), order;
  for (const auto& out : g.succ)
    for (auto [to, lag] : out) ++indeg[static_cast<size_t>(to)];
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) order.push_back(static_cast<int32_t>(i));
  for (size_t k = 0; k < order.size(); ++k)
    for (auto [to, lag] : g.succ[static_cast<size_t>(order[k])])
      if (--indeg[static_cast<size_t>(to)] == 0) order.push_back(to);
  g.head.assign(n, 0);
  g.tail.assign(n, 0);
  for (int32_t a : order)
    for (auto [to, lag] : g.succ[static_cast<size_t>(a)])
      g.head[static_cast<size_t>(to)] = std::max(g.head[static_cast<size_t>(to)], g.head[static_cast<size_t>(a)] + g.dur[static_cast<size_t>(a)] + lag);
  for (size_t k = order.size(); k-- > 0;) {
    auto a = static_cast<size_t>(order[k]);
    for (auto [to, lag] : g.succ[a]) g.tail[a] = std::max(g.tail[a], lag + g.dur[static_cast<size_t>(to)] + g.tail[static_cast<size_t>(to)]);
  }
  return g;
}

// Jackson's preemptive schedule: the optimal preemptive one-machine makespan with release times
// (heads) and delivery times (tails), a lower bound on the non-preemptive one.
int64_t jackson_bound(const Dag& g, const std::vector<int32_t>& jobs) {
  std::vector<int32_t> by_head = jobs;
  std::sort(by_head.begin(), by_head.end(), [&](int32_t a, int32_t b) {
    return g.head[static_cast<size_t>(a)] < g.head[static_cast<size_t>(b)];
  });
  std::priority_queue<std::pair<int64_t, int32_t>> ready;  // (tail, job)
  std::vector<int64_t> left(g.dur.size(), 0);
  int64_t t = 0, best = 0;
  size_t next = 0;
  while (next < by_head.size() || !ready.empty()) {
    if (ready.empty()) t = std::max(t, g.head[static_cast<size_t>(by_head[next])]);
    while (next < by_head.size() && g.head[static_cast<size_t>(by_head[next])] <= t) {
      auto j = static_cast<size_t>(by_head[next++]);
      left[j] = g.dur[j];
      ready.push({g.tail[j], static_cast<int32_t>(j)});
    }
    auto [q, j] = ready.top();
    int64_t release = next < by_head.size() ? g.head[static_cast<size_t>(by_head[next])] : std::numeric_limits<int64_t>::max();
    int64_t run = std::min(left[static_cast<size_t>(j)], release - t);
    t += run;
    left[static_cast<size_t>(j)] -= run;
    if (left[static_cast<size_t>(j)] == 0) {
      ready.pop();
      best = std::max(best, t + q);
    }
  }
  return best;
}

struct RankTerms {
  int64_t work = 0;
  int64_t earliest = std::numeric_limits<int64_t>::max();
  int64_t idle_head = 0;       // before the first backward, beyond what forwards can fill
  int64_t idle_tail = 0;       // after the last forward, beyond what pending backwards can fill
  int64_t idle_head_span = 0;  // the same measured from the rank's first action
  bool disjoint = false;       // the cap forces a backward before the last forward
};

// The fill/drain terms of one rank under its memory cap (Zero Bubble appendix B, generalised).
RankTerms memory_terms(const Problem& p, const Dag& g, int32_t r, double cap, int64_t scale) {
  RankTerms t;
  const bool fused = p.backward == BackwardMode::Fused;
  const int64_t comm = to_fixed(p.cost.comm, scale);
  int64_t first_backward = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> f_costs;
  double min_mem_f = std::numeric_limits<double>::infinity(), fill_ratio = 0, drain_ratio = 0;
  bool fill_bounded = true, drain_bounded = true;
  int64_t min_chain = std::numeric_limits<int64_t>::max();
  int64_t min_first = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < g.act.size(); ++i) {
    if (g.rank[i] != r) continue;
    Action a = g.act[i];
    t.work += g.dur[i];
    t.earliest = std::min(t.earliest, g.head[i]);
    if (a.kind != ActionKind::F) {
      if (a.kind != ActionKind::W) first_backward = std::min(first_backward, g.head[i]);
      continue;
    }
    size_t s = a.stage.index();
    double mf = p.memory.F.at(s), mb = fused ? -mf : p.memory.B.at(s);
    f_costs.push_back(g.dur[i]);
    min_mem_f = std::min(min_mem_f, mf);
    if (mf <= 0) fill_bounded = drain_bounded = false;
    else fill_ratio = std::max(fill_ratio, static_cast<double>(g.dur[i]) / mf);
    int64_t d_b = to_fixed(cost_of(p, Action{fused ? ActionKind::BW : ActionKind::B, a.mb, a.stage}), scale);
    int64_t d_w = fused ? 0 : to_fixed(p.cost.W.at(s), scale);
    if (mf > 0) drain_ratio = std::max(drain_ratio, static_cast<double>(d_b + d_w) / mf);
    if (!fused && d_w > 0) {
      if (mf + mb <= 0) drain_bounded = false;
      else drain_ratio = std::max(drain_ratio, static_cast<double>(d_w) / (mf + mb));
    }
    // Chain from the end of F(mb, s) to the start of its own backward: the rest of the forward
    // pass and the backward pass back to s, with comm on every rank change.
    int64_t chain = 0;
    for (int32_t u = a.stage.value + 1; u < p.num_stages(); ++u) {
      Action fu{ActionKind::F, a.mb, StageId(u)}, bu{fused ? ActionKind::BW : ActionKind::B, a.mb, StageId(u)};
      chain += to_fixed(cost_of(p, fu), scale) + to_fixed(cost_of(p, bu), scale);
      if (rank_of(p, fu) != rank_of(p, Action{ActionKind::F, a.mb, StageId(u - 1)})) chain += 2 * comm;
    }
    min_chain = std::min(min_chain, chain);
    min_first = std::min(min_first, g.dur[i] + chain);
  }
  if (f_costs.empty() || first_backward == std::numeric_limits<int64_t>::max()) return t;
  // Forward work that fits under the cap before any backward frees memory.
  double fill = std::numeric_limits<double>::infinity();
  if (fill_bounded) {
    fill = cap * fill_ratio;
    // One stage type (the usual case): only whole forwards fit.
    if (min_mem_f > 0 && p.memory.F.is_uniform()) {
      auto k = static_cast<size_t>(std::floor(cap / min_mem_f + 1e-9));
      std::sort(f_costs.rbegin(), f_costs.rend());
      double sum = 0;
      for (size_t i = 0; i < std::min(k, f_costs.size()); ++i) sum += static_cast<double>(f_costs[i]);
      fill = std::min(fill, sum);
      t.disjoint = k < f_costs.size();
    }
  }
  if (std::isfinite(fill)) {
    t.idle_head = std::max<int64_t>(0, first_backward - t.earliest - static_cast<int64_t>(std::floor(fill)));
    t.idle_head_span = std::max<int64_t>(0, min_first - static_cast<int64_t>(std::floor(fill)));
  }
  if (drain_bounded && min_mem_f > 0) {
    double pending = std::max(0.0, cap - min_mem_f) * drain_ratio;
    t.idle_tail = std::max<int64_t>(0, min_chain - static_cast<int64_t>(std::floor(pending + 1e-9)));
  }
  return t;
}

}  // namespace

LowerBound lower_bound(const Problem& p) {
  const int64_t scale = time_scale(p);
  // An overlapped F&B unit lasting FB can make its members count for less than their cost.
  double fb_min = std::numeric_limits<double>::infinity();
  if (p.cost.FB) {
    for (int32_t s = 0; s < p.num_stages(); ++s) fb_min = std::min(fb_min, p.cost.FB->at(static_cast<size_t>(s)));
  }
  bool overlap_saves = false;
  if (p.cost.FB)
    for (int32_t s = 0; s < p.num_stages(); ++s)
      if (p.cost.FB->at(static_cast<size_t>(s)) < p.cost.F.at(static_cast<size_t>(s)) + p.cost.B.max()) overlap_saves = true;
  // A unit of two actions lasts FB, so each member counts for at least FB / 2 (valid whatever the
  // pairing; weak, but only problems that declare a cheaper FB pay for it).
  Dag g = build_dag(p, scale, /*symmetry=*/true, overlap_saves ? fb_min / 2 : std::numeric_limits<double>::infinity());
  LowerBound best;
  auto offer = [&](int64_t ticks, std::string why) {
    double v = static_cast<double>(ticks) / static_cast<double>(scale);
    if (v > best.value) best = {v, std::move(why)};
  };

  std::vector<std::vector<int32_t>> by_rank(static_cast<size_t>(p.ranks));
  for (size_t i = 0; i < g.act.size(); ++i) by_rank[static_cast<size_t>(g.rank[i])].push_back(static_cast<int32_t>(i));

  if (p.objective == Objective::Makespan) {
    int64_t cp = 0;
    for (size_t i = 0; i < g.act.size(); ++i) cp = std::max(cp, g.head[i] + g.dur[i] + g.tail[i]);
    offer(cp, "the longest dependency chain");
  }
  for (int32_t r = 0; r < p.ranks; ++r) {
    const auto& jobs = by_rank[static_cast<size_t>(r)];
    if (jobs.empty()) continue;
    int64_t work = 0;
    for (int32_t j : jobs) work += g.dur[static_cast<size_t>(j)];
    std::string rank = "rank " + std::to_string(r) + ": ";
    if (p.objective == Objective::MaxSpan) {
      offer(work, rank + "its work");
    } else {
      offer(jackson_bound(g, jobs), rank + "its work between the earliest start and the latest finish");
    }
    auto cap = p.cap_of(RankId(r));
    if (!cap || overlap_saves) continue;
    RankTerms t = memory_terms(p, g, r, *cap, scale);
    int64_t idle = t.disjoint ? t.idle_head + t.idle_tail : std::max(t.idle_head, t.idle_tail);
    int64_t idle_span = t.disjoint ? t.idle_head_span + t.idle_tail : std::max(t.idle_head_span, t.idle_tail);
    if (p.objective == Objective::Makespan)
      offer(t.earliest + t.work + idle, rank + "fill and drain under the memory cap");
    else
      offer(t.work + idle_span, rank + "fill and drain under the memory cap");
  }
  return best;
}

}  // namespace schedc::ir
