#include "ir/order_sim.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace schedc::ir {

OrderSimulator::OrderSimulator(const Schedule& s) : problem_(s.problem), graph_(DepGraph::of_schedule(s)) {
  const size_t R = s.ranks.size(), n = graph_.size();
  initial_.resize(R);
  initial_units_.assign(n, -1);
  for (size_t r = 0; r < R; ++r) {
    auto nodes = graph_.on_rank(static_cast<int32_t>(r));
    initial_[r].assign(nodes.begin(), nodes.end());
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(nodes.size()); ++i)
      if (s.overlap_starts_at(r, i)) {
        initial_units_[static_cast<size_t>(nodes[static_cast<size_t>(i)])] = nodes[static_cast<size_t>(i) + 1];
        initial_units_[static_cast<size_t>(nodes[static_cast<size_t>(i) + 1])] = nodes[static_cast<size_t>(i)];
      }
  }
  for (size_t i = 0; i < n; ++i) {
    assert(graph_.missing_inputs(static_cast<int32_t>(i)) == 0 && "every dependency is one of the schedule's actions");
#ifndef NDEBUG
    // Its dependents are on at most two ranks (an F's R and backward are on its own rank).
    std::vector<int32_t> ranks;
    for (const DepGraph::Edge& e : graph_.succs(static_cast<int32_t>(i)))
      if (std::find(ranks.begin(), ranks.end(), graph_.rank(e.node)) == ranks.end())
        ranks.push_back(graph_.rank(e.node));
    assert(ranks.size() <= 2 && "a node's dependents are on at most two ranks");
#endif
  }
  const int64_t mscale = graph_.memory_scale();
  cap_.assign(R, -1);
  for (size_t r = 0; r < R; ++r)
    if (auto c = problem_.cap_of(RankId(static_cast<int32_t>(r)))) cap_[r] = to_fixed(*c, mscale);
  start_.assign(n, 0);
  end_.assign(n, -1);
  waiter_.assign(2 * n, -1);
  pos_.assign(R, 0);
  free_.assign(R, 0);
  rank_span_.assign(R, 0);
  rank_end_.assign(R, 0);
  stack_.reserve(R);
}

int64_t OrderSimulator::unit_duration(int32_t a, int32_t b) const {
  Action x = graph_.action(a), y = graph_.action(b);
  bool well_formed = (x.kind == ActionKind::F) != (y.kind == ActionKind::F) &&
                     (is_backward(x.kind) || is_backward(y.kind));
  // As ir::simulate: the unit's cost (FB and both overheads), or the summed cost of a malformed
  // pair, rounded once.
  if (!well_formed) return to_fixed(cost_of(problem_, x) + cost_of(problem_, y), graph_.time_scale());
  return to_fixed(x.kind == ActionKind::F ? overlap_cost(problem_, x, y) : overlap_cost(problem_, y, x),
                  graph_.time_scale());
}

bool OrderSimulator::can_pair(int32_t a, int32_t b) const {
  if (a == b || graph_.rank(a) != graph_.rank(b)) return false;
  Action x = graph_.action(a), y = graph_.action(b);
  if (!((x.kind == ActionKind::F && is_backward(y.kind)) || (y.kind == ActionKind::F && is_backward(x.kind))))
    return false;
  for (const DepGraph::Edge& d : graph_.preds(a))
    if (d.node == b) return false;
  for (const DepGraph::Edge& d : graph_.preds(b))
    if (d.node == a) return false;
  return true;
}

bool OrderSimulator::inputs_ready(int32_t a, int32_t r, int64_t& ready) {
  for (const DepGraph::Edge& d : graph_.preds(a)) {
    int64_t e = end_[static_cast<size_t>(d.node)];
    if (e < 0) {
      // Wait for it: a node's dependents are on at most two ranks, so two slots always suffice.
      size_t slot = 2 * static_cast<size_t>(d.node);
      if (waiter_[slot] >= 0 && waiter_[slot] != r) ++slot;
      waiter_[slot] = r;
      return false;
    }
    ready = std::max(ready, e + d.lag);
  }
  return true;
}

