#pragma once
// frontend::Spec: what a `.sched` file says, after parsing and semantic checks. The problem, which
// problem fields the file set (and where), how to obtain the schedule, `expect` clauses, and the
// runtime block (interpreted by codegen/runtime).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/action.h"
#include "ir/expect.h"
#include "ir/params.h"
#include "ir/problem.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::frontend {

enum class SourceKind { None, Explicit, Family, Solve };

/// `schedule = explicit {...}`, `schedule = family NAME {...}` or `schedule = solve {...}`.
struct ScheduleSource {
  SourceKind kind = SourceKind::None;
  SourceLoc loc;       // of the value after `schedule =`
  std::string family;  // Family: its name
  ir::Params params;   // Family: its parameters; Solve: solver options
  // Explicit: per-rank orders with the location of every token, and overlapped F&B units
  // (sorted first indices i of units (i, i+1)) written as `(F7.s0 B3.s7)`.
  std::vector<std::vector<ir::Action>> ranks;
  std::vector<std::vector<int32_t>> overlap;
  std::vector<std::vector<SourceLoc>> token_locs;
};

struct Spec {
  int32_t file = -1;
  ir::Problem problem;
  /// The problem fields the file set, with the location of each value: "ranks",
  /// "stages_per_rank", "microbatches", "direction", "placement", "stage_to_rank", "backward",
  /// "objective", "cost.F", "cost.B", "cost.W", "cost.comm", "cost.FB", "memory.F", "memory.B",
  /// "memory.W", "memory.cap". Fields not listed hold their defaults, and a family may choose them.
  std::map<std::string, SourceLoc> given;
  ScheduleSource schedule;
  std::vector<ir::Expectation> expect;
  /// `runtime { ... }`: key/value pairs for codegen and the runtime.
  ir::Params runtime;
  SourceLoc runtime_loc;

  bool is_given(const std::string& field) const { return given.count(field) != 0; }
  /// Location of a field's value, or the file itself when the field was not written.
  SourceLoc loc_of(const std::string& field) const;
};

/// Lexes, parses and checks `file` (held in `sources`). Reports every error it finds; returns
/// nullopt when there was any.
std::optional<Spec> parse_spec(const SourceManager& sources, int32_t file, Diagnostics& diags);

}  // namespace schedc::frontend
