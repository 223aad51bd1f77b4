#pragma once
// The runner (internal to schedrt): one rank's step loop, and the report rank 0 assembles.

#include <string>

#include "schedrt/backend.h"
#include "schedrt/program.h"
#include "schedrt/run.h"
#include "schedrt/stage.h"

namespace schedrt {

/// `s` as a JSON string literal (the trace writer's escaping).
std::string json_quote(const std::string& s);

/// The stage settings of a run.
StageConfig stage_config(const ProgramInfo& info, const RunOptions& options);

/// Runs `options.steps` steps of rank `backend.rank()`'s program, gathers every rank's results at
/// rank 0, and there prints the report (and writes the trace). Returns the exit code on rank 0.
int rank_main(Backend& backend, const ProgramInfo& info, const RunOptions& options);

/// Runs the whole model sequentially in this process (every microbatch through every stage, in
/// microbatch order) and returns the loss and, per stage, the gradient summed in the canonical
/// order: microbatches in ascending order, then the directions' sums in direction order (several directions)
/// problems. This is what `--check` compares with.
struct Reference {
  double loss = 0;
  std::vector<std::vector<double>> gradients;  // [stage]
};
Reference run_reference(const ProgramInfo& info, const StageConfig& config);

}  // namespace schedrt
