#pragma once
// Order-space local search (docs/design.md section 7, the workhorse at scale): simulated annealing over
// per-rank orders, every candidate timed exactly by ir::OrderSimulator and kept within the memory
// cap. Moves: a weight gradient into an idle gap (the move that turns 1F1B-like orders into zero
// bubble ones), an adjacent swap, a shift of one action, a chain that shifts one microbatch's
// action on a run of consecutive stages at once, and, where the problem prices overlapped F&B
// units (`FB`), pairing a forward with a nearby backward into a unit and breaking a unit up.
// Never returns worse than its start.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ir/schedule.h"
#include "support/deadline.h"

namespace schedc::solver {

struct LocalSearchOptions {
  /// Its end by the clock and the interrupt (a Budget's deadline_in); the default, none: only
  /// `max_evals` limits it.
  Deadline deadline;
  /// Evaluations (simulations of a candidate); the deterministic budget.
  uint64_t max_evals = 1'000'000;
  uint64_t seed = 1;
  /// Stop as soon as the objective (simulator ticks) is at or below this (a proven bound).
  int64_t target = 0;
  /// Time each candidate incrementally (ir::OrderSimulator::rerun, re-timing only what the move
  /// reaches); false times every candidate whole. Both give the same search, step for step;
  /// bench/solver --evals measures the difference.
  bool incremental = true;
};

inline constexpr int kNumMoves = 6;
/// "w-gap", "swap", "shift", "chain", "pair", "unpair".
std::string_view move_name(int move);
/// Whether the search pairs and unpairs overlapped F&B units on `p` (moves 4 and 5): when the
/// problem declares `FB`, the only way a unit can cost less than its members.
bool overlap_moves_apply(const ir::Problem& p);

struct LocalSearchStats {
  uint64_t evals = 0;
  uint64_t accepted = 0;
  uint64_t restarts = 0;
  /// Action timings the evaluations did (at most evals times the actions).
  uint64_t retimed = 0;
  double seconds = 0;
  std::array<uint64_t, kNumMoves> tried{}, improved_best{};

  LocalSearchStats& operator+=(const LocalSearchStats& o) {
    evals += o.evals;
    accepted += o.accepted;
    restarts += o.restarts;
    retimed += o.retimed;
    seconds += o.seconds;
    for (size_t m = 0; m < tried.size(); ++m) {
      tried[m] += o.tried[m];
      improved_best[m] += o.improved_best[m];
    }
    return *this;
  }
};

/// The best schedule found from `start` (which must be valid; its overlapped units are kept, moved
/// or broken up like any other choice); its objective is never above `start`'s. Deterministic for
/// a given seed and evaluation budget.
ir::Schedule local_search(const ir::Schedule& start, const LocalSearchOptions& options, LocalSearchStats& stats);

}  // namespace schedc::solver
