#pragma once
// Reading PyTorch pipelining's CSV (compute-only, or compute-and-comms) into a schedule; the writers
// are codegen::emit_torch_csv and emit_torch_csv_comms, and both spell actions as ir/torch_token.h
// says.

#include <optional>
#include <string>
#include <vector>

#include "ir/field.h"
#include "ir/schedule.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::frontend {

/// Reads `file` into a schedule. The number of ranks, stages, microbatches, the placement (looped,
/// vshape, else custom) and the backward mode (fused, split or mixed by the tokens used) are
/// inferred; the other problem fields come from `base`. A field listed in `given` is taken from
/// `base` and must agree with the file. Errors are
/// reported at the cell (`bad-csv`, `bad-token`, ...). `action_locs`, when given, receives the
/// cell of each action of each rank's order.
std::optional<ir::Schedule> read_torch_csv(const SourceManager& sources, int32_t file, const ir::Problem& base,
                                           const ir::FieldLocs& given, Diagnostics& diags,
                                           std::vector<std::vector<SourceLoc>>* action_locs = nullptr);

}  // namespace schedc::frontend
