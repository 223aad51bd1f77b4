#pragma once
// solver::synthesize: the portfolio of docs/design.md section 7. A lower bound from the problem; every
// applicable family and the greedy variants as incumbents; then Z3 searches for strictly better
// orders until it proves the incumbent optimal or the limits end the search with a stated gap.

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "ir/field.h"
#include "ir/params.h"
#include "ir/schedule.h"
#include "support/debug_log.h"
#include "support/diagnostics.h"

namespace schedc::solver {

inline constexpr int kMaxThreads = 256;
/// The range of `--time-limit` and the `time_limit` solve option, in seconds.
inline constexpr double kMinTimeLimit = 0.01;
inline constexpr double kMaxTimeLimit = 86400;

struct SolveOptions {
  double time_limit_s = 60;
  /// Threads of the local search (independent chains from the same incumbent, the best kept);
  /// 0: every core. Deterministic mode gives the same result for the same thread count.
  int threads = 0;
  /// Z3 resource limits instead of wall time: the same input gives the same output anywhere.
  bool deterministic = false;
  /// Progress lines on `progress` (nullptr: none); `tty` makes it one updating line.
  std::ostream* progress = nullptr;
  bool tty = false;
  /// Portfolio switches (for benchmarks and tests).
  bool use_families = true;
  bool use_greedy = true;
  bool use_z3 = true;
  bool use_local = true;
  /// Largest SAT model (literals) built; a larger exact model makes the grid coarser.
  int64_t max_literals = 80'000;
  /// When set and it becomes true (the CLI sets it on the first SIGINT or SIGTERM), every phase
  /// ends as at the time limit, Z3 included, and the best schedule so far is returned.
  const std::atomic<bool>* stop = nullptr;
  /// Debug lines (`--debug`): each greedy variant, the exact model's size, Z3 probes, windows.
  DebugLog debug;
  /// Testing only (`--z3-fault`): Z3 fails on purpose, to check that a failure becomes a warning
  /// and the solve still returns its best valid schedule. `Error`: the whole-instance model
  /// throws z3::exception; `InvalidModel`: its first model loses an action (an invalid schedule).
  enum class Z3Fault { None, Error, InvalidModel };
  Z3Fault z3_fault = Z3Fault::None;
  /// Warm starts: schedules (a tighter cap's answer, a previous solve before the costs changed, a
  /// hand-written order) whose per-rank orders are candidates from the start, re-timed under this
  /// problem. Each must have this problem's shape (ranks, stages per rank, placement, direction,
  /// microbatches, backward mode; see same_shape); an order over this problem's cap is fitted under
  /// it (fit_cap.h), overlapped units are split where this problem prices none, and one that is
  /// still invalid is skipped with a warning. The result is never worse than the best valid one:
  /// a schedule found for a tighter cap and given here makes a looser cap's solve monotone.
  struct WarmStart {
    std::string name;  // for progress, warnings and `found_by` (the CLI: the file's name)
    ir::Schedule schedule;
  };
  std::vector<WarmStart> warm_starts;
};

/// Whether a schedule of `a` is a schedule of `b` up to costs, memory and objective: the same
/// ranks, stages per rank, placement (stage-to-rank map), direction, microbatches and backward mode.
/// When not, `why` (if given) names the first difference, e.g. "microbatches 16, not 32".
bool same_shape(const ir::Problem& a, const ir::Problem& b, std::string* why = nullptr);

/// How far `objective` is above the proved `lower_bound`, as a share of the objective (0 when the
/// objective is 0): the gap every solve, plan and progress line reports.
inline double relative_gap(double objective, double lower_bound) {
  return objective > 0 ? (objective - lower_bound) / objective : 0;
}

enum class SolveStatus { Optimal, Feasible, Infeasible };
std::string_view to_string(SolveStatus s);

/// Why no schedule exists, in the spec's terms.
struct Infeasibility {
  int32_t rank = -1;
  double cap = 0;           // the rank's cap
  double needed = 0;        // the smallest cap any schedule needs on that rank
  double smallest_cap = 0;  // the smallest uniform cap that is feasible
  /// Problem fields in Z3's unsat core (e.g. MemoryCap), in the order of their names.
  std::vector<ir::Field> conflicting_fields;
  std::string explanation;  // one sentence
};

struct SolveResult {
  SolveStatus status = SolveStatus::Feasible;
  std::optional<ir::Schedule> schedule;  // verified; provenance filled
  double objective = 0;
  double lower_bound = 0;
  std::string bound_reason;
  double gap = 0;  // (objective - lower_bound) / objective
  std::string incumbent;
  double incumbent_value = 0;
  double seconds = 0;
  std::optional<Infeasibility> infeasible;
  /// Set when a valid schedule was below the computed lower bound (a bug in schedc): the bound is
  /// then dropped and nothing is claimed. The CLI prints it on stderr.
  std::string bound_error;
  /// The search was ended by `SolveOptions::stop` before its limits.
  bool interrupted = false;
  /// Z3 failures the search went on after (a Z3 error, a model giving an invalid schedule), one
  /// message each; the CLI shows them as `solver` warnings. The schedule is still valid.
  std::vector<std::string> warnings;
};

/// Reads `schedule = solve { ... }` options over `base`: time_limit, deterministic, threads,
/// families, greedy, z3, local. Unknown keys and bad values are reported at their location.
bool apply_solve_params(const ir::Params& params, SolveOptions& base, Diagnostics& diags);

/// Solves `p`. A Z3 failure ends only the Z3 phase it happens in, never the solve: it is listed
/// in `SolveResult::warnings` (and the provenance's `z3.error`), and the solve returns the best
/// schedule it has.
SolveResult synthesize(const ir::Problem& p, const SolveOptions& options);

}  // namespace schedc::solver
