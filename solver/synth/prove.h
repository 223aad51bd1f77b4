#pragma once
// Re-deriving an optimality claim from a schedule alone (`schedc verify --optimal`): the lower
// bound computed afresh meets the schedule's objective, or an exact time-indexed SAT probe one grid
// step below it is unsat (docs/solver.md, "Claims"). Nothing from the solve that made the claim is
// trusted except its schedule.

#include <string>

#include "ir/schedule.h"

namespace schedc::solver {

struct ProveOptions {
  /// Wall-clock limit for Z3's probe (its resource limit is only a generous backstop).
  double time_limit_s = 60;
  /// Try the exact SAT probe when the bound does not meet the objective.
  bool use_z3 = true;
};

/// How a check ended: the claim re-derived, refuted (a better schedule exists, or the schedule
/// is invalid), or neither argument decides it (no exact model, limits ran out, Z3 error).
enum class ProofVerdict { Holds, Refuted, Unknown, Internal };

/// Which argument decided.
enum class ProofArgument { None, Bound, ExactModel };

struct ProofCheck {
  ProofVerdict verdict = ProofVerdict::Unknown;
  ProofArgument argument = ProofArgument::None;
  double objective = 0;      // the schedule's simulated objective
  double bound = 0;          // ir::lower_bound(problem).value
  std::string bound_reason;  // the term that gave it
  /// What was shown, as a clause after "holds: " or as a diagnostic's message, e.g. "the bound
  /// (rank 0: memory throughput under the cap) equals the makespan 48".
  std::string message;

  bool holds() const { return verdict == ProofVerdict::Holds; }
};

/// Checks that no valid schedule of `s.problem` has a smaller objective than `s` (which must be a
/// verified schedule; an invalid one is refuted). Z3 errors are reported in the result, never thrown.
ProofCheck prove_optimal(const ir::Schedule& s, const ProveOptions& o);

/// Whether the exact time-indexed model (docs/solver.md section 3) covers every schedule of `p`:
/// makespan objective, no cheaper overlapped units (`FB`), split orders that dominate a mixed
/// problem's fused choice, and costs in whole ticks (so that a unit or a mixed BW lasts exactly
/// its members' rounded costs). The grid's exactness is checked on the instance. On false, `why`
/// (when given) says which condition failed.
bool exact_model_complete(const ir::Problem& p, std::string* why);

}  // namespace schedc::solver
