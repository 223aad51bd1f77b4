#pragma once
// ir::OrderSimulator: the simulator of ir/simulate.h specialised for searching over orders. The
// set of actions is fixed once (from a schedule, as an ir::DepGraph); each run times a new
// per-rank order of those actions, and optionally overlapped F&B units among them,
// as-soon-as-possible, tick for tick as ir::simulate does, in O(actions) with no allocation. The
// local search evaluates millions of orders with it.

#include <cstdint>
#include <vector>

#include "ir/dep_graph.h"
#include "ir/schedule.h"

namespace schedc::ir {

class OrderSimulator {
 public:
  /// Orders are vectors of node ids 0..size()-1; node i is the i-th action of `s` (rank by rank).
  /// Every action's dependencies must be in `s`; its overlapped units are `initial_units()`.
  explicit OrderSimulator(const Schedule& s);

  /// Overlapped F&B units of a run: `units[a] == b` and `units[b] == a` when nodes a and b form
  /// one, -1 for a node in none. A unit counts only where its members stand next to each other
  /// in their rank's order (either first); elsewhere both run as single actions, as in to_schedule.
  using Units = std::vector<int32_t>;

  /// The dependency graph the orders are timed on (ir::DepGraph::of_schedule of `s`).
  const DepGraph& graph() const { return graph_; }
  size_t size() const { return graph_.size(); }
  size_t num_ranks() const { return initial_.size(); }
  Action action(int32_t node) const { return graph_.action(node); }
  int32_t rank(int32_t node) const { return graph_.rank(node); }
  int64_t duration(int32_t node) const { return graph_.duration(node); }
  /// Memory delta at ir::memory_scale of the problem.
  int64_t memory(int32_t node) const { return graph_.memory(node); }
  /// A rank's cap at ir::memory_scale, or -1 when unlimited.
  int64_t cap(size_t rank) const { return cap_[rank]; }
  /// The dependencies of a node (at most two), each with its lag in ticks.
  using Pred = DepGraph::Edge;
  const Pred* preds_begin(int32_t node) const { return graph_.preds(node).data(); }
  int32_t num_preds(int32_t node) const { return static_cast<int32_t>(graph_.preds(node).size()); }
  /// The orders of the schedule the simulator was built from.
  const std::vector<std::vector<int32_t>>& initial_orders() const { return initial_; }
  /// The overlapped units of the schedule the simulator was built from.
  const Units& initial_units() const { return initial_units_; }
  /// Ticks a unit of nodes a and b lasts (the forward's `FB`, or the members' costs summed), as
  /// ir::simulate times it.
  int64_t unit_duration(int32_t a, int32_t b) const;
  /// True when a and b may form a unit: one forward and one B or BW of one rank, neither
  /// depending directly on the other (a unit can still deadlock through other ranks).
  bool can_pair(int32_t a, int32_t b) const;
  /// Ticks per time unit (ir::time_scale of the problem).
  int64_t scale() const { return graph_.time_scale(); }

  /// Times every node of `orders` (with `units`, when given); false when they deadlock (a
  /// dependency that never completes).
  bool run(const std::vector<std::vector<int32_t>>& orders, const Units* units = nullptr);
  /// After a successful run: start and end ticks of a node.
  int64_t start(int32_t node) const { return start_[static_cast<size_t>(node)]; }
  int64_t end(int32_t node) const { return end_[static_cast<size_t>(node)]; }
  int64_t makespan() const { return makespan_; }
  /// Last end minus first start of one rank (0 for an empty rank).
  int64_t rank_span(size_t rank) const { return rank_span_[rank]; }
  int64_t rank_end(size_t rank) const { return rank_end_[rank]; }
  int64_t max_rank_span() const { return max_span_; }
  /// The objective of DESIGN section 3 in ticks.
  int64_t objective(Objective o) const { return o == Objective::Makespan ? makespan_ : max_span_; }

  /// The largest prefix sum of memory deltas along `order` (at least 0), at memory scale.
  int64_t peak_memory(const std::vector<int32_t>& order) const;
  /// True when `order`'s peak stays within its rank's cap.
  bool within_cap(size_t rank, const std::vector<int32_t>& order) const;

  Schedule to_schedule(const std::vector<std::vector<int32_t>>& orders, const Units* units = nullptr) const;

 private:
  Problem problem_;
  DepGraph graph_;
  std::vector<int64_t> cap_;
  std::vector<std::vector<int32_t>> initial_;
  Units initial_units_;
  std::vector<int64_t> fb_;  // per stage: the FB unit's ticks, when the problem declares FB
  /// Registers rank r as waiting for the first missing input of `a`, or raises `ready` to the
  /// arrival of all of them; false when one is missing.
  bool inputs_ready(int32_t a, int32_t r, int64_t& ready);
  // Per run.
  std::vector<int64_t> start_, end_;
  std::vector<int32_t> waiter_;  // two slots per node: ranks waiting for it, -1 when free
  std::vector<size_t> pos_;
  std::vector<int64_t> free_, first_;
  std::vector<int32_t> stack_;
  std::vector<int64_t> rank_span_, rank_end_;
  int64_t makespan_ = 0, max_span_ = 0;
};

}  // namespace schedc::ir
