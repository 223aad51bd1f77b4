#pragma once
// The one limit a solve runs under (solver/README.md): the time limit, counted by the wall clock
// or, in deterministic mode, by work counts derived from it at the rates below, and the share of
// it each pass may take. Every pass of the order search (search.cpp, construct.cpp), the
// recomputation layer (recompute.cpp) and the plan layer (plan.cpp) asks its Budget; the rates and
// shares are stated here and nowhere else.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "support/deadline.h"

namespace schedc::solver {

/// Work a second on the 2-core CI machine: what a deterministic limit turns into counts, and what
/// the clock mode predicts a pass will take before it starts one it could not interrupt.
namespace rate {
/// Z3's resource units (rlimit counts propagations and conflicts).
inline constexpr double kZ3Units = 4e6;
/// SAT model literals built (estimate_literals). 69k literals in 2.0 s with three jobs on the
/// machine's cores, about 1.3 s alone: a model whose build would outlast the usable time is not
/// started, since the build cannot be interrupted by the clock.
inline constexpr double kModelLiterals = 5e4;
/// Z3 units a model literal's building and a window action's cut and splice stand for: Z3 counts
/// neither. A window's cut and splice took about 20 us an action (pp 4, vpp 4, m 16: 768 actions,
/// 15 ms a window), building 5e4 literals a second: 80 units each at kZ3Units. Without them a
/// deterministic limit of 0.15 s ran 342 windows in 5 s.
inline constexpr uint64_t kZ3UnitsPerModelLiteral = 80;
inline constexpr uint64_t kZ3UnitsPerWindowAction = 80;
/// Greedy work (actions x ranks scanned), for the number of Zero Bubble variants deterministic
/// mode runs.
inline constexpr double kGreedySlots = 4e7;
/// Actions the order simulator times (one evaluation of the local search times every action).
inline constexpr double kTimedActions = 2e7;
/// Actions ir::verify checks and simulates (pp 32, m 128: 16k actions in 6 ms): the evaluations
/// of the recomputation refinement, each a whole verification.
inline constexpr double kVerifiedActions = 2e6;
/// The plan bound's branch and bound: nodes times stages (a node is a pass over the stages), and
/// the actions ir::lower_bound passes over for a partition.
inline constexpr double kNodeStages = 1e7;
inline constexpr double kBoundActions = 2e7;
}  // namespace rate

/// The shares of a limit, in the order the passes run. "Of the limit" counts from the start of the
/// solve (a point the clock passes); "of what is left" from the pass's start.
namespace share {
// The order search (one problem).
/// Families fitted under caps below their peaks, and the pair greedy, run until this much of the
/// limit has passed (wall-clock mode; deterministic mode runs them all).
inline constexpr double kFittedFamilies = 1.0 / 8;
/// The greedy sweep (Zero Bubble variants, then the cap ladder): until this much of the limit, or
/// in deterministic mode as many variant runs as it buys at rate::kGreedySlots.
inline constexpr double kGreedySweep = 1.0 / 4;
/// A coarse-grid whole-instance model (it proves nothing) may use this much of the limit; the
/// windows get the rest. An exact model may use all of it.
inline constexpr double kCoarseModel = 0.6;
/// Freeing a model takes about this much of its building (pp 4, m 16: built in 1.24 s, released
/// in 0.24 s past a 3 s limit); the probes leave it.
inline constexpr double kModelRelease = 0.25;
/// The rounded-down relaxation's bound: at most this much of the limit.
inline constexpr double kRelaxation = 1.0 / 6;
/// The first local search: this much of what is left (the last one takes the rest); of it, each
/// of the few best incumbents gets this much to race from first.
inline constexpr double kFirstLocal = 0.5;
inline constexpr double kLocalRace = 0.1;
/// A window's model is built only where building it takes at most this much of what is left (so
/// a window begun before the deadline cannot run far past it); its check runs at most
/// kWindowSeconds, or kWindowZ3Units in deterministic mode.
inline constexpr double kWindowBuild = 0.5;
inline constexpr double kWindowSeconds = 3.0;
inline constexpr uint64_t kWindowZ3Units = 3'000'000;
/// Z3 is not started when the usable time is at most this many lower-bound computations (building
/// the instance alone takes a few passes over the problem: seconds at pp 1024).
inline constexpr double kInstanceBounds = 2;

// The recomputation layer (sub-solves per set of checkpointed stages, then a refinement).
/// The sub-solves and the refinements end by this much of the limit (the rest is the driver's:
/// verification and output).
inline constexpr double kRecomputeEnd = 0.95;
/// The refinements' drop passes: as many whole verifications as this much of the limit buys
/// (deterministic mode), shared between the candidates refined.
inline constexpr double kRecomputeDrops = 0.1;

// The plan layer (candidates of stages per rank, placement and partition).
/// The first look at each initial candidate, together.
inline constexpr double kPlanScreen = 0.3;
/// Moving one layer between neighbouring stages; each neighbour's search gets kPlanNeighbour of
/// the limit, and never less than kMinNeighbourSeconds.
inline constexpr double kPlanMoves = 0.35;
inline constexpr double kPlanNeighbour = 0.02;
inline constexpr double kMinNeighbourSeconds = 0.05;
/// Deterministic mode charges every search at least this much of the limit: a search's fixed work
/// (incumbents, families) is not in its share, so a plan runs at most twenty searches however small
/// their shares.
inline constexpr double kMinDeterministicCharge = 0.05;
/// The plan bound's branch and bound (kept back from the searches).
inline constexpr double kPlanBound = 0.1;
/// The leftover goes to the best candidate only when it is more than this much of the limit.
inline constexpr double kPlanLeftover = 0.01;
}  // namespace share

/// A solve's limit: `limit` seconds from its construction, of the wall clock or (deterministic) of
/// work, which the passes count in their own units (units()) or charge in seconds (charge()). An
/// interrupt (`stop`) ends it in both modes.
class Budget {
 public:
  using Clock = std::chrono::steady_clock;

