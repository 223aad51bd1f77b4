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
#include "ir/field.h"
#include "ir/model.h"
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
  // Explicit: per-rank orders with the location of every token and of each order (its `rank`),
  // and overlapped F&B units (sorted first indices i of units (i, i+1)) written as
  // `(F7.s0 B3.s7)`. read_input moves them into Input::schedule and its source map.
  std::vector<std::vector<ir::Action>> ranks;
  std::vector<std::vector<int32_t>> overlap;
  std::vector<std::vector<SourceLoc>> token_locs;
  std::vector<SourceLoc> rank_locs;
};

struct Spec {
  int32_t file = -1;
  ir::Problem problem;
  /// The fields the file set (and the flags, without a location), with the location of each
  /// value. Problem fields not listed hold their defaults, and a family may choose them.
  ir::FieldLocs given;
  /// The unit each cost or memory field is written in (CostF -> "ms"), for the fields given with
  /// one; complete_problem() expresses them all in one unit per dimension.
  ir::FieldUnits units;
  /// `memory { balanced = false }`: the memory deltas need not cancel per microbatch and stage.
  bool balanced = true;
  /// `stages_per_rank = auto` (or `--vpp auto`): `problem` states one stage per rank, and the
  /// schedule phase solves it cut into 1, 2 and 4 stages per rank (ir::with_stages_per_rank),
  /// keeping the best.
  bool stages_per_rank_auto = false;
  /// `placement = auto`: the solve's plan tries looped, V-shape and wave (solver/synth/plan.h);
  /// `problem` is looped until it has.
  bool placement_auto = false;
  /// `model { ... }`: the layers each stage runs (empty without a model); the costs and memory
  /// derived from them are in `problem`.
  std::vector<int32_t> layers_per_stage;
  /// The model itself, its values in the problem's units (after completion): what the solver's
  /// plan layer cuts when the partition is its to choose. nullopt without a model.
  std::optional<ir::Model> model;
  /// `model { partition = auto }`: the solve chooses the layers per stage (solver/plan.h);
  /// until it has, `layers_per_stage` and the problem hold the balanced partition, or where its
  /// static memory is over the cap one whose static memory fits (`partition_fits_static`).
  bool partition_auto = false;
  bool partition_fits_static = false;
  SourceLoc partition_loc;  // of the `partition` value, when written
  /// `embedding { }` and `head { }` beside the model: stage 0 runs the one, the last stage the other.
  bool has_embedding = false;
  bool has_head = false;
  ScheduleSource schedule;
  std::vector<ir::Expectation> expect;
  /// `runtime { ... }`: key/value pairs for codegen and the runtime.
  ir::Params runtime;
  SourceLoc runtime_loc;

  bool is_given(ir::Field field) const { return given.count(field) != 0; }
  /// Location of a field's value, or the file itself when the field was not written.
  SourceLoc loc_of(ir::Field field) const;
};

/// Completes a problem once the file and the flags are in (docs/dsl.md, "Units" and `memory`):
/// - values given with units are expressed in the finest unit of their dimension, which becomes
///   `problem.time_unit` / `memory_unit`; a nonzero value without a unit beside values with one
///   is an error, and so is a cost or `memory.F` left to its default then;
/// - `memory.B` and `memory.W` not given follow `memory.F`: -F/2 each, or what balances the one
///   given;
/// - with `check_balance`, F + B + W must be 0 on every stage unless `balanced` is false.
/// `expect` clauses written with units are converted too. Errors name the field they concern.
std::vector<ir::ProblemError> complete_problem(ir::Problem& problem, const ir::FieldLocs& given, ir::FieldUnits& units,
                                               std::vector<ir::Expectation>* expect, bool balanced, bool check_balance);
inline std::vector<ir::ProblemError> complete_problem(Spec& spec, bool check_balance) {
  return complete_problem(spec.problem, spec.given, spec.units, &spec.expect, spec.balanced, check_balance);
}

/// Lexes, parses and checks `file` (held in `sources`). Reports every error it finds; returns
/// nullopt when there was any.
std::optional<Spec> parse_spec(const SourceManager& sources, int32_t file, Diagnostics& diags);

}  // namespace schedc::frontend
