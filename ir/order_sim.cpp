#include "ir/order_sim.h"

#include <algorithm>
#include <cassert>

namespace schedc::ir {

OrderSimulator::OrderSimulator(const Schedule& s) : problem_(s.problem) {
  assert(!s.has_overlap() && "the order simulator times single actions only");
  const Problem& p = problem_;
  scale_ = time_scale(p);
  const int64_t mscale = memory_scale(p);
  const int64_t comm = to_fixed(p.cost.comm, scale_);
  const size_t R = s.ranks.size();
  std::vector<int32_t> node_of(num_action_slots(p), -1);
  initial_.resize(R);
  for (size_t r = 0; r < R; ++r)
    for (Action a : s.ranks[r]) {
      auto id = static_cast<int32_t>(action_.size());
      node_of[action_id(p, a).index()] = id;
      action_.push_back(a);
      rank_.push_back(static_cast<int32_t>(r));
      dur_.push_back(to_fixed(cost_of(p, a), scale_));
      mem_.push_back(to_fixed(memory_delta(p, a), mscale));
      initial_[r].push_back(id);
    }
  const size_t n = action_.size();
  preds_.assign(2 * n, Pred{});
  npred_.assign(n, 0);
  ScheduleIndex index(s);
  for (size_t i = 0; i < n; ++i) {
    for (Action d : dependencies(p, action_[i], index)) {
      int32_t from = node_of[action_id(p, d).index()];
      assert(from >= 0 && npred_[i] < 2 && "every dependency is one of the schedule's actions");
      int64_t lag = rank_of(p, d) == rank_of(p, action_[i]) ? 0 : comm;
      preds_[2 * i + static_cast<size_t>(npred_[i]++)] = {from, lag};
    }
  }
  cap_.assign(R, -1);
  for (size_t r = 0; r < R; ++r)
    if (auto c = p.cap_of(RankId(static_cast<int32_t>(r)))) cap_[r] = to_fixed(*c, mscale);
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
      for (int32_t k = 0; k < npred_[a]; ++k) {
        const Pred& d = preds_[2 * a + static_cast<size_t>(k)];
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
      end_[a] = ready + dur_[a];
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
    cur += mem_[static_cast<size_t>(a)];
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
    for (int32_t a : orders[r]) s.ranks[r].push_back(action_[static_cast<size_t>(a)]);
  return s;
}

}  // namespace schedc::ir
