#pragma once
// Large neighbourhood search for instances too big for one SAT model: cut a time window out of
// the incumbent's timeline, keep everything before it fixed (times and order) and everything after
// it in its order, and let the SAT model reorder the window so that the whole schedule ends earlier.

#include <cstdint>
#include <functional>
#include <optional>

#include <z3++.h>

#include "ir/simulate.h"
#include "solver/synth/encode.h"

namespace schedc::solver {

struct LnsStats {
  int64_t windows = 0;    // windows tried
  int64_t models = 0;     // SAT models built
  int64_t improved = 0;   // windows that gave a better schedule
  EncodingStats largest;  // the largest model built
  uint64_t rlimit = 0;    // Z3 resource units spent (deterministic budgets), charges included
};

/// A window's cut, splice and model building are charged to `LnsStats::rlimit` at budget.h's
/// rate::kZ3UnitsPerWindowAction and rate::kZ3UnitsPerModelLiteral (Z3 counts neither).
/// A schedule with makespan <= `target` (ticks) obtained by reordering the actions of `incumbent`
/// that start in [t0, t1) (times of `timeline`), or nullopt. The result is verified. `grid` is
/// the step in ticks; the SAT check runs under the parameters `limits` returns, asked for after the
/// model is built (so a wall-clock timeout counts the building); windows whose model would exceed
/// `max_literals` are skipped.
std::optional<ir::Schedule> improve_window(const ir::Schedule& incumbent, const ir::Timeline& timeline, int64_t t0,
                                           int64_t t1, int64_t target, int64_t grid, z3::context& ctx,
                                           const std::function<z3::params()>& limits, int64_t max_literals,
                                           LnsStats& stats);

}  // namespace schedc::solver
