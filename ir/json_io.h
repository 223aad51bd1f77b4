#pragma once
// Schedule JSON (docs/design.md section 4): writing with a stable key order, strict reading that names
// the JSON path (and file:line:col) of every problem.

#include <optional>
#include <string>
#include <string_view>

#include "ir/schedule.h"
#include "ir/simulate.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::ir {

/// The whole document; `metrics` is included when given. Ends with a newline.
std::string write_schedule_json(const Schedule& s, const Metrics* metrics);
/// The `problem` object alone, on one line.
std::string problem_json(const Problem& p);
/// The metrics object alone, on one line (`schedc simulate --format json`).
std::string metrics_json(const Metrics& m);
/// The provenance object alone, on one line (`schedc show --format json`).
std::string provenance_json(const Provenance& p);

/// Limits of reading (docs/formats.md): nesting depth, values in one document (3 per action of
/// the largest problem: its tokens, overlap pairs and slack), and errors reported per document.
inline constexpr size_t kMaxJsonDepth = 512;
inline constexpr size_t kMaxJsonValues = 3 * static_cast<size_t>(kMaxActions);
inline constexpr size_t kMaxJsonErrors = 20;

/// Reads a schedule document held in `sources` as `file`. Malformed input gets diagnostics with
/// the JSON path and returns nullopt. `metrics` is ignored; `provenance` is read leniently into
/// Schedule::provenance (a value that is not an object, and members of unknown names or types,
/// are skipped, never errors), so that writing what was read gives the same text.
std::optional<Schedule> read_schedule_json(const SourceManager& sources, int32_t file, Diagnostics& diags);

/// The location of the JSON value at `pointer` (e.g. "/ranks/1/4") in `file`.
SourceLoc locate_json(const SourceManager& sources, int32_t file, std::string_view pointer);

}  // namespace schedc::ir
