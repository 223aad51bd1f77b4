#pragma once
// The time-indexed order encoding of a scheduling instance for Z3's SAT engine (the prototype's
// best variant, generalised): literal Y(a, t) <=> start(a) <= t over each action's window
// [head, horizon - dur - tail]; precedence with lags as binary clauses; one running action per rank
// and step as at-most-one constraints; the memory cap as pseudo-Boolean constraints on prefix sums;
// deadlines (makespan or per-rank span) as assumptions so that one solver serves every probe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <z3++.h>

#include "solver/synth/instance.h"

namespace schedc::solver {

struct EncodingStats {
  int64_t literals = 0;
  int64_t clauses = 0;
  int64_t cardinality = 0;
  int64_t pseudo_boolean = 0;
  int64_t memory_clauses = 0;
};

/// Literals a model of `inst` at `horizon` would need: each action's window, twice (start and
/// running literals); what the size budgets compare.
int64_t estimate_literals(const Instance& inst, int32_t horizon);

class TimeIndexedModel {
 public:
  /// Builds the constraints for schedules that finish within `horizon` steps. `max_span` adds
  /// per-rank origins so that probes can bound every rank's span instead of the makespan.
  /// `stop` (an interrupt) ends the building early: then interrupted() is true and the model is
  /// unusable (it proves nothing, feasible_horizon() included).
  TimeIndexedModel(const Instance& inst, int32_t horizon, bool max_span, z3::context& ctx,
                   const std::atomic<bool>* stop = nullptr);
  bool interrupted() const { return interrupted_; }

  /// False when no schedule fits the horizon at all (some window is empty).
  bool feasible_horizon() const { return feasible_; }
  int32_t horizon() const { return horizon_; }
  const EncodingStats& stats() const { return stats_; }

  /// Is there a schedule with makespan (or every rank's span) <= bound steps? Uses the solver's
  /// current limits; `unknown` when they ran out.
  z3::check_result probe(int32_t bound);
  /// After a `sat` probe: per-rank node orders by start step; `makespan` gets the model's own
  /// makespan in steps.
  std::vector<std::vector<int32_t>> orders(int32_t* makespan = nullptr) const;
  /// Adds `bound` as proved infeasible (learned clauses stay).
  void forbid(int32_t bound);
  z3::solver& solver() { return solver_; }
  /// Z3's deterministic work count ("rlimit count") of this model's solver so far: what the
  /// deterministic budgets are charged.
  uint64_t rlimit_count() const;

 private:
  z3::expr y(size_t a, int32_t t) const;
  z3::expr origin(size_t r, int32_t t) const;
  void build();
  /// The cap of rank `r` as clauses over the symmetric order (one stage per rank); false when the
  /// rank does not have that shape and needs pseudo-Boolean constraints.
  bool memory_counters(size_t r);
  z3::expr deadline_literal(int32_t bound);

  const Instance& inst_;
  int32_t horizon_;
  bool max_span_;
  z3::context& ctx_;
  z3::solver solver_;
  bool feasible_ = true;
  bool interrupted_ = false;
  const std::atomic<bool>* stop_ = nullptr;
  /// True (and interrupted_ set) once `stop_` says so.
  bool stopping() { return interrupted_ = interrupted_ || (stop_ && stop_->load(std::memory_order_relaxed)); }
  std::vector<int32_t> early_, late_;          // window of each action's start
  std::vector<std::vector<z3::expr>> y_;       // y_[a][t - early]
  std::vector<std::vector<z3::expr>> origin_;  // max-span: [r][t] <=> origin(r) <= t
  std::vector<std::pair<int32_t, z3::expr>> deadlines_;
  EncodingStats stats_;
};

}  // namespace schedc::solver
