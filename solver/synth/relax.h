#pragma once
// A lower bound from a relaxation solved exactly: the time-indexed SAT model of an instance whose
// durations and lags are rounded *down* to a grid of g ticks (docs/solver.md, "the rounded-down
// relaxation"). Every valid schedule of makespan T maps (start s -> floor(s / g)) onto a solution
// of that model of makespan at most floor(T / g), so when Z3 finds no solution within H steps,
// every schedule has T >= (H + 1) g. It sees what the closed-form terms of ir::lower_bound cannot:
// how the cap, the dependencies and one action at a time per rank interact.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <z3++.h>

#include "ir/problem.h"
#include "support/deadline.h"

namespace schedc::solver {

struct RelaxOptions {
  int64_t max_literals = 80'000;  // the model's size budget (the grid grows until it fits)
  /// Called before every probe to set its limits (timeout or rlimit); returns false when the
  /// budget is spent.
  std::function<bool(z3::params&)> limits;
  /// Called after every probe with the solver's rlimit count (deterministic budgets).
  std::function<void(uint64_t)> used;
  /// Past it no further instance or model is built (at pp 64, m 256 each build takes a second);
  /// its interrupt also ends building the model early (nothing is proved then).
  Deadline deadline;
  /// Asked before the model is built, with its estimated literals: false skips it (the build
  /// cannot be interrupted by the clock, and a 320k-literal model takes seconds). Null: build.
  std::function<bool(int64_t literals)> may_build;
};

struct Relaxation {
  double bound = 0;  // in the problem's time units; 0 when nothing was proved
  int64_t grid = 0;  // ticks per step of the model used (0: none was built)
  int probes = 0;
  std::string reason;  // the bound's provenance term when bound > 0
};

/// Whether the model covers every schedule of `p` once rounded down (the exact model's conditions
/// other than the grid: makespan objective, no cheaper overlapped units, split orders dominating a
/// mixed choice, costs in whole ticks).
bool relaxation_applies(const ir::Problem& p);

/// The largest bound the relaxation proves above `lower`, given a valid schedule of makespan
/// `upper` (it sets the model's horizon), within the limits. Z3 exceptions propagate.
Relaxation relaxed_bound(const ir::Problem& p, double lower, double upper, z3::context& ctx, const RelaxOptions& o);

}  // namespace schedc::solver
