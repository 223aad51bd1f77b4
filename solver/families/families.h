#pragma once
// Known schedule families (GPipe, 1F1B, interleaved 1F1B, ZB-H1/H2, ZB-V, V-Half/V-Min, Chimera,
// DualPipe, DualPipeV, ...): one generator per family, registered in one table.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/field.h"
#include "ir/params.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "support/deadline.h"
#include "support/diagnostics.h"

namespace schedc::solver {

/// What a family needs of the problem, and the values it picks for fields the user left open.
struct FamilyInfo {
  std::string name;         // exactly as users type it: "zb-h1"
  std::string summary;      // one line
  std::string constraints;  // one line, e.g. "pp even, microbatches >= 2*pp, vpp = 1"
  std::string params;       // one line, e.g. "group_size (default pp)"; "" when none
  ir::BackwardMode backward = ir::BackwardMode::Fused;
  int32_t directions = 1;       // the default number of directions
  bool any_directions = false;  // takes any number of directions from 2 (Chimera)
  ir::PlacementKind placement = ir::PlacementKind::Looped;
  int32_t stages_per_rank = 1;  // 0: any
};

/// Every family, in a stable order (the order `schedc families` prints).
const std::vector<FamilyInfo>& families();
const FamilyInfo* find_family(std::string_view name);

/// Fills the problem fields the user did not set (`given` holds the set ones, as in
/// frontend::Spec::given; those read are Backward, Direction, Placement, StageToRank and
/// StagesPerRank) with the family's choices.
void apply_family_defaults(const FamilyInfo& family, const std::vector<ir::Field>& given, ir::Problem& p);

/// Generates the family's schedule for `p`. A problem that breaks a constraint of the family, a bad
/// parameter, or a memory cap the family cannot meet is reported at `loc` (kinds
/// family-constraint, family-param, cap-infeasible; the latter names the smallest cap the family
/// needs). Every returned schedule has passed ir::verify. With a `deadline` (the solver's time limit)
/// a generator may give up once it has passed: nullopt without a diagnostic.
std::optional<ir::Schedule> generate_family(std::string_view name, const ir::Problem& p, const ir::Params& params,
                                            SourceLoc loc, Diagnostics& diags, const Deadline* deadline = nullptr);

}  // namespace schedc::solver
