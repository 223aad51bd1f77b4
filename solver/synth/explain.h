#pragma once
// Infeasibility in the spec's terms: when no order meets the memory cap, the smallest cap that is
// feasible and the problem fields in conflict (from a Z3 unsat core over named assertions).

#include <optional>

#include "ir/problem.h"
#include "ir/schedule.h"
#include "solver/synth/synthesize.h"

namespace schedc::solver {

/// The peak memory per rank of the one-microbatch-at-a-time schedule: every cap at or above it is
/// feasible. With memory deltas that never go negative within a microbatch's life (the usual
/// F > 0, B <= 0, W <= 0) no schedule needs less.
ir::Schedule sequential_schedule(const ir::Problem& p);

/// nullopt when the cap admits a schedule; else why not. Z3 errors are reported in the text.
std::optional<Infeasibility> explain_cap(const ir::Problem& p);

}  // namespace schedc::solver
