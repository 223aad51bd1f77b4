#pragma once
// `executor --profile FILE`: measure instead of run (internal to schedrt). `schedc profile` turns
// the figures into a spec's `cost` block.

#include "schedrt/backend.h"
#include "schedrt/program.h"
#include "schedrt/run.h"

namespace schedrt {

/// Ranks take turns (the others wait at a barrier, so that nothing else runs on the cores or the
/// GPU): each times F, B and W (and FB when the program has FB costs) of the direction-0 stages it
/// holds, then every pair of neighbouring ranks times a ping-pong of one boundary tensor through
/// the backend's own transfers, then what every compute action and every message end costs beyond
/// the work (the overheads of docs/dsl.md). Rank 0 writes the JSON (microseconds per action, and the mlp
/// stage's FLOPs per action) to `options.profile_path` ("-": stdout). Returns the exit code.
int profile_rank(Backend& backend, const ProgramInfo& info, const RunOptions& options);

}  // namespace schedrt