  Budget(double limit_s, bool deterministic, const std::atomic<bool>* stop)
      : limit_(limit_s), deterministic_(deterministic), stop_(stop), start_(Clock::now()) {}

  double limit() const { return limit_; }
  bool deterministic() const { return deterministic_; }
  Clock::time_point start() const { return start_; }

  /// The interrupt came (SolveOptions::stop).
  bool stopped() const { return stop_ && stop_->load(std::memory_order_relaxed); }
  /// Wall seconds since the start (progress, provenance and the clock mode).
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  /// What the clock leaves of the limit; 0 once interrupted.
  double remaining() const { return stopped() ? 0 : limit_ - elapsed(); }

  /// The limit in units at `per_second`, saturating: a limit of `inf` (or 1e15 s) means no limit,
  /// never an overflowed cast.
  uint64_t units(double per_second) const {
    constexpr double kMax = static_cast<double>(uint64_t{1} << 62);
    const double u = limit_ * per_second;
    return u >= kMax ? uint64_t{1} << 62 : static_cast<uint64_t>(std::max(0.0, u));
  }

  /// Deterministic mode's account in seconds of the limit: the shares given to the nested solves.
  void charge(double seconds) { charged_ += seconds; }
  double charged() const { return charged_; }
  /// What is left: deterministic mode, the limit less what was charged; else the clock's.
  double left() const { return std::max(deterministic_ ? limit_ - charged_ : limit_ - elapsed(), 0.0); }

  /// The clock's verdict, never deterministic mode's (its counts decide there): whether `left`
  /// seconds are no more than `need`.
  bool clock_short(double left, double need = 0) const { return !deterministic_ && left <= need; }
  /// Whether, in wall-clock mode, more than `fraction` of the limit has passed.
  bool clock_past(double fraction) const { return !deterministic_ && elapsed() > limit_ * fraction; }

  /// Where long work gives up: `seconds` from now (clamped to [0, 1e9]) and the interrupt; in
  /// deterministic mode the interrupt only (the clock never decides there).
  Deadline deadline_in(double seconds) const {
    Deadline d;
    d.stop = stop_;
    if (!deterministic_)
      d.at = Clock::now() +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(seconds, 0.0, 1e9)));
    return d;
  }

  /// A Z3 timeout in milliseconds (Z3 takes an unsigned; larger limits saturate, at least 1 ms).
  static unsigned z3_timeout_ms(double seconds) {
    const double ms = std::max(1.0, seconds * 1000);
    return ms >= 4e9 ? 4'000'000'000u : static_cast<unsigned>(ms);
  }
  /// A Z3 rlimit (Z3 takes an unsigned; larger counts saturate).
  static unsigned z3_units(uint64_t units) { return static_cast<unsigned>(std::min<uint64_t>(units, 4'000'000'000u)); }

 private:
  double limit_;
  bool deterministic_;
  const std::atomic<bool>* stop_;
  Clock::time_point start_;
  double charged_ = 0;
};

}  // namespace schedc::solver
