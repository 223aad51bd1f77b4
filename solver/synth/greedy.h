#pragma once
// The cap-aware greedy list scheduler (in the spirit of the Zero Bubble repo's heuristic): each
// free rank starts the best ready action; forwards only while memory allows, then backwards, with
// weight gradients filling the gaps. Several priority variants give the solver its incumbents.

#include <optional>
#include <string>
#include <vector>

#include "solver/synth/instance.h"
#include "support/deadline.h"

namespace schedc::solver {

struct GreedyVariant {
  std::string priority = "BFW";  // kinds by preference (B stands for BW in fused problems)
  bool breadth_first = false;    // forwards: all microbatches of a stage before the next stage
  int64_t cap_slack = 0;         // forwards keep this much memory (fixed point) below the cap
  bool lookahead = false;        // idle rather than start a forward that a known backward would wait on
  int32_t w_reserve = 0;  // keep this many weight gradients pending (unless memory needs them) to fill the cool-down
  /// Zero Bubble rules instead of `priority`: a ready backward first; else a forward, unless a
  /// backward whose inputs are scheduled arrives more than `tol_f` steps before it would end (or
  /// `tol_f` < 0); else a weight gradient, unless such a backward arrives more than `tol_w` steps
  /// before it would end (or `tol_w` < 0), or a forward is held back; else idle.
  bool zb = false;
  int32_t tol_f = -1;
  int32_t tol_w = -1;
  /// Forwards minus backwards a rank may hold: `inflight_base - inflight_slope * depth` (depth:
  /// the rank's first stage), or, with `timed_warmup` >= 0, the forwards that fit before the
  /// rank's first backward can arrive (from the heads) plus `timed_warmup`. Negative: no limit.
  int32_t inflight_base = -1;
  double inflight_slope = 0;
  int32_t timed_warmup = -1;
  /// Global admission under a cap: a microbatch starts its first forward only when every rank
  /// can reserve the most memory it could ever hold there (the sum of its positive deltas on that
  /// rank) beside the reservations of the microbatches admitted before it; a rank's reservation is
  /// released when the microbatch has run all its actions there. With balanced memory an admitted
  /// microbatch never waits on memory, so the scheduler never deadlocks, at any cap the sequential
  /// schedule meets (two directions deadlock every other variant at a cap of pp or less).
  bool admission = false;
  /// Safe-state admission under a cap (the banker's rule): an action that adds memory on rank r
  /// starts only if r stays safe: taking the microbatches that have started, in the order they
  /// started, each one's remaining positive deltas on r fit in the free memory plus what the ones
  /// before it give back by their end. The earliest started unfinished microbatch then always fits
  /// on every rank (with balanced memory whose positive deltas on a rank sum to its peak there), so
  /// the scheduler never deadlocks; and unlike the reservations (a microbatch's whole forward memory
  /// from its first forward on) the next microbatch may start while the one before it still holds
  /// memory it is about to free: V-shapes and interleaving at their smallest caps chase instead of
  /// running one microbatch at a time.
  bool banker = false;
  std::string name() const;
};

/// Per-rank node orders, or nullopt when the variant gets stuck (memory deadlock) or the deadline
/// passes first.
std::optional<std::vector<std::vector<int32_t>>> greedy_orders(const Instance& inst, const GreedyVariant& v,
                                                               const Deadline* deadline = nullptr);

/// The same orders from the straightforward implementation (every free rank scans all its
/// candidates at every event), which greedy_orders replaces by sorted pools where nothing but
/// forwards adds memory: for tests, which compare the two.
std::optional<std::vector<std::vector<int32_t>>> greedy_orders_reference(const Instance& inst, const GreedyVariant& v);

/// Tighter versions of p's caps for the constructive phase, nearest first, on a fixed grid (half
/// the most activations one microbatch leaves on a rank), at most 8 levels; a schedule found for
/// one is valid under p's caps (search.cpp). The levels are the activations' room: a rank's stated
/// cap in each is its level plus its static memory. With `below` (activations per rank), the levels
/// start below the lesser of it and p's cap on each rank (fitting a family under its own peak).
std::vector<ir::Problem> cap_ladder(const ir::Problem& p, const std::vector<double>& below = {});

/// The variants the solver tries first.
std::vector<GreedyVariant> greedy_variants(const Instance& inst);

/// The Zero Bubble rules swept over their parameters (tolerances, in-flight limits, timed
/// warm-ups), most promising first; the solver runs as many as its time allows.
std::vector<GreedyVariant> zb_variants(const Instance& inst);

}  // namespace schedc::solver
