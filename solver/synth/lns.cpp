#include "solver/synth/lns.h"

#include <algorithm>
#include <limits>

#include "ir/verify.h"
#include "solver/synth/budget.h"
#include "solver/synth/instance.h"

namespace schedc::solver {
namespace {

enum class Zone : char { Pre, Free, Near, Far };

struct Slot {
  int32_t rank;
  int32_t index;
};

}  // namespace

std::optional<ir::Schedule> improve_window(const ir::Schedule& inc, const ir::Timeline& tl, int64_t t0, int64_t t1,
                                           int64_t target, int64_t grid, z3::context& ctx,
                                           const std::function<z3::params()>& limits, int64_t max_literals,
                                           LnsStats& stats) {
  const ir::Problem& p = inc.problem;
  const size_t R = inc.ranks.size();
  const int64_t delta = t1 - t0;  // the fixed-order part after the window that the model also times
  const int64_t comm = ir::to_fixed(p.cost.comm, tl.scale);
  const int64_t mscale = ir::memory_scale(p);
  ++stats.windows;
  size_t actions = 0;
  for (const auto& order : inc.ranks) actions += order.size();
  stats.rlimit += rate::kZ3UnitsPerWindowAction * actions;
  ir::ScheduleIndex index(inc);

  // Zones along each rank (ASAP starts never decrease along an order, so zones are contiguous).
  std::vector<std::vector<Zone>> zone(R);
  std::vector<std::vector<int32_t>> node(R);
  std::vector<Slot> slots;
  for (size_t r = 0; r < R; ++r) {
    zone[r].resize(inc.ranks[r].size());
    node[r].assign(inc.ranks[r].size(), -1);
    for (size_t i = 0; i < inc.ranks[r].size(); ++i) {
      int64_t s = tl.start[r][i];
      Zone z = s < t0 ? Zone::Pre : s < t1 ? Zone::Free : s < t1 + delta ? Zone::Near : Zone::Far;
      zone[r][i] = z;
      if (z == Zone::Free || z == Zone::Near) {
        node[r][i] = static_cast<int32_t>(slots.size());
        slots.push_back({static_cast<int32_t>(r), static_cast<int32_t>(i)});
      }
    }
  }
  bool any_free = false;
  for (size_t r = 0; r < R && !any_free; ++r)
    any_free = std::find(zone[r].begin(), zone[r].end(), Zone::Free) != zone[r].end();
  if (!any_free) return std::nullopt;
  auto pos = [&](ir::Action a) { return index.find(a); };
  auto dur_of = [&](size_t r, size_t i) { return tl.end[r][i] - tl.start[r][i]; };

  // Tails of the far part with its order fixed: longest path (ticks) from each far action's start
  // to the end, over dependencies and rank order (Kahn's algorithm on the far subgraph).
  std::vector<std::vector<int64_t>> far_tail(R);
  std::vector<std::vector<std::vector<std::pair<Slot, int64_t>>>> far_succ(R);  // (successor, lag)
  std::vector<std::vector<int32_t>> far_indeg(R);
  for (size_t r = 0; r < R; ++r) {
    far_tail[r].assign(inc.ranks[r].size(), 0);
    far_succ[r].resize(inc.ranks[r].size());
    far_indeg[r].assign(inc.ranks[r].size(), 0);
  }
  auto is_far = [&](ir::ScheduleIndex::Pos q) {
    return zone[static_cast<size_t>(q.rank)][static_cast<size_t>(q.index)] == Zone::Far;
  };
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < inc.ranks[r].size(); ++i) {
      if (zone[r][i] != Zone::Far) continue;
      ir::Action a = inc.ranks[r][i];
      for (ir::Action d : ir::dependencies(p, a, index)) {
        auto q = pos(d);
        if (!is_far(q)) continue;
        int64_t lag = ir::rank_of(p, d) == ir::rank_of(p, a) ? 0 : comm;
        far_succ[static_cast<size_t>(q.rank)][static_cast<size_t>(q.index)].push_back({{int32_t(r), int32_t(i)}, lag});
        ++far_indeg[r][i];
      }
      if (i > 0 && zone[r][i - 1] == Zone::Far) {
        far_succ[r][i - 1].push_back({{int32_t(r), int32_t(i)}, 0});
        ++far_indeg[r][i];
      }
    }
  std::vector<Slot> topo;
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < inc.ranks[r].size(); ++i)
      if (zone[r][i] == Zone::Far && far_indeg[r][i] == 0) topo.push_back({int32_t(r), int32_t(i)});
  for (size_t k = 0; k < topo.size(); ++k) {
    Slot x = topo[k];
    for (auto [y, lag] : far_succ[static_cast<size_t>(x.rank)][static_cast<size_t>(x.index)])
      if (--far_indeg[static_cast<size_t>(y.rank)][static_cast<size_t>(y.index)] == 0) topo.push_back(y);
  }
  for (size_t k = topo.size(); k-- > 0;) {
    Slot x = topo[k];
    int64_t best = 0;
    for (auto [y, lag] : far_succ[static_cast<size_t>(x.rank)][static_cast<size_t>(x.index)])
      best = std::max(best, lag + dur_of(static_cast<size_t>(y.rank), static_cast<size_t>(y.index)) +
                                far_tail[static_cast<size_t>(y.rank)][static_cast<size_t>(y.index)]);
    far_tail[static_cast<size_t>(x.rank)][static_cast<size_t>(x.index)] = best;
  }

  // Far actions the window cannot reach keep their times; if one of them already ends at or after
  // the target, no reordering of this window helps.
  std::vector<std::vector<char>> reached(R);
  for (size_t r = 0; r < R; ++r) reached[r].assign(inc.ranks[r].size(), 0);
  std::vector<Slot> stack;
  auto reach_from_node = [&](size_t r, size_t i) {
    ir::Action a = inc.ranks[r][i];
    // Dependents of `a` and the next action on the rank.
    auto mark = [&](ir::ScheduleIndex::Pos q) {
      if (!q.found() || !is_far(q) || reached[static_cast<size_t>(q.rank)][static_cast<size_t>(q.index)]) return;
      reached[static_cast<size_t>(q.rank)][static_cast<size_t>(q.index)] = 1;
      stack.push_back({q.rank, q.index});
    };
    for (int32_t ds = -1; ds <= 1; ++ds) {
      int32_t st = a.stage.value + ds;
      if (st < 0 || st >= p.num_stages()) continue;
      for (ir::ActionKind k : {ir::ActionKind::F, ir::ActionKind::B, ir::ActionKind::W, ir::ActionKind::BW}) {
        ir::Action b{k, a.mb, ir::StageId(st)};
        auto q = pos(b);
        if (!q.found()) continue;
        auto deps = ir::dependencies(p, b, index);
        if (std::find(deps.begin(), deps.end(), a) != deps.end()) mark(q);
      }
    }
    if (i + 1 < inc.ranks[r].size()) mark({int32_t(r), int32_t(i + 1)});
  };
  for (Slot s : slots) reach_from_node(static_cast<size_t>(s.rank), static_cast<size_t>(s.index));
  while (!stack.empty()) {
    Slot x = stack.back();
    stack.pop_back();
    for (auto [y, lag] : far_succ[static_cast<size_t>(x.rank)][static_cast<size_t>(x.index)])
      if (!reached[static_cast<size_t>(y.rank)][static_cast<size_t>(y.index)]) {
        reached[static_cast<size_t>(y.rank)][static_cast<size_t>(y.index)] = 1;
        stack.push_back(y);
      }
  }
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < inc.ranks[r].size(); ++i)
      if ((zone[r][i] == Zone::Far && !reached[r][i]) || zone[r][i] == Zone::Pre)
        if (tl.end[r][i] > target) return std::nullopt;

  // The sub-instance: free and near actions, times in grid steps from `origin`.
  std::vector<int64_t> pre_end(R, 0), pre_mem(R, 0);
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < inc.ranks[r].size(); ++i)
      if (zone[r][i] == Zone::Pre) {
        pre_end[r] = std::max(pre_end[r], tl.end[r][i]);
        pre_mem[r] += ir::to_fixed(ir::memory_delta(p, inc.ranks[r][i]), mscale);
      }
  const int64_t origin = std::max<int64_t>(0, (t0 - 4 * delta) / grid * grid);
  auto steps = [&](int64_t ticks) {
    return static_cast<int32_t>((std::max<int64_t>(0, ticks - origin) + grid - 1) / grid);
  };
  auto dur_steps = [&](int64_t ticks) { return std::max<int32_t>(1, static_cast<int32_t>((ticks + grid / 2) / grid)); };
  Instance sub;
  sub.problem = &p;
  sub.time_scale = tl.scale;
  sub.memory_scale = mscale;
  sub.ticks_per_step = grid;
  const size_t n = slots.size();
  sub.action.resize(n);
  sub.rank.resize(n);
  sub.dur.resize(n);
  sub.mem.resize(n);
  sub.succ.assign(n, {});
  sub.pred.assign(n, {});
  sub.on_rank.assign(R, {});
  sub.release.assign(n, 0);
  sub.delivery.assign(n, 0);
  sub.cap.assign(R, -1);
  for (size_t r = 0; r < R; ++r)
    if (auto c = p.cap_of(ir::RankId(static_cast<int32_t>(r)))) sub.cap[r] = ir::to_fixed(*c, mscale) - pre_mem[r];
  auto add_edge = [&](int32_t from, int32_t to, int32_t lag) {
    sub.succ[static_cast<size_t>(from)].push_back({to, lag});
    sub.pred[static_cast<size_t>(to)].push_back({from, lag});
  };
  const int32_t comm_steps = static_cast<int32_t>((comm + grid / 2) / grid);
  for (size_t k = 0; k < n; ++k) {
    auto r = static_cast<size_t>(slots[k].rank), i = static_cast<size_t>(slots[k].index);
    ir::Action a = inc.ranks[r][i];
    sub.action[k] = a;
    sub.rank[k] = slots[k].rank;
    sub.dur[k] = dur_steps(dur_of(r, i));
    sub.mem[k] = ir::to_fixed(ir::memory_delta(p, a), mscale);
    sub.on_rank[r].push_back(static_cast<int32_t>(k));
    int64_t release = pre_end[r];
    for (ir::Action d : ir::dependencies(p, a, index)) {
      auto q = pos(d);
      bool cross = ir::rank_of(p, d) != ir::rank_of(p, a);
      int32_t from = node[static_cast<size_t>(q.rank)][static_cast<size_t>(q.index)];
      if (from >= 0) add_edge(from, static_cast<int32_t>(k), cross ? comm_steps : 0);
      else
        release = std::max(release,
                           tl.end[static_cast<size_t>(q.rank)][static_cast<size_t>(q.index)] + (cross ? comm : 0));
    }
    sub.release[k] = steps(release);
  }
  // Rank order: near actions keep theirs and come after every free action of the rank; the far
  // part follows through delivery times.
  for (size_t r = 0; r < R; ++r) {
    int32_t first_near = -1, prev_near = -1, last = -1;
    std::vector<int32_t> free_nodes;
    for (size_t i = 0; i < inc.ranks[r].size(); ++i) {
      int32_t k = node[r][i];
      if (k < 0) continue;
      if (zone[r][i] == Zone::Free) free_nodes.push_back(k);
      if (zone[r][i] == Zone::Near) {
        if (first_near < 0) first_near = k;
        if (prev_near >= 0) add_edge(prev_near, k, 0);
        prev_near = k;
      }
      last = k;
    }
    if (first_near >= 0)
      for (int32_t f : free_nodes) add_edge(f, first_near, 0);
    // The first far action of the rank follows the rank's last node (or every free one).
    for (size_t i = 0; i < inc.ranks[r].size(); ++i) {
      if (zone[r][i] != Zone::Far) continue;
      int64_t d = dur_of(r, i) + far_tail[r][i];
      auto put = [&](int32_t k) {
        sub.delivery[static_cast<size_t>(k)] = std::max(sub.delivery[static_cast<size_t>(k)],
                                                        static_cast<int32_t>((d + grid - 1) / grid));
      };
      if (first_near >= 0) put(last);
      else
        for (int32_t f : free_nodes) put(f);
      break;
    }
  }
  // Far dependents of window actions.
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < inc.ranks[r].size(); ++i) {
      if (zone[r][i] != Zone::Far) continue;
      ir::Action a = inc.ranks[r][i];
      for (ir::Action d : ir::dependencies(p, a, index)) {
        auto q = pos(d);
        int32_t k = node[static_cast<size_t>(q.rank)][static_cast<size_t>(q.index)];
        if (k < 0) continue;
        int64_t lag = ir::rank_of(p, d) == ir::rank_of(p, a) ? 0 : comm;
        int64_t need = lag + dur_of(r, i) + far_tail[r][i];
        sub.delivery[static_cast<size_t>(k)] = std::max(sub.delivery[static_cast<size_t>(k)],
                                                        static_cast<int32_t>((need + grid - 1) / grid));
      }
    }
  const int32_t horizon = static_cast<int32_t>((target - origin) / grid);
  // A neighbourhood, not the whole problem: no action of the model moves later than a window's
  // width past its current start (the far part keeps the rest of the slack).
  for (size_t k = 0; k < n; ++k) {
    auto r = static_cast<size_t>(slots[k].rank), i = static_cast<size_t>(slots[k].index);
    int32_t latest = steps(tl.start[r][i] + delta);
    sub.delivery[k] = std::max(sub.delivery[k], horizon - latest - sub.dur[k]);
  }
  if (!compute_heads_tails(sub)) return std::nullopt;
  normalize_memory(sub);
  if (!sub.memory_fits_pb) return std::nullopt;
  int64_t literals = 0;
  for (size_t k = 0; k < n; ++k) literals += 2 * std::max(0, horizon - sub.dur[k] - sub.tail[k] - sub.head[k]);
  if (literals > max_literals) return std::nullopt;
  TimeIndexedModel model(sub, horizon, false, ctx);
  ++stats.models;
  stats.rlimit += rate::kZ3UnitsPerModelLiteral * static_cast<uint64_t>(std::max<int64_t>(model.stats().literals, 0));
  if (model.stats().literals > stats.largest.literals) stats.largest = model.stats();
  if (!model.feasible_horizon()) return std::nullopt;
  model.solver().set(limits());
  z3::check_result result = model.probe(horizon);
  stats.rlimit += model.rlimit_count();
  if (result != z3::sat) return std::nullopt;

  // Splice: pre order, the window's new order, then near and far in their old order.
  std::vector<std::vector<int32_t>> sub_orders = model.orders();
  ir::Schedule out;
  out.problem = p;
  out.ranks.resize(R);
  for (size_t r = 0; r < R; ++r) {
    for (size_t i = 0; i < inc.ranks[r].size(); ++i)
      if (zone[r][i] == Zone::Pre) out.ranks[r].push_back(inc.ranks[r][i]);
    for (int32_t k : sub_orders[r])
      if (zone[r][static_cast<size_t>(slots[static_cast<size_t>(k)].index)] == Zone::Free)
        out.ranks[r].push_back(sub.action[static_cast<size_t>(k)]);
    for (size_t i = 0; i < inc.ranks[r].size(); ++i)
      if (zone[r][i] == Zone::Near || zone[r][i] == Zone::Far) out.ranks[r].push_back(inc.ranks[r][i]);
  }
  if (!ir::verify(out).empty()) return std::nullopt;
  ++stats.improved;
  return out;
}

}  // namespace schedc::solver
