#pragma once
// ir::OrderSimulator: the simulator of ir/simulate.h specialised for searching over orders. The
// set of actions is fixed once (from a schedule, as an ir::DepGraph); each run times a new
// per-rank order of those actions, and optionally overlapped F&B units among them,
// as-soon-as-possible, tick for tick as ir::simulate does, in O(actions) with no allocation. The
// local search evaluates millions of orders with it.
//
// Incremental runs: after commit(), rerun() times orders that differ from the committed ones on a
// few ranks and re-times only what the change can reach. Let T be the earliest committed start
// among the changed positions. An action that started before T depends only on actions that
// started before T (every duration and lag is at least 0), none of which moved, so it keeps its
// time; every rank resumes at its first action that started at T or later. The rest is timed as
// run() times it, so the result is exact, not an estimate.

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
  /// The dependencies of a node (at most three: a backward waits for its F, the next stage's
  /// backward and its R), each with its lag in ticks.
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
  /// Makes the last successful run (full or incremental) the base of later incremental runs. The
  /// orders and units that run timed must not have changed since.
  void commit();
  /// Times `orders` and `units` (nullptr: none) that equal the committed ones except on the ranks
  /// listed in `changed` (any order, repeats allowed), re-timing only actions that start at or
  /// after the earliest change; the result is the one run() gives. Needs a commit() before.
  bool rerun(const std::vector<std::vector<int32_t>>& orders, const Units* units, const std::vector<size_t>& changed);
  /// Drops the last run: start(), end() and the spans are the committed run's again.
  void discard();
  /// Nodes the last run timed (every node for run()); the share an incremental run saves.
  size_t last_retimed() const { return all_dirty_ ? size() : dirty_.size(); }
  /// After a successful run: start and end ticks of a node.
  int64_t start(int32_t node) const { return start_[static_cast<size_t>(node)]; }
  int64_t end(int32_t node) const { return end_[static_cast<size_t>(node)]; }
  int64_t makespan() const { return makespan_; }
  /// Last end minus first start of one rank (0 for an empty rank).
  int64_t rank_span(size_t rank) const { return rank_span_[rank]; }
  int64_t rank_end(size_t rank) const { return rank_end_[rank]; }
  int64_t max_rank_span() const { return max_span_; }
  /// The objective of docs/design.md section 3 in ticks.
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
  /// Registers rank r as waiting for the first missing input of `a`, or raises `ready` to the
  /// arrival of all of them; false when one is missing.
  bool inputs_ready(int32_t a, int32_t r, int64_t& ready);
  // Per run.
  std::vector<int64_t> start_, end_;
  std::vector<int32_t> waiter_;  // two slots per node: ranks waiting for it, -1 when free
  std::vector<size_t> pos_;
  std::vector<int64_t> free_;
  std::vector<int32_t> stack_;
  std::vector<int64_t> rank_span_, rank_end_;
  int64_t makespan_ = 0, max_span_ = 0;
  /// Times the positions from pos_ on of every rank (`todo` actions in all); false on deadlock.
  bool advance(const std::vector<std::vector<int32_t>>& orders, const Units* units, size_t todo);
  /// The spans and makespan after a successful run.
  void finish(const std::vector<std::vector<int32_t>>& orders);
  // The committed run, and what the last run changed since (dirty_ nodes, or all of them).
  bool has_base_ = false, all_dirty_ = false;
  const std::vector<std::vector<int32_t>>* last_orders_ = nullptr;
  const Units* last_units_ = nullptr;
  std::vector<size_t> last_changed_;
  std::vector<std::vector<int32_t>> base_orders_;
  Units base_units_;
  std::vector<int64_t> base_start_, base_end_, base_rank_span_, base_rank_end_;
  int64_t base_makespan_ = 0, base_max_span_ = 0;
  std::vector<int32_t> dirty_;
  /// Restores the dirty nodes' times (and waiter slots) to the committed run's.
  void restore_dirty();
};

}  // namespace schedc::ir
