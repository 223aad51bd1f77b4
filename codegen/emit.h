#pragma once
// Output formats of a verified, simulated schedule (DESIGN.md section 4): text grid, torch-csv,
// Perfetto trace JSON, SVG timeline. Each is one free function returning the file's content.

#include <string>

#include "ir/schedule.h"
#include "ir/simulate.h"

namespace schedc::codegen {

/// A compact time-scaled grid for terminals (`schedc show`), with the metrics underneath.
std::string emit_text(const ir::Schedule& s, const ir::Timeline& t);

/// PyTorch pipelining's compute-only CSV: one row per rank, `{stage}{F|I|W|B}{mb}` tokens (our B
/// is I, our W is W, our BW is B), `(a;b)OVERLAP_F_B` for an overlapped unit.
std::string emit_torch_csv(const ir::Schedule& s);

/// Chrome/Perfetto trace of the simulated timeline (1 time unit = 1 ms), via schedrt's writer.
std::string emit_perfetto(const ir::Schedule& s, const ir::Timeline& t);

/// SVG timeline: ranks as rows, one box per action coloured by kind with the microbatch inside,
/// bubbles as gaps, and a legend with the metrics.
std::string emit_svg(const ir::Schedule& s, const ir::Timeline& t);

}  // namespace schedc::codegen
