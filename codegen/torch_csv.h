#pragma once
// Import of PyTorch pipelining's compute-only CSV (the export is codegen::emit_torch_csv).

#include <map>
#include <optional>
#include <string>

#include "ir/schedule.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::codegen {

/// Reads `file` into a schedule. The number of ranks, stages, microbatches, the placement (looped,
/// vshape, else custom) and the backward mode (fused, split or mixed by the tokens used) are
/// inferred; the other problem fields come from `base`. A field listed in `given` (by its
/// frontend::Spec::given name) is taken from `base` and must agree with the file. Errors are
/// reported at the cell (`bad-csv`, `bad-token`, ...).
std::optional<ir::Schedule> import_torch_csv(const SourceManager& sources, int32_t file, const ir::Problem& base,
                                             const std::map<std::string, SourceLoc>& given, Diagnostics& diags);

}  // namespace schedc::codegen
