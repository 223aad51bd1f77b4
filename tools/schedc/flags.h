#pragma once
// The flags commands share: the problem flags (override the input's problem), how to obtain the
// schedule, and the build settings. Each group adds itself to a CLI11 command and
// holds what was given; the phases read them (phases.h).

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "frontend/spec.h"
#include "support/diagnostics.h"

namespace schedc::driver {

/// A CLI11 check for a finite number in lo..hi (CLI::Range lets `nan` through).
CLI::Validator number_in(double lo, double hi);

/// The problem flags every command that takes a problem accepts; they override the spec.
struct ProblemFlags {
  std::optional<int> pp, microbatches;
  std::optional<std::string> vpp;  // a whole number, or `auto`
  std::optional<std::string> direction, placement, backward, cost, memory, objective, recompute;

  void add_to(CLI::App& cmd);
  bool any() const;
  /// Applies the set flags to `spec.problem`, records them in `spec.given` (and their units), then
  /// completes the problem (frontend::complete_problem: units, memory defaults, and the balance
  /// check with `check_balance` or when a flag sets a memory delta). A value that cannot be parsed
  /// or is out of its range, and a unit or balance error, is reported as `bad-flag` naming the
  /// flag; false then.
  bool apply(frontend::Spec& spec, bool check_balance, Diagnostics& diags) const;

 private:
  /// apply's work; sets `error` to the first bad flag's message.
  void apply_or_explain(frontend::Spec& spec, bool check_balance, std::string& error) const;
};

/// How to get the schedule when the input does not fix it: `--family NAME` or `--solve`.
struct ScheduleFlags {
  std::optional<std::string> family;
  bool solve = false;
  std::optional<double> time_limit;
  bool deterministic = false;
  std::optional<int> threads;
  bool quiet = false;
  bool debug = false;
  std::string z3_fault;                 // testing: "error" | "invalid-model" (hidden)
  std::vector<std::string> warm_start;  // schedules whose orders start the solver's search

  void add_to(CLI::App& cmd);
};

/// The positional input and the problem and schedule flags of a command that works on a schedule.
struct ScheduleArgs {
  std::string path;
  ProblemFlags problem;
  ScheduleFlags schedule;

  /// Adds `input` (optional: `--family`/`--solve` and the problem flags can stand for it) and the
  /// flag groups.
  void add_to(CLI::App& cmd);
};

/// `--format F` (one of `formats`; the first is the default) and `-o,--output FILE` (`-`, stdout,
/// when not given), for a command that writes one document.
struct OutputFlags {
  std::string format, output = "-";

  void add_to(CLI::App& cmd, const std::vector<std::string>& formats);
};

/// How the input names itself in generated headers: the path, or the flags that made it.
std::string source_name(const std::string& path, const ProblemFlags& problem, const ScheduleFlags& schedule);

/// Where and how `build`, `run` and `profile` compile executors.
struct BuildSettings {
  std::string cache_dir;  // "" = $SCHEDC_CACHE_DIR, $XDG_CACHE_HOME/schedc or ~/.cache/schedc
  bool verbose = false;
  /// The user's own stages (`--stage-source FILE`, repeatable): compiled into the executor from
  /// where they are, with their folder on the include path; their content is part of the cache key.
  std::vector<std::string> stage_sources;

  /// Adds --cache-dir, --verbose and --stage-source.
  void add_to(CLI::App& cmd);
};

}  // namespace schedc::driver
