#pragma once
// solver::solve_plan: the plan layer (docs/solver.md, "The plan"). Above the order search, it
// chooses what the problem leaves open besides the orders: the stages per rank
// (`stages_per_rank = auto`) and, for a model, the layers each stage runs (`partition = auto`).
// One time budget for the whole: candidates are ordered by their lower bounds and skipped when
// a bound shows they cannot win; a partition is improved by moving one layer across a stage
// boundary at a time, each neighbour's search warm-started from the best schedule so far; the
// leftover goes to the best candidate. The bound it reports holds for every plan of the space
// it searched (every partition of the model into that many stages, every stages-per-rank value
// tried), found by branch and bound over the partitions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "solver/synth/synthesize.h"

namespace schedc::solver {

struct PlanSpace {
  /// The problem as stated: with `vpp_auto`, one stage per rank (each value one rank's share);
  /// with a model, its costs those of the stated (or balanced) partition.
  ir::Problem base;
  /// `stages_per_rank = auto`: the stages per rank the placement allows are tried.
  bool vpp_auto = false;
  /// `placement = auto`: looped, V-shape and wave are tried, at the stages per rank each allows
  /// (V-shape 2, wave 2 and 4, looped 1, 2 and 4 with `vpp_auto`; else the stated count where
  /// it fits the placement).
  bool placement_auto = false;
  /// `partition = auto`: the model whose layers the plan assigns to stages; nullptr keeps the
  /// stated partition (base's per-stage values, cut evenly for more stages per rank).
  const ir::Model* model = nullptr;
};

/// The stages per rank `stages_per_rank = auto` tries for a placement (empty for `custom`).
std::vector<int32_t> stages_per_rank_choices(ir::PlacementKind placement);

/// The (placement, stages per rank) pairs a plan space tries, in this order.
struct PlanShape {
  ir::PlacementKind placement = ir::PlacementKind::Looped;
  int32_t stages_per_rank = 1;
  bool operator==(const PlanShape&) const = default;
};
std::vector<PlanShape> plan_shapes(const PlanSpace& space);

/// One candidate of the plan, as the table prints it.
struct PlanCandidate {
  ir::PlacementKind placement = ir::PlacementKind::Looped;
  int32_t stages_per_rank = 1;
  std::vector<int32_t> layers_per_stage;  // empty without a model
  double bound = 0;                       // ir::lower_bound of its problem
  std::optional<double> makespan;         // its best schedule, when it was solved
  std::string status;                     // "optimal", "feasible", "no schedule meets the cap" or why skipped
  bool chosen = false;
};

struct PlanResult {
  /// The chosen plan's solve; `lower_bound`, `gap` and `status` are over the whole plan space
  /// (Optimal only when the plan bound meets the objective), the schedule that of `problem`.
  SolveResult solve;
  ir::Problem problem;
  int32_t stages_per_rank = 1;
  std::vector<int32_t> layers_per_stage;  // the chosen partition; empty without a model
  /// What the chosen candidate's own search proved for its problem alone.
  double candidate_bound = 0;
  /// Partitions whose bound the branch and bound took (fully, or by their prefix), and whether it
  /// enumerated every one it could not rule out (false: it stopped at its node limit, and the
  /// open nodes' bounds were used).
  int64_t partitions_bounded = 0;
  bool bound_exhaustive = true;
  std::vector<PlanCandidate> candidates;  // in the order they were tried
  /// Set when no candidate could be tried (every one invalid): the first one's reason.
  std::string error;
};

/// A lower bound on every schedule of every partition of `model` into `base.num_stages()`
/// stages (counts >= 0, the embedding on the first, the head on the last), at most `limit`
/// makespan values kept: partitions whose bound reaches `limit` are not enumerated (they cannot
/// go below it). `full_bounds` partitions get ir::lower_bound; the others a cheaper bound (each
/// rank's work after its first input can arrive); past `max_nodes` nodes, the open nodes' prefix
/// bounds. Sound for every partition of the space (tests/unit/solver/plan_test.cpp).
struct PartitionBound {
  double value = 0;
  int64_t leaves = 0;
  bool exhaustive = true;
};
PartitionBound partition_space_bound(const ir::Problem& base, const ir::Model& model, double limit, int64_t full_bounds,
                                     int64_t max_nodes);

/// The dynamic programs' part of partition_space_bound (a bound on every partition of the space,
/// 0 when none applies): the least largest per-stage term over partitions, raised under a cap by
/// the memory area every rank's activations need (docs/solver.md, "The plan"). Exposed for tests.
double partition_dp_bound(const ir::Problem& base, const ir::Model& model);

/// Solves the plan. The options' time limit is the whole plan's; progress and the candidates'
/// table go where the options say.
PlanResult solve_plan(const PlanSpace& space, const SolveOptions& options);

}  // namespace schedc::solver
