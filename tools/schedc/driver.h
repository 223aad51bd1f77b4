#pragma once
// The driver: the compiler as its list of phases (phases.h), run in order up to the one a command
// needs, printing the data after any phase asked for (--dump-after). Each command (cmd_*.cpp)
// fills a Request, runs the phases with run_until, and formats what they made.

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/schedc/flags.h"
#include "tools/schedc/phases.h"
#include "tools/schedc/runtime_flags.h"
#include "tools/schedc/session.h"

namespace schedc::driver {

/// `--dump-after PHASE` (repeatable, or comma-separated): print the data after each phase named,
/// on stderr (docs/driver.md says what each phase prints).
struct DumpFlags {
  std::vector<std::string> phases;

  /// Adds --dump-after; its help lists the phases up to `last`, the last one the command runs.
  void add_to(CLI::App& cmd, Phase last);
};

/// What a command asks of the driver.
struct Request {
  ScheduleArgs args;             // the input, the problem flags, how to obtain the schedule
  Phase last = Phase::Simulate;  // the last phase the command runs (what --dump-after may name)
  DumpFlags dump;
  bool probe = false;               // profile: the schedule phase makes a probe of the problem
  RuntimeFlags runtime;             // emit, build, run, profile: the runtime flags given
  bool runtime_at_launch = false;   // run, profile: they go on the executor's command line, else
                                    // they are compiled in
  bool check = false;               // run --check: the stage needs a sequential reference
  BuildSettings build;              // build, run, profile
  std::vector<std::string> launch;  // run, profile: more arguments for the executor

  /// Sets `last` and adds the input with the problem and schedule flags (ScheduleArgs) and
  /// --dump-after.
  void add_to(CLI::App& cmd, Phase last_phase);
};

/// What the phases made so far; each phase fills in its part.
struct Compilation {
  std::optional<Phase> done;                       // the last phase that ran
  std::optional<Input> input;                      // load
  std::optional<ir::Schedule> schedule;            // schedule (valid from verify on)
  std::optional<ir::Timeline> timeline;            // simulate
  std::optional<ir::Program> program;              // lower (valid from verify-program on)
  std::optional<Emitted> emitted;                  // emit
  std::optional<codegen::RuntimeConfig> settings;  // build: the settings the executor runs with
  std::string executable;                          // build
  int exit_status = 0;                             // run: the executor's
};

/// Runs the phases after `c.done` up to and including `until` (default: `rq.last`), printing the
/// data after each phase `rq.dump` names. False after reporting; `c` then holds what the phases
/// before the failing one made. A command that checks something between two phases calls this
/// twice.
bool run_until(Session& s, const Request& rq, Compilation& c, std::optional<Phase> until = std::nullopt);

}  // namespace schedc::driver
