#pragma once
// The portfolio search behind solver::synthesize (docs/design.md section 7), shared by its two files:
// search.cpp (offers, Z3, windows, local search, the result) and construct.cpp (the constructive
// phase: families, fitted families, greedy variants, the cap ladder). The passes in order: solver/README.md.
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
#include "solver/synth/budget.h"
#include "solver/synth/encode.h"
#include "solver/synth/lns.h"
#include "solver/synth/local_search.h"
#include "solver/synth/progress.h"
#include "solver/synth/synthesize.h"
#include "support/deadline.h"

namespace schedc::solver::detail {

using Clock = std::chrono::steady_clock;

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
      : p_(p), o_(o), budget_(o.time_limit_s, o.deterministic, o.stop), reporter_(o.progress, o.tty, budget_.start()) {}

  SolveResult run();

 private:
  double elapsed() const { return budget_.elapsed(); }
  /// An interrupt (SolveOptions::stop) ends every phase as the time limit would.
  bool stopped() const { return budget_.stopped(); }
  /// Z3's resource units of `fraction` of the limit (deterministic mode).
  uint64_t z3_units(double fraction = 1) const {
    const uint64_t all = budget_.units(rate::kZ3Units);
    return fraction == 1 ? all : static_cast<uint64_t>(static_cast<double>(all) * fraction);
  }
  bool out_of_budget() const {
    if (stopped()) return true;
    return budget_.deterministic() ? rlimit_used_ + lns_.rlimit >= z3_units() : usable() <= 0;
  }
  /// A coarse whole-instance model may use share::kCoarseModel of the budget; windows get the rest.
  bool whole_model_out_of_budget() const {
    if (stopped()) return true;
    return budget_.deterministic() ? rlimit_used_ >= z3_units(share::kCoarseModel)
                                   : elapsed() >= budget_.limit() * share::kCoarseModel;
  }

  /// `verified`: s passed ir::verify already (generate_family's contract), so it is only simulated.
  void offer(ir::Schedule s, const std::string& name, bool verified = false,
             size_t priority = std::numeric_limits<size_t>::max());
  /// What is left of the limit once the driver's own verification and output are set aside.
  double usable() const { return budget_.remaining() - reserve(); }
  /// Seconds kept back for what follows the search (the driver verifies, simulates and writes
  /// the schedule: about three simulations, or one lower bound's time, whichever is more), and
  /// while there is no incumbent yet, for the sequential fallback too.
  double reserve() const { return std::max(reserve_, bound_seconds_) + (best_ ? 0 : bound_seconds_); }
  /// Where long work gives up: the usable time (never the clock in deterministic mode), or an
  /// interrupt.
  Deadline work_deadline() const { return budget_.deadline_in(usable()); }
  /// Too little usable time to build Z3's instance (the clock's verdict only).
  bool no_time_for_z3() const { return budget_.clock_short(usable(), share::kInstanceBounds * bound_seconds_); }
  void drop_bound(double value, const std::string& name);
  void warm_starts();
  void collect_incumbents();
  void z3_search();
  void relax();
  void lns();
  void local(double fraction);
  void progress(bool final = false);
  /// Z3 threw in `phase`: the search goes on with what it has; the failure is recorded for the
  /// provenance and as a warning.
  void z3_failed(const char* phase, const z3::exception& e);
  ir::Provenance provenance(const SolveResult& r) const;

  const ir::Problem& p_;
  const SolveOptions& o_;
  Budget budget_;
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
