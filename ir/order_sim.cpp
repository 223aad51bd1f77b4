#include "ir/order_sim.h"

#include <algorithm>
#include <cassert>

namespace schedc::ir {

OrderSimulator::OrderSimulator(const Schedule& s) : problem_(s.problem), graph_(DepGraph::of_schedule(s)) {
  assert(!s.has_overlap() && "the order simulator times single actions only");
  const size_t R = s.ranks.size(), n = graph_.size();
  initial_.resize(R);
  for (size_t r = 0; r < R; ++r) {
    auto nodes = graph_.on_rank(static_cast<int32_t>(r));
    initial_[r].assign(nodes.begin(), nodes.end());
  }
  for (size_t i = 0; i < n; ++i) {
    assert(graph_.missing_inputs(static_cast<int32_t>(i)) == 0 && "every dependency is one of the schedule's actions");
    assert(graph_.succs(static_cast<int32_t>(i)).size() <= 2 && "a node has at most two dependents");
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
  first_.assign(R, 0);
  rank_span_.assign(R, 0);
  rank_end_.assign(R, 0);
  stack_.reserve(R);
}

bool OrderSimulator::run(const std::vector<std::vector<int32_t>>& orders) {
  const size_t R = orders.size();
  std::fill(end_.begin(), end_.end(), -1);
  std::fill(waiter_.begin(), waiter_.end(), -1);
  std::fill(pos_.begin(), pos_.end(), 0);
  std::fill(free_.begin(), free_.end(), 0);
  stack_.clear();
  for (size_t r = R; r-- > 0;) stack_.push_back(static_cast<int32_t>(r));
  size_t done = 0;
  while (!stack_.empty()) {
    auto r = static_cast<size_t>(stack_.back());
    stack_.pop_back();
    const std::vector<int32_t>& order = orders[r];
    while (pos_[r] < order.size()) {
      const auto a = static_cast<size_t>(order[pos_[r]]);
      int64_t ready = free_[r];
      bool blocked = false;
      for (const DepGraph::Edge& d : graph_.preds(static_cast<int32_t>(a))) {
        int64_t e = end_[static_cast<size_t>(d.node)];
        if (e < 0) {
          // Wait for it: a node has at most two dependents, so two slots always suffice.
          size_t slot = 2 * static_cast<size_t>(d.node);
          if (waiter_[slot] >= 0 && waiter_[slot] != static_cast<int32_t>(r)) ++slot;
          waiter_[slot] = static_cast<int32_t>(r);
          blocked = true;
          break;
        }
        ready = std::max(ready, e + d.lag);
      }
      if (blocked) break;
      if (pos_[r] == 0) first_[r] = ready;
      start_[a] = ready;
      end_[a] = ready + graph_.duration(static_cast<int32_t>(a));
      free_[r] = end_[a];
      ++pos_[r];
      ++done;
      for (size_t slot = 2 * a; slot < 2 * a + 2; ++slot)
        if (waiter_[slot] >= 0) {
          if (waiter_[slot] != static_cast<int32_t>(r)) stack_.push_back(waiter_[slot]);
          waiter_[slot] = -1;
        }
    }
  }
  if (done != size()) return false;
  makespan_ = max_span_ = 0;
  for (size_t r = 0; r < R; ++r) {
    rank_end_[r] = orders[r].empty() ? 0 : free_[r];
    rank_span_[r] = orders[r].empty() ? 0 : free_[r] - first_[r];
    makespan_ = std::max(makespan_, rank_end_[r]);
    max_span_ = std::max(max_span_, rank_span_[r]);
  }
  return true;
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

Schedule OrderSimulator::to_schedule(const std::vector<std::vector<int32_t>>& orders) const {
  Schedule s;
  s.problem = problem_;
  s.ranks.resize(orders.size());
  for (size_t r = 0; r < orders.size(); ++r)
    for (int32_t a : orders[r]) s.ranks[r].push_back(graph_.action(a));
  return s;
}

}  // namespace schedc::ir
