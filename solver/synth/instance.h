#pragma once
// The solver's view of a problem: ir::DepGraph's nodes (rank, memory delta) and edges with times
// rounded to integer grid steps, plus heads and tails (earliest start, least time after the end)
// tightened by one-machine reasoning. One Instance serves the greedy scheduler, the lower-bound
// probes and the SAT encoding.

#include <cstdint>
#include <vector>

#include "ir/schedule.h"

namespace schedc::solver {

struct Instance {
  struct Edge {
    int32_t to;
    int32_t lag;  // start(to) >= start(from) + dur(from) + lag
  };

  const ir::Problem* problem = nullptr;
  bool fused = false;          // BW actions; otherwise B and W
  int64_t ticks_per_step = 1;  // one grid step in the simulator's fixed-point ticks
  bool exact = true;           // every duration and lag is an exact number of steps
  bool rounded_down = false;   // InstanceOptions::round_down: a relaxation of the problem
  bool symmetric = false;      // microbatches of one direction run in order on every stage
  int64_t time_scale = 1;      // the simulator's ticks per time unit
  int64_t memory_scale = 1;

  std::vector<ir::Action> action;
  std::vector<int32_t> rank;
  std::vector<int32_t> dur;  // steps; at least 1, except in a rounded-down instance (0 allowed)
  std::vector<int64_t> mem;  // memory delta at memory_scale
  std::vector<std::vector<Edge>> succ, pred;
  std::vector<std::vector<int32_t>> on_rank;
  std::vector<int64_t> cap;  // per rank at memory_scale, divided by memory_unit; -1 = unlimited
  /// Memory deltas and caps are in units of this many memory-scale units (their gcd), so that the
  /// SAT model's pseudo-Boolean coefficients stay small.
  int64_t memory_unit = 1;
  /// False when a rank's memory values still exceed 32 bits: no SAT model can encode the cap.
  bool memory_fits_pb = true;

  std::vector<int32_t> head, tail;  // in steps, over all edges
  /// Optional lower bounds on heads and tails that the edges do not imply (release and delivery
  /// times of a sub-instance cut out of a larger schedule); empty means 0.
  std::vector<int32_t> release, delivery;

  size_t size() const { return action.size(); }
  /// Node of F/B/W/BW (mb, stage) for this instance's backward form (-1 when absent).
  int32_t node(ir::ActionKind kind, int32_t mb, int32_t stage) const;
};

struct InstanceOptions {
  /// 0: the exact grid (gcd of all durations and the comm lag). A grid whose step counts would not
  /// fit the instance's 32-bit times is replaced by the smallest multiple of it that fits.
  int64_t ticks_per_step = 0;
  bool symmetry = true;  // microbatches of one direction in order on every stage
  /// With symmetry and a cap: precedence edges the cap implies on one-stage ranks (F(i) needs an
  /// earlier backward to have freed memory), which narrow every window of the SAT encoding.
  bool memory_edges = true;
  /// Durations and lags rounded down to the grid (zero-step actions kept) instead of to the
  /// nearest step: every valid schedule then maps onto one of the instance (start s -> floor(s /
  /// step)) that ends no later, so the instance is a relaxation and its optimum a lower bound
  /// (docs/solver.md, "the rounded-down relaxation"). Only for the SAT model, not the greedy.
  bool round_down = false;
  /// Tails (and heads) tightened by one-machine reasoning over each rank's descendants (and
  /// ancestors): narrower SAT windows, at O(edges * actions per rank / 64) word operations (2.5 s
  /// at pp 64, m 256, vpp 2). The greedy reads only heads, which the tightening never changes when
  /// symmetry is off (a microbatch's ancestors on a rank lie on one chain: synthesize_test checks
  /// it), so the search builds the greedy's instances without it.
  bool rank_work = true;
};

/// Builds the instance. Mixed problems use the split form (docs/solver.md: it dominates when
/// B frees memory); fused problems use BW.
Instance build_instance(const ir::Problem& p, const InstanceOptions& o);

/// The exact grid in ticks: the gcd of every duration and of the comm lag.
int64_t exact_grid(const ir::Problem& p);

/// The smallest multiple of `grid` at which every duration, lag and every sum of them along a
/// schedule stays below 2^30 steps, so that heads, tails and horizons fit int32_t.
int64_t fitting_grid(const ir::Problem& p, int64_t grid);

/// Divides memory deltas and caps by the gcd of the deltas (exact: every prefix sum is a multiple
/// of it, so a cap may be rounded down to one) and sets memory_fits_pb.
void normalize_memory(Instance& inst);

/// Recomputes heads and tails (after edges were added). Returns false on a cycle.
bool compute_heads_tails(Instance& inst, bool rank_work = true);

/// Turns per-rank node orders into a schedule of the instance's problem.
ir::Schedule to_schedule(const Instance& inst, const std::vector<std::vector<int32_t>>& orders);

}  // namespace schedc::solver
