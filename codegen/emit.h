#pragma once
// Output formats of a verified, simulated schedule (docs/design.md section 4): text grid, torch-csv,
// Perfetto trace JSON, SVG timeline. Each is one free function returning the file's content.

#include <optional>
#include <string>

#include "ir/program.h"
#include "ir/schedule.h"
#include "ir/simulate.h"

namespace schedc::codegen {

/// A compact time-scaled grid for terminals (`schedc show`), with the metrics underneath.
std::string emit_text(const ir::Schedule& s, const ir::Timeline& t);

/// A stage that runs on two ranks, as in a bidirectional problem (direction 0's rank and the
/// mirrored one): torch-csv cannot express it, as PyTorch's pipelining has one rank per stage.
struct StageOnTwoRanks {
  ir::StageId stage;
  ir::RankId first, second;
};
/// The first such stage of `p`, or nullopt when every stage runs on one rank.
std::optional<StageOnTwoRanks> torch_csv_conflict(const ir::Problem& p);

/// PyTorch pipelining's compute-only CSV: one row per rank, `{stage}{F|I|W|B}{mb}` tokens (our B
/// is I, our W is W, our BW is B), `(a;b)OVERLAP_F_B` for an overlapped unit. The schedule's
/// problem has no torch_csv_conflict (the caller refuses one).
std::string emit_torch_csv(const ir::Schedule& s);

/// PyTorch pipelining's compute-and-comms CSV (`_PipelineScheduleRuntime._load_csv(f,
/// format="compute_comms")`), from a lowered, verified program: per rank its compute tokens as
/// emit_torch_csv writes them, each posted transfer as `{stage}SEND_F{mb}`, `RECV_F`, `SEND_B` or
/// `RECV_B` in the program's posting order, and `{stage}REDUCE_GRAD` after each stage's last W or
/// fused B. The program's problem has no torch_csv_conflict (the caller refuses one).
std::string emit_torch_csv_comms(const ir::Program& prog);

/// Chrome/Perfetto trace of the simulated timeline (1 time unit = 1 ms), via schedrt's writer.
std::string emit_perfetto(const ir::Schedule& s, const ir::Timeline& t);

/// SVG timeline: ranks as rows, one box per action coloured by kind with the microbatch inside,
/// bubbles as gaps, and a legend with the metrics.
std::string emit_svg(const ir::Schedule& s, const ir::Timeline& t);

}  // namespace schedc::codegen
