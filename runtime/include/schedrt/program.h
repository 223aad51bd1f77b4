#pragma once
// What a generated executor tells the runtime about itself: the problem (ranks, stages,
// microbatches, placement, costs), one function per rank with the straight-line program, the same
// program as op tables (for the interpreter), and the defaults from the spec's runtime block.

#include <cstdint>

#include "schedrt/action.h"
#include "schedrt/options.h"

namespace schedrt {

class Context;

/// A rank's generated program: straight-line calls into the Context.
using RankFn = void (*)(Context&);

/// The op codes of the table form (Recompute last: the compact tables' codes 0..7 stay as they were).
enum class OpCode : uint8_t {
  Forward,
  BackwardInput,
  BackwardWeight,
  Backward,
  Overlapped,
  Post,
  Wait,
  WaitAll,
  Recompute
};

/// One op of the table form. Compute ops use `a` (and `b` for an overlapped unit); Post uses
/// transfers[first .. first+count); Wait uses needs[first .. first+count).
struct TableOp {
  OpCode code = OpCode::Forward;
  Action a;
  Action b;
  int32_t group = -1;
  int32_t first = 0;
  int32_t count = 0;
};

/// A rank's program as data, run by schedrt::interpret.
struct RankTable {
  const TableOp* ops = nullptr;
  int32_t num_ops = 0;
  const Transfer* transfers = nullptr;
  const Action* needs = nullptr;
};

/// The spec's runtime block: the executor's defaults (its flags override them; see RunOptions).
/// layers_per_stage stays empty here (ProgramInfo::layers_per_stage has the partition), as do
/// trace and code, which schedc does not compile in.
using RunDefaults = RuntimeSettings;

struct ProgramInfo {
  const char* source = "";  // what it was generated from
  int32_t ranks = 1;
  int32_t stages = 1;
  int32_t microbatches = 1;
  /// The number of pipelines (1 single, 2 bidirectional, or more); microbatches split evenly
  /// unless direction_of_mb says otherwise.
  int32_t directions = 1;
  /// Each microbatch's direction when the problem states the split (`directions = [6, 2]`);
  /// nullptr for the even split (m/directions each, in order).
  const int32_t* direction_of_mb = nullptr;
  /// stage_to_rank[direction * stages + stage], for every direction.
  const int32_t* stage_to_rank = nullptr;
  /// Per-stage costs in the problem's time units; cost_fb may be nullptr (an overlapped unit then
  /// costs F + B).
  const double* cost_f = nullptr;
  const double* cost_b = nullptr;
  const double* cost_w = nullptr;
  const double* cost_fb = nullptr;
  /// Per-stage cost of a recomputation; nullptr: the forward's.
  const double* cost_r = nullptr;
  /// checkpointed[mb * stages + stage] is 1 when the schedule recomputes (mb, stage): its forward
  /// keeps only its input (Stage::checkpoint) until R (Stage::recompute). nullptr: none is.
  const uint8_t* checkpointed = nullptr;
  /// The spec's `model` partition: the layers of each stage (`stages` entries), and whether the
  /// model has an embedding (stage 0) and a head (the last stage). nullptr without a model: the
  /// runtime block's `layers` on every stage.
  const int32_t* layers_per_stage = nullptr;
  bool embedding = false;
  bool head = false;
  double simulated_makespan = 0;  // in the problem's time units
  const int32_t* groups_per_rank = nullptr;
  const int32_t* ops_per_rank = nullptr;
  const RankFn* rank_fns = nullptr;
  const RankTable* tables = nullptr;  // may be nullptr: no interpreter
  RunDefaults defaults;

  int32_t num_directions() const { return directions; }
  int32_t direction_of(int32_t mb) const {
    if (directions <= 1) return 0;
    if (direction_of_mb) return direction_of_mb[mb];
    const int32_t per = microbatches / directions > 0 ? microbatches / directions : 1;
    return mb / per < directions - 1 ? mb / per : directions - 1;
  }
  int32_t rank_of(int32_t direction, int32_t stage) const { return stage_to_rank[direction * stages + stage]; }
};

/// Runs a rank's program from its table form: the interpreter that generated code is compared to.
void interpret(Context& ctx, const RankTable& table);

/// The compact table form schedc emits for large programs (`code = compact`, or `auto` above a
/// size; docs/dsl.md): plain integers, which compile fast, decoded once at startup.
///   data = {ops, transfers, needs,
///           ops x {code, a.kind, a.mb, a.stage, b.kind, b.mb, b.stage, group, first, count},
///           transfers x {dir, kind, mb, stage, peer, seq}, needs x {kind, mb, stage}}
/// The table's storage lives until the process ends. Throws schedrt::Error on data that does not
/// have that shape.
RankTable decode_table(const int32_t* data, int64_t size);

/// The executable's entry point: parses the flags (see `--help`), runs, prints the report.
/// Returns the process exit code: 0 ok, 1 a run or check failed, 2 a bad command line.
int main(int argc, char** argv, const ProgramInfo& info);

}  // namespace schedrt