bool OrderSimulator::run(const std::vector<std::vector<int32_t>>& orders, const Units* units) {
  const size_t R = orders.size();
  std::fill(end_.begin(), end_.end(), -1);
  std::fill(waiter_.begin(), waiter_.end(), -1);
  std::fill(pos_.begin(), pos_.end(), 0);
  std::fill(free_.begin(), free_.end(), 0);
  dirty_.clear();
  all_dirty_ = true;
  last_orders_ = &orders;
  last_units_ = units;
  last_changed_.clear();
  for (size_t r = 0; r < R; ++r) last_changed_.push_back(r);
  return advance(orders, units, size());
}

bool OrderSimulator::advance(const std::vector<std::vector<int32_t>>& orders, const Units* units, size_t todo) {
  const size_t R = orders.size();
  stack_.clear();
  for (size_t r = R; r-- > 0;) stack_.push_back(static_cast<int32_t>(r));
  size_t done = 0;
  while (!stack_.empty()) {
    const int32_t rr = stack_.back();
    const auto r = static_cast<size_t>(rr);
    stack_.pop_back();
    const std::vector<int32_t>& order = orders[r];
    while (pos_[r] < order.size()) {
      const int32_t a = order[pos_[r]];
      // The partner of a unit starting here, or -1 (a single action).
      int32_t b = -1;
      if (units && pos_[r] + 1 < order.size() && (*units)[static_cast<size_t>(a)] >= 0 &&
          (*units)[static_cast<size_t>(a)] == order[pos_[r] + 1])
        b = order[pos_[r] + 1];
      int64_t ready = free_[r];
      if (!inputs_ready(a, rr, ready) || (b >= 0 && !inputs_ready(b, rr, ready))) break;
      const int64_t end = ready + (b >= 0 ? unit_duration(a, b) : graph_.duration(a));
      for (int32_t x : {a, b}) {
        if (x < 0) continue;
        const auto xi = static_cast<size_t>(x);
        start_[xi] = ready;
        end_[xi] = end;
        ++pos_[r];
        ++done;
        for (size_t slot = 2 * xi; slot < 2 * xi + 2; ++slot)
          if (waiter_[slot] >= 0) {
            if (waiter_[slot] != rr) stack_.push_back(waiter_[slot]);
            waiter_[slot] = -1;
          }
      }
      free_[r] = end;
    }
  }
  if (done != todo) return false;
  finish(orders);
  return true;
}

void OrderSimulator::finish(const std::vector<std::vector<int32_t>>& orders) {
  makespan_ = max_span_ = 0;
  for (size_t r = 0; r < orders.size(); ++r) {
    rank_end_[r] = orders[r].empty() ? 0 : end_[static_cast<size_t>(orders[r].back())];
    rank_span_[r] = orders[r].empty() ? 0 : rank_end_[r] - start_[static_cast<size_t>(orders[r].front())];
    makespan_ = std::max(makespan_, rank_end_[r]);
    max_span_ = std::max(max_span_, rank_span_[r]);
  }
}

void OrderSimulator::commit() {
  assert(last_orders_ && "commit() follows a successful run");
  const auto& orders = *last_orders_;
  if (all_dirty_) {
    base_orders_ = orders;
    base_start_ = start_;
    base_end_ = end_;
  } else {
    for (int32_t x : dirty_) {
      base_start_[static_cast<size_t>(x)] = start_[static_cast<size_t>(x)];
      base_end_[static_cast<size_t>(x)] = end_[static_cast<size_t>(x)];
    }
  }
  if (base_units_.size() != size()) base_units_.assign(size(), -1);
  for (size_t r : last_changed_) {
    if (!all_dirty_) base_orders_[r] = orders[r];
    for (int32_t x : orders[r])
      base_units_[static_cast<size_t>(x)] = last_units_ ? (*last_units_)[static_cast<size_t>(x)] : -1;
  }
  base_rank_span_ = rank_span_;
  base_rank_end_ = rank_end_;
  base_makespan_ = makespan_;
  base_max_span_ = max_span_;
  has_base_ = true;
  all_dirty_ = false;
  dirty_.clear();
  last_changed_.clear();
}

