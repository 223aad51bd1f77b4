#pragma once
// The JSON documents of `check`, `verify`, `families` and `show --format json` (docs/formats.md,
// "Command output as JSON"), laid out as schedule JSON is: one top-level key a line, objects on
// one line; the problem and metrics objects come from ir/json_io's writers.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/spec.h"
#include "ir/expect.h"
#include "ir/json_line.h"
#include "ir/params.h"
#include "ir/schedule.h"
#include "ir/simulate.h"

namespace schedc::driver {

using ojson = nlohmann::ordered_json;

/// A number as schedule JSON writes it (integral values without a fraction), and `j` on one line
/// with ", " and ": " separators, as schedule JSON writes its objects.
using ir::json_line;
using ir::json_number;

/// `{"format": FORMAT, "version": 1, KEY: VALUE, ...}` with one key a line; each value is JSON
/// text (json_line, ir::problem_json, ...). Ends with a newline.
std::string json_document(const std::string& format, const std::vector<std::pair<std::string, std::string>>& fields);

/// An `expect` clause: `{"kind": "metric" | "per_rank" | "optimal" | "same_as", ...}`.
ojson expectation_json(const ir::Expectation& e);

/// Named parameters (family parameters, solve options) as an object, in the order written.
ojson params_json(const ir::Params& params);

/// How a spec says to obtain its schedule: `{"kind": "none" | "explicit" | "family" | "solve",
/// "family": NAME, "params": {...}}` (nothing is scheduled by `check`).
ojson schedule_source_json(const frontend::ScheduleSource& src);

/// `show --format json`: every action's start and end, one rank a line, with the metrics.
std::string timeline_json(const ir::Schedule& sched, const ir::Timeline& t);

}  // namespace schedc::driver
