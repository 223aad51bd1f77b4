#pragma once
// Starting generated executors: the command line (through mpirun for the mpi backend), reporting
// how they ended, and the stages they register (`executor --list-stages`), which the build phase
// checks the chosen stage against.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/runtime_config.h"
#include "schedrt/stage.h"
#include "tools/schedc/runtime_flags.h"
#include "tools/schedc/session.h"

namespace schedc::driver {

/// `schedc: CMD ARGS...` on stderr, for --verbose.
void print_command(const std::vector<std::string>& argv);

/// run_process (os.h) for an executor: prints the command line first when `verbose`, reports a
/// command that cannot start (127) or a signal, and returns the exit status; 128 + N, with nothing
/// reported, when signal N interrupted schedc meanwhile.
int launch_executor(Session& s, const std::vector<std::string>& argv, bool verbose);

/// The mpirun command line for `ranks` processes of `exe` on this machine (adds
/// --allow-run-as-root as root and --oversubscribe).
std::vector<std::string> mpirun_command(int32_t ranks);

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
/// block's stage that is not registered is reported at its location, `stage_loc`. `with_sources`:
/// the executor has stage sources.
bool check_stage(Session& s, SourceLoc stage_loc, const codegen::RuntimeConfig& cfg, const RuntimeFlags& flags,
                 bool check, const std::vector<StageListing>& stages, bool with_sources);

}  // namespace schedc::driver