void OrderSimulator::restore_dirty() {
  if (all_dirty_) {
    start_ = base_start_;
    end_ = base_end_;
    std::fill(waiter_.begin(), waiter_.end(), -1);
  } else {
    for (int32_t x : dirty_) {
      const auto xi = static_cast<size_t>(x);
      start_[xi] = base_start_[xi];
      end_[xi] = base_end_[xi];
      waiter_[2 * xi] = waiter_[2 * xi + 1] = -1;
    }
  }
  dirty_.clear();
  all_dirty_ = false;
}

void OrderSimulator::discard() {
  assert(has_base_ && "discard() needs a committed run");
  restore_dirty();
  rank_span_ = base_rank_span_;
  rank_end_ = base_rank_end_;
  makespan_ = base_makespan_;
  max_span_ = base_max_span_;
  last_changed_.clear();
}

bool OrderSimulator::rerun(const std::vector<std::vector<int32_t>>& orders, const Units* units,
                           const std::vector<size_t>& changed) {
  assert(has_base_ && "rerun() needs a committed run");
  restore_dirty();
  last_orders_ = &orders;
  last_units_ = units;
  last_changed_.clear();
  // The starting step of position i: its node and, where a unit starts there, the partner.
  auto partner = [](const std::vector<int32_t>& order, const Units* u, size_t i) {
    if (!u || i + 1 >= order.size()) return -1;
    int32_t b = (*u)[static_cast<size_t>(order[i])];
    return b == order[i + 1] ? b : -1;
  };
  // T: the earliest committed start among the positions a change reaches.
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  int64_t T = kNever;
  for (size_t r : changed) {
    if (std::find(last_changed_.begin(), last_changed_.end(), r) != last_changed_.end()) continue;
    last_changed_.push_back(r);
    const auto& now = orders[r];
    const auto& was = base_orders_[r];
    assert(now.size() == was.size() && "a move permutes a rank's actions");
    const Units* base_units = &base_units_;
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i] != was[i] || partner(now, units, i) != partner(was, base_units, i)) {
        T = std::min(T, base_start_[static_cast<size_t>(was[i])]);
        break;
      }
  }
  size_t todo = 0;
  for (size_t r = 0; r < orders.size(); ++r) {
    const auto& was = base_orders_[r];
    // Committed starts are non-decreasing along a rank's order: resume at the first at or after T.
    auto it = std::partition_point(was.begin(), was.end(),
                                   [&](int32_t x) { return base_start_[static_cast<size_t>(x)] < T; });
    const auto from = static_cast<size_t>(it - was.begin());
    pos_[r] = from;
    free_[r] = from > 0 ? base_end_[static_cast<size_t>(was[from - 1])] : 0;
    for (size_t i = from; i < orders[r].size(); ++i) {
      end_[static_cast<size_t>(orders[r][i])] = -1;
      dirty_.push_back(orders[r][i]);
    }
    todo += orders[r].size() - from;
  }
  return advance(orders, units, todo);
}

int64_t OrderSimulator::peak_memory(const std::vector<int32_t>& order) const {
  int64_t cur = 0, peak = 0;
  for (int32_t a : order) {
    cur += graph_.memory(a);
    peak = std::max(peak, cur);
  }
  return peak;
}

bool OrderSimulator::within_cap(size_t rank, const std::vector<int32_t>& order) const {
  return cap_[rank] < 0 || peak_memory(order) <= cap_[rank];
}

Schedule OrderSimulator::to_schedule(const std::vector<std::vector<int32_t>>& orders, const Units* units) const {
  Schedule s;
  s.problem = problem_;
  s.ranks.resize(orders.size());
  if (units) s.overlap.resize(orders.size());
  for (size_t r = 0; r < orders.size(); ++r) {
    const auto& order = orders[r];
    for (size_t i = 0; i < order.size(); ++i) {
      s.ranks[r].push_back(graph_.action(order[i]));
      // The rule of run: a unit where its members stand next to each other.
      if (units && i + 1 < order.size() && (*units)[static_cast<size_t>(order[i])] == order[i + 1]) {
        s.overlap[r].push_back(static_cast<int32_t>(i));
        s.ranks[r].push_back(graph_.action(order[++i]));
      }
    }
  }
  if (!s.has_overlap()) s.overlap.clear();
  return s;
}

}  // namespace schedc::ir
