#pragma once
// The steps `schedc emit`, `build` and `run` share after obtain_schedule: read the runtime block
// and flags, lower, verify the program, emit C++; and building that C++ (cached by content) and
// launching it on a backend.

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "codegen/emit_cpp.h"
#include "codegen/runtime_config.h"
#include "schedrt/stage.h"
#include "ir/program.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/runtime_flags.h"

namespace schedc::driver {

/// A schedule lowered, verified and emitted as C++.
struct Executor {
  ir::Schedule schedule;
  ir::Program program;
  codegen::RuntimeConfig runtime;
  std::vector<codegen::EmittedFile> files;
  SourceLoc stage_loc;  // where the runtime block names the stage (none: the default)
};

/// How the input names itself in generated headers: the path, or the flags that made it.
std::string source_name(const std::string& path, const ProblemFlags& problem, const ScheduleFlags& schedule);

/// Lowers `sched`, verifies the program (a deadlock or malformed program is reported as an
/// `internal` error: exit code 3), reads the runtime block (+ `flags` when given) and emits C++.
/// nullopt after reporting.
std::optional<Executor> make_executor(Session& s, const Input& in, ir::Schedule sched, const RuntimeFlags* flags,
                                      const std::string& source);

/// load_input + obtain_schedule + make_executor, for `emit`, `build` and `run`.
std::optional<Executor> load_executor(Session& s, const ScheduleArgs& args, const RuntimeFlags* flags);

/// The executor's runtime settings with `flags` over them; nullopt after reporting a combination
/// no backend runs (schedrt::check_combination).
std::optional<codegen::RuntimeConfig> runtime_settings(Session& s, const Executor& ex, const RuntimeFlags& flags);

/// Lowers and verifies only (for `schedule --format program`).
std::optional<ir::Program> lower_verified(Session& s, const Input& in, const ir::Schedule& sched);

struct BuildSettings {
  std::string cache_dir;  // "" = $SCHEDC_CACHE_DIR, $XDG_CACHE_HOME/schedc or ~/.cache/schedc
  bool verbose = false;
  /// The user's own stages (`--stage-source FILE`, repeatable): compiled into the executor from
  /// where they are, with their folder on the include path; their content is part of the cache key.
  std::vector<std::string> stage_sources;

  /// Adds --cache-dir, --verbose and --stage-source.
  void add_to(CLI::App& cmd);
};

/// A stage as an executor has it registered (`executor --list-stages --format json`).
struct StageListing {
  std::string name;
  schedrt::StageMemory memory = schedrt::StageMemory::Host;
  bool reference = false;
};

/// schedrt's own stages: those registered in every executor.
std::vector<StageListing> builtin_stages();

/// The stages the built executor `exe` registers (its --list-stages); nullopt after reporting.
std::optional<std::vector<StageListing>> executor_stages(Session& s, const std::string& exe, bool verbose);

/// Checks that the chosen stage (`cfg.stage`) is among `stages`, has an implementation for the
/// backend's memory and, with `check`, a sequential reference; false after reporting. A mistake on
/// the command line (`--stage`, `--check`) is reported as `bad-flag` (exit code 2); a runtime
/// block's stage that is not registered is reported at its location. `with_sources`: the executor
/// has stage sources.
bool check_stage(Session& s, const Executor& ex, const codegen::RuntimeConfig& cfg, const RuntimeFlags& flags, bool check,
                 const std::vector<StageListing>& stages, bool with_sources);

/// Compiles the emitted files with the compiler schedc was configured with, against schedrt, and
/// returns the executable's path in the cache (reused when the same content was built before).
/// Compiler errors are reported with kind `build`. Temporaries in the cache left by a schedc that
/// is gone are removed first; an interrupted build removes its own and reports nothing.
std::optional<std::string> build_executor(Session& s, const std::vector<codegen::EmittedFile>& files,
                                          const BuildSettings& settings);

/// run_process (os.h) for an executor: prints the command line first when `verbose`, reports a
/// command that cannot start (127) or a signal, and returns the exit status; 128 + N, with nothing
/// reported, when signal N interrupted schedc meanwhile.
int launch_executor(Session& s, const std::vector<std::string>& argv, bool verbose);

/// The mpirun command line for `ranks` processes of `exe` on this machine (adds
/// --allow-run-as-root as root and --oversubscribe).
std::vector<std::string> mpirun_command(int32_t ranks);

}  // namespace schedc::driver
