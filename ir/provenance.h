#pragma once
// ir::Provenance: where a schedule came from (explicit orders, a family, the solver, an import).
// Schedule JSON writes it as `provenance` and reads it back (ir/json_provenance.cpp, the only code that
// knows its JSON form); `schedc verify --optimal` and `schedc show` read the struct.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/params.h"

namespace schedc::ir {

/// The status words of a solve record (`provenance.solve.status` in schedule JSON): the solver's
/// SolveStatus spelled once, for what writes a record and what reads one back.
inline constexpr std::string_view kStatusOptimal = "optimal";
inline constexpr std::string_view kStatusFeasible = "feasible";
inline constexpr std::string_view kStatusInfeasible = "infeasible";

/// What `schedule = solve` did (docs/solver.md): its claim, the bound behind it, and counters.
struct SolveRecord {
  std::string status;  // kStatusOptimal or kStatusFeasible (any text read from a document)
  /// Whether the record claims a proved optimum (what `expect { optimal }` and --optimal test).
  bool claims_optimal() const { return status == kStatusOptimal; }
  std::optional<double> objective;
  double lower_bound = 0;
  double gap = 0;         // (objective - lower_bound) / objective
  std::string bound;      // the bound term that won, in words
  std::string incumbent;  // the first incumbent, and its objective
  double incumbent_value = 0;
  std::string found_by;           // what found the final schedule
  std::string method;             // the exact model's kind ("time-indexed SAT, exact", ...) or "none"
  std::optional<double> seconds;  // wall time; none in deterministic mode (written as null)
  bool deterministic = false;
  bool interrupted = false;  // ended by SIGINT/SIGTERM before its limits (written only when true)

  /// The Z3 phases' counters.
  struct Z3 {
    int64_t probes = 0, literals = 0, clauses = 0, cardinality = 0, pseudo_boolean = 0;
    int64_t lns_windows = 0, lns_models = 0, lns_improved = 0, lns_largest_literals = 0;
    /// Z3's deterministic statistics in Z3's order: counts, or real numbers.
    std::vector<std::pair<std::string, std::variant<uint64_t, double>>> statistics;
    std::string error;  // the last Z3 failure the search went on after (written when not empty)
  } z3;

  /// The order-space local search's counters.
  struct LocalSearch {
    int64_t threads = 0;
    uint64_t evaluations = 0, accepted = 0, restarts = 0;
    struct Move {
      std::string name;
      uint64_t tried = 0, improved = 0;
    };
    std::vector<Move> moves;  // in the search's order
  } local_search;
};

struct Provenance {
  /// "explicit", "family", "solve", "torch-csv", "profile probe" (any text read from a document).
  std::string source;
  /// source "family": the family and the parameters it was given (written when not empty).
  std::string family;
  Params params;
  /// source "solve" (read back also from a document that states a `status` without it).
  std::optional<SolveRecord> solve;

  /// A provenance that only names its source.
  static Provenance of(std::string source) {
    Provenance p;
    p.source = std::move(source);
    return p;
  }
};

}  // namespace schedc::ir
