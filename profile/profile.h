#pragma once
// schedc::profile: from measured costs to a better schedule (`schedc profile`). The executor
// measures (runtime/src/profile.h, `--profile FILE`); this phase builds the program it measures
// with, reads its figures, writes them as a spec's `cost` block, and puts that block into the spec
// without touching any other byte of it.

#include <optional>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "ir/schedule.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::profile {

/// A schedule of `p` that runs every microbatch to completion before the next starts (all
/// forwards, then all backwards; B then W when the backward may be split): valid for every
/// placement and backward mode, deadlock-free, at the smallest memory, and made without a solver.
/// The profiler only needs a program with the problem's placement.
ir::Schedule probe_schedule(const ir::Problem& p);

/// What the executor measured, in microseconds per action: one value per stage (FB empty when not
/// measured) and the one-way time of one boundary tensor between neighbouring ranks (nullopt: one
/// rank, nothing moves).
struct Measured {
  std::vector<double> F, B, W, FB;
  std::optional<double> comm;
  /// Version 2: what the executor pays per compute action beyond the stage's work, and per message
  /// at each end (nullopt: not measured, or one rank for the message).
  std::optional<double> action_overhead, message_overhead;
  /// The part of action_overhead that is the stage's own cost per call, which F, B and W (and FB,
  /// twice: a unit pays two actions' overheads) include as measured: the block leaves it out of
  /// them, so that an action's work and its overhead are each counted once.
  double stage_overhead = 0;
  /// Backend, stage and sizes, for the block's comment ("cuda, mlp bf16, hidden 1024, ...").
  std::string how;
};

/// Reads the executor's `--profile` JSON (format `schedrt.profile`, version 1 or 2) for a problem of
/// `stages` stages. nullopt with `*error` set when it is not that.
std::optional<Measured> read_measured(const std::string& json, int32_t stages, std::string* error);

/// Values as written: three significant digits.
double round3(double v);

/// The `cost { ... }` block, one key per line, with a comment saying how it was measured; every
/// value in microseconds, written with its unit (`F = 183us`). A key is one number (the stages' mean) when its stages
/// are within 5% of the largest, else a per-stage list; `comm` is left out when nothing moves. The
/// overheads, when measured, are written too, and `comm` is then the one-way time less what the
/// message costs at its two ends (the model charges those to the actions: docs/dsl.md "Overheads").
std::string format_cost_block(const Measured& m);

/// The spec's text (file `file` of `sources`, a spec that parsed) with its top-level `cost` block,
/// from `cost` to its closing brace, replaced by `block`; without one, `block` goes on its own line
/// before `schedule = ...`, or at the end. Every other byte stays as it was. The block's extent comes
/// from the frontend's tokens, so comments and strings holding braces do not confuse it.
std::string replace_cost_block(const SourceManager& sources, int32_t file, const std::string& block);

/// Writes `text` to `path` so that the file is never half-written: a temporary file in the same
/// directory with the original's permissions, flushed to disk, then renamed over `path` (a
/// symbolic link is followed, and the file it points to is replaced). Refuses, and leaves the file
/// as it was, when it no longer holds `expected` (it changed while profiling). Reports `io`.
bool write_spec_atomically(const std::string& path, const std::string& expected, const std::string& text,
                           Diagnostics& diags);

}  // namespace schedc::profile
