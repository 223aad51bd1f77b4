#pragma once
// What the plan bound's two files share (plan_bound.cpp: the branch and bound over partitions;
// plan_bound_dp.cpp: the dynamic programs over the stages' layer ranges). Not an interface.

#include <cstdint>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"

namespace schedc::solver {

using Counts = std::vector<int32_t>;

// What an action surely occupies its rank for: its cost, or with overlapped F&B units the part of
// a unit it cannot give away (the forward min(F, FB/2), a backward min(work, max(FB - F, FB/2))
// for the most generous forward stage of its rank; see ir/lower_bound.cpp's shares), both with
// their overheads. Two members of a unit never claim more than the unit's FB plus overheads.
// Per stage and direction: one microbatch's sure work on its rank, and the forward's cost (for
// the rank's head). Overlapped units are priced by what they surely keep.
struct StageCosts {
  std::vector<double> sure;     // [stage]
  std::vector<double> forward;  // [stage]: cost_of(F)
};
StageCosts stage_costs(const ir::Problem& p);

/// The least largest per-stage term over every partition, and the memory area over all ranks
/// (plan_bound_dp.cpp's comment states both arguments); 0 where the tables would be too large.
double partition_dp_bound(const ir::Problem& base, const ir::Model& model);

}  // namespace schedc::solver
