#pragma once
// The portfolio search behind solver::synthesize (docs/design.md section 7), shared by its two files:
// search.cpp (offers, Z3, windows, local search, the result) and construct.cpp (the constructive
// phase: families, fitted families, greedy variants, the cap ladder, the steady-state block).
// Internal to solver/synth.

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <z3++.h>

#include "ir/provenance.h"
#include "ir/schedule.h"
#include "solver/synth/encode.h"
#include "solver/synth/lns.h"
#include "solver/synth/local_search.h"
#include "solver/synth/progress.h"
#include "solver/synth/synthesize.h"
#include "support/deadline.h"

namespace schedc::solver::detail {

using Clock = std::chrono::steady_clock;

// Greedy work (actions × ranks scanned) per second on the 2-core CI machine, for the number of
// Zero Bubble variants deterministic mode runs.
constexpr double kGreedySlotsPerSecond = 4e7;
// Actions the order simulator times per second (one evaluation times every action), for the local
// search's evaluation budget in deterministic mode.
constexpr double kTimedActionsPerSecond = 2e7;

// Resource units per second of the time limit in deterministic mode (Z3's rlimit counts
// propagations and conflicts; about this many pass per second on the 2-core CI machine).
constexpr double kRlimitPerSecond = 4e6;
// SAT model literals (estimate_literals) built per second: a model whose build would outlast the
// usable time is not started (the build cannot be interrupted by the clock). Measured on the
// 2-core machine: 69k literals in 2.0 s with three jobs on its cores, about 1.3 s alone.
constexpr double kModelLiteralsPerSecond = 5e4;

struct Candidate {
  ir::Schedule schedule;
  double value = 0;  // objective, time units
  std::string name;
  /// Between equal values the lower priority wins: families by their registry place, so that the
  /// order they are tried in does not change the result; everything else comes later and loses.
  size_t priority = std::numeric_limits<size_t>::max();
};

class Search {
 public:
  Search(const ir::Problem& p, const SolveOptions& o)
      : p_(p), o_(o), start_(Clock::now()), reporter_(o.progress, o.tty, start_) {}

  SolveResult run();

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  /// An interrupt (SolveOptions::stop) ends every phase as the time limit would.
  bool stopped() const { return o_.stop && o_.stop->load(std::memory_order_relaxed); }
  double remaining() const { return stopped() ? 0 : o_.time_limit_s - elapsed(); }
  bool out_of_budget() const {
    if (stopped()) return true;
    return o_.deterministic ? rlimit_used_ + lns_.rlimit >= rlimit_budget() : usable() <= 0;
  }
  /// The whole-instance model may use this share of the budget; windows get the rest.
  bool whole_model_out_of_budget() const {
    if (stopped()) return true;
    return o_.deterministic ? rlimit_used_ >= rlimit_budget() * 6 / 10 : elapsed() >= o_.time_limit_s * 0.6;
  }
  /// Saturates: a limit of `inf` (or 1e15 s) means no resource limit, never an overflowed cast.
  uint64_t rlimit_budget() const {
    constexpr double kMax = static_cast<double>(uint64_t{1} << 62);
    double units = o_.time_limit_s * kRlimitPerSecond;
    return units >= kMax ? uint64_t{1} << 62 : static_cast<uint64_t>(std::max(0.0, units));
  }
  /// A Z3 timeout in milliseconds (Z3 takes an unsigned; larger limits saturate).
  static unsigned timeout_ms(double seconds) {
    double ms = std::max(1.0, seconds * 1000);
    return ms >= 4e9 ? 4'000'000'000u : static_cast<unsigned>(ms);
  }

  /// `verified`: s passed ir::verify already (generate_family's contract), so it is only simulated.
  void offer(ir::Schedule s, const std::string& name, bool verified = false,
             size_t priority = std::numeric_limits<size_t>::max());
  /// What is left of the limit once the driver's own verification and output are set aside.
  double usable() const { return remaining() - reserve(); }
  /// Seconds kept back for what follows the search (the driver verifies, simulates and writes
  /// the schedule: about three simulations, or one lower bound's time, whichever is more), and
  /// while there is no incumbent yet, for the sequential fallback too.
  double reserve() const { return std::max(reserve_, bound_seconds_) + (best_ ? 0 : bound_seconds_); }
  /// Where long work gives up: the usable time (never the clock in deterministic mode), or an
  /// interrupt.
  Deadline work_deadline() const {
    Deadline d;
    d.stop = o_.stop;
    if (!o_.deterministic)
      d.at = Clock::now() +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(usable(), 0.0, 1e9)));
    return d;
  }
  void drop_bound(double value, const std::string& name);
  void warm_starts();
  void collect_incumbents();
  void steady_state();
  void z3_search();
  void relax();
  void lns();
  void local(double share);
  void progress(bool final = false);
  /// Z3 threw in `phase`: the search goes on with what it has; the failure is recorded for the
  /// provenance and as a warning.
  void z3_failed(const char* phase, const z3::exception& e);
  ir::Provenance provenance(const SolveResult& r) const;

  const ir::Problem& p_;
  const SolveOptions& o_;
  Clock::time_point start_;
  std::optional<Candidate> best_;
  /// The best schedule without overlapped units: the local search's start when best_ has them.
  std::optional<Candidate> best_plain_;
  /// The few best incumbents of distinct values that the local search may start from (with
  /// units where the problem prices them, else without): its first run races them.
  std::vector<Candidate> starts_;
  static constexpr size_t kStarts = 3;
  void keep_start(const ir::Schedule& s, double v, const std::string& name, size_t priority);
  /// Local search chains from `start` for `evals` evaluations (deterministic mode) or `seconds`.
  void chains(const ir::Schedule& start, uint64_t evals, double seconds);
  std::string first_incumbent_;
  double first_incumbent_value_ = 0;
  double lower_ = 0;
  std::string bound_reason_;
  bool proved_ = false;
  bool bound_dropped_ = false;
  std::string bound_error_;
  uint64_t rlimit_used_ = 0;
  double reserve_ = 0;        // from the slowest verification or simulation seen (offer)
  double bound_seconds_ = 0;  // what the lower bound took: one pass over the problem
  int probes_ = 0;
  LnsStats lns_;
  LocalSearchStats local_;
  uint64_t local_budget_ = 0;  // evaluations in deterministic mode
  int local_runs_ = 0;
  size_t local_threads_ = 0;
  EncodingStats encoding_;
  std::string method_ = "none";
  std::string solver_error_;           // the last Z3 failure, for the provenance
  std::vector<std::string> warnings_;  // every Z3 failure, for SolveResult::warnings
  std::vector<std::pair<std::string, std::variant<uint64_t, double>>> z3_stats_;  // Z3's deterministic ones
  bool bound_known_ = false;  // lower_ holds the computed bound (progress lines show it)
  // Last: its timer thread stops before anything it could read goes away.
  ProgressReporter reporter_;
};

/// Problems with recomputation (recompute.cpp): solved through problems without it, one per set
/// of checkpointed stages, with the recomputations placed afterwards.
SolveResult synthesize_recompute(const ir::Problem& p, const SolveOptions& options);

}  // namespace schedc::solver::detail
