#pragma once
// ir::DepGraph: the dependency rules of docs/design.md section 3, written once. One node per action, with
// its rank, duration and memory delta in the simulator's fixed point; one edge per dependency
// ("to" waits for "from"), whose lag is `comm` when the two ranks differ; heads and tails
// (longest paths). Adjacency is stored flat (CSR), so clients in hot loops read it without
// allocating. The lower bound, the solver's instance, the families' list scheduler, the order
// simulator and the lowering all build on it.
//
// ir::simulate and ir::verify deliberately do not: they restate the rules through
// ir::dependencies (schedule.h) so that they stay an independent reference, and the property
// tests compare this graph and everything built on it against them.
//
// Overlapped F&B units are a choice of a schedule, not a rule of the problem: the graph has none,
// and whoever times a schedule's units (the simulator) or bounds what units can save (the lower
// bound) accounts for them itself.

#include <cstdint>
#include <span>
#include <vector>

#include "ir/action.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace schedc::ir {

struct DepGraphOptions {
  /// Adds the symmetry-breaking edges F(i) -> F(i+1) and backward(i) -> backward(i+1) (and, with
  /// `order_weights`, W(i) -> W(i+1)) between consecutive microbatches of one direction on every
  /// stage, lag 0. Not dependencies: some optimal schedule runs interchangeable microbatches in
  /// order (docs/solver.md), which the bound and the solver use. Canonical graphs only.
  bool microbatch_order = false;
  bool order_weights = true;
};

class DepGraph {
 public:
  struct Edge {
    int32_t node = -1;  // the other end: the successor in succs(), the predecessor in preds()
    int64_t lag = 0;    // ticks: start(successor) >= end(predecessor) + lag
  };
  /// Where a node of a graph made by `of_schedule` stands in the schedule.
  struct Position {
    int32_t rank = -1;
    int32_t index = -1;
  };

  /// The canonical graph of a problem: every action in the problem's backward form, F and BW when
  /// fused, F, B and W when split or mixed (a mixed problem is solved in split form, docs/design.md
  /// section 7). Node ids follow `canonical_node`.
  explicit DepGraph(const Problem& p, const DepGraphOptions& options = {});
  /// The graph of the given actions (in range, at most one backward form per microbatch and
  /// stage); node i is actions[i], and a duplicate keeps its first node. The backward that
  /// B/BW(mb, s) waits for is B(mb, s+1) when present, else BW(mb, s+1), so a mixed schedule may
  /// choose per microbatch and stage. A dependency that is not among the actions is no edge; it is
  /// counted in `missing_inputs` of the node that waits for it.
  DepGraph(const Problem& p, std::span<const Action> actions);
  /// The graph of a schedule's actions, rank by rank (see `node_at`, `position`). Every action
  /// must be on its own rank (ir::verify checks that); overlapped units are ignored.
  static DepGraph of_schedule(const Schedule& s);

  /// Node id of F/B/W/BW(mb, stage) in the canonical graph of `p`, -1 when that form is absent:
  /// (mb * S + stage) * k + slot, k = 2 (F, BW) when fused, else 3 (F, B, W).
  static int32_t canonical_node(const Problem& p, ActionKind kind, int32_t mb, int32_t stage);

  size_t size() const { return action_.size(); }
  int32_t num_ranks() const { return static_cast<int32_t>(on_rank_off_.size()) - 1; }
  /// Ticks per time unit (ir::time_scale) and fixed-point units per memory unit (ir::memory_scale).
  int64_t time_scale() const { return time_scale_; }
  int64_t memory_scale() const { return memory_scale_; }

  Action action(int32_t v) const { return action_[static_cast<size_t>(v)]; }
  int32_t rank(int32_t v) const { return rank_[static_cast<size_t>(v)]; }
  /// Duration in ticks (ir::cost_of at time_scale).
  int64_t duration(int32_t v) const { return dur_[static_cast<size_t>(v)]; }
  const std::vector<int64_t>& durations() const { return dur_; }
  /// Memory delta at memory_scale (ir::memory_delta).
  int64_t memory(int32_t v) const { return mem_[static_cast<size_t>(v)]; }
  /// The node of an action, -1 when it is not in the graph.
  int32_t node_of(Action a) const;

  /// Edges out of `v` (what waits for it) and into `v` (what it waits for). In a canonical graph
  /// a forward's successors are F(s+1) then its backward, a backward's the previous stage's
  /// backward then its W, each followed by the microbatch-order edge when there is one.
  std::span<const Edge> succs(int32_t v) const { return span(succ_off_, succ_, v); }
  std::span<const Edge> preds(int32_t v) const { return span(pred_off_, pred_, v); }
  /// The lag of the edge from -> to, which must exist.
  int64_t lag(int32_t from, int32_t to) const;
  /// Dependencies of `v` that are not in the graph (always 0 in a canonical graph).
  int32_t missing_inputs(int32_t v) const { return missing_.empty() ? 0 : missing_[static_cast<size_t>(v)]; }

  /// The nodes that run on `rank`, in id order (for `of_schedule`: the rank's order).
  std::span<const int32_t> on_rank(int32_t rank) const;
  /// `of_schedule` graphs only: the node at position `index` of rank `rank`, and back.
  int32_t node_at(int32_t rank, int32_t index) const { return on_rank(rank)[static_cast<size_t>(index)]; }
  Position position(int32_t v) const;

  /// Every node after all of its predecessors (Kahn's order from the sources, by id); O(size()).
  std::vector<int32_t> topological_order() const;
  /// Earliest start of every node when only the edges constrain it (ranks may run any number of
  /// actions at once): the longest path to it, with durations `dur` (ticks, one per node).
  std::vector<int64_t> heads(std::span<const int64_t> dur) const;
  std::vector<int64_t> heads() const { return heads(dur_); }
  /// Least time from the end of every node to the end of the last action after it, likewise.
  std::vector<int64_t> tails(std::span<const int64_t> dur) const;
  std::vector<int64_t> tails() const { return tails(dur_); }

 private:
  struct RawEdge {
    int32_t from, to;
  };
  static std::span<const Edge> span(const std::vector<int32_t>& off, const std::vector<Edge>& e, int32_t v) {
    auto i = static_cast<size_t>(v);
    return {e.data() + off[i], static_cast<size_t>(off[i + 1] - off[i])};
  }
  struct Values;  // per (direction, stage) and kind: rank, ticks, memory
  void add_node(const Problem& p, const Values& values, Action a);
  void add_rule_edges(const Problem& p, std::vector<RawEdge>& out);
  void finish(int32_t ranks, const std::vector<RawEdge>& edges);

  int32_t stages_ = 0;
  int64_t time_scale_ = 1, memory_scale_ = 1, comm_ = 0;
  std::vector<Action> action_;
  std::vector<int32_t> rank_;
  std::vector<int64_t> dur_, mem_;
  std::vector<int32_t> node_of_;  // [ir::action_id]
  std::vector<int32_t> missing_;  // empty when nothing is missing
  std::vector<int32_t> succ_off_, pred_off_;
  std::vector<Edge> succ_, pred_;
  std::vector<int32_t> on_rank_off_, on_rank_;
  bool by_schedule_ = false;
};

}  // namespace schedc::ir
