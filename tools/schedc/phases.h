#pragma once
// The compiler's phases, one entry function each, in the order the driver runs them (docs/design.md
// section 1):
//
//   load -> schedule -> verify -> simulate -> lower -> verify-program -> emit -> build -> run
//
// Each takes plain data and returns plain data, and reports what goes wrong through the Session;
// a phase that fails returns nullopt (or false) after reporting, and the driver stops there.
// driver.h strings them together; dump.h prints what each one made (--dump-after).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/emit_cpp.h"
#include "codegen/runtime_config.h"
#include "frontend/input.h"
#include "ir/program.h"
#include "ir/schedule.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "tools/schedc/flags.h"
#include "tools/schedc/runtime_flags.h"
#include "tools/schedc/session.h"

namespace schedc::driver {

enum class Phase : uint8_t { Load, Schedule, Verify, Simulate, Lower, VerifyProgram, Emit, Build, Run };

/// Every phase, in the order they run.
inline constexpr std::array<Phase, 9> kPhases = {Phase::Load,     Phase::Schedule, Phase::Verify,
                                                 Phase::Simulate, Phase::Lower,    Phase::VerifyProgram,
                                                 Phase::Emit,     Phase::Build,    Phase::Run};

/// The phase's name on the command line: `load`, `schedule`, ..., `verify-program`, ...
std::string_view to_string(Phase p);
/// The phase a name stands for (`verify_program` is accepted too); nullopt for any other name.
std::optional<Phase> parse_phase(std::string_view name);
/// `load, schedule, ..., P`: the names of the phases up to `last`, for messages and help.
std::string phase_names(Phase last);

// ---- load ---------------------------------------------------------------------------------

/// The input (frontend/input.h): its problem, given fields, schedule source, the orders it writes
/// and its source map. Without an input file (flags only), `file` is -1.
using Input = frontend::Input;

/// Reads `path` (frontend::read_input; its format by its suffix or content, frontend::input_format;
/// an empty path means flags only) and applies the problem flags.
std::optional<Input> load(Session& s, const std::string& path, const ProblemFlags& flags);

// ---- schedule -----------------------------------------------------------------------------

/// The schedule the input asks for (explicit / family / solve, or the flags' `--family` /
/// `--solve`), not yet verified.
std::optional<ir::Schedule> schedule(Session& s, Input& in, const ScheduleFlags& flags);

/// `profile`'s schedule: a probe of the problem the input's schedule would use (a family fills in
/// what the spec leaves open; a solver never changes the problem, so it does not run).
std::optional<ir::Schedule> probe_schedule(Session& s, Input& in, const ScheduleFlags& flags);

// ---- verify -------------------------------------------------------------------------------

/// Verifies `sched` (ir::verify), reporting each issue at the input's token when it has one.
/// The verifier's own simulation of the schedule goes to `timeline`, so that it need not run again.
bool verify(Session& s, const Input& in, const ir::Schedule& sched, std::optional<ir::Timeline>& timeline);

/// Verifies a schedule schedc made itself (profile's probe): an issue is a bug (`internal`).
bool verify_own(Session& s, const ir::Schedule& sched);

// ---- simulate -----------------------------------------------------------------------------

/// Simulates a verified schedule (a deadlock here is an internal error).
ir::Timeline simulate(const ir::Schedule& sched);

// ---- lower: codegen::lower ----------------------------------------------------------------
// ---- verify-program -----------------------------------------------------------------------

/// Proves the lowered program deadlock-free and within the memory cap (codegen::verify_program):
/// a cap that receive buffers exceed is reported at the input's cap; a malformed program is an
/// `internal` error (exit code 3).
bool verify_program(Session& s, const Input& in, const ir::Schedule& sched, const ir::Program& prog);

// ---- emit ---------------------------------------------------------------------------------

/// A program as C++ files, and the runtime settings they have compiled in.
struct Emitted {
  codegen::RuntimeConfig runtime;
  SourceLoc stage_loc;  // where the runtime block names the stage (none: the default)
  std::vector<codegen::EmittedFile> files;
};

/// Reads the runtime block (+ `flags` when given: they are compiled in) and emits the program as
/// C++ with `#line` directives back to the input. `source` names the input in the files' header.
std::optional<Emitted> emit(Session& s, const Input& in, const ir::Schedule& sched, const ir::Program& prog,
                            const ir::Metrics& simulated, const RuntimeFlags* flags, const std::string& source);

// ---- build --------------------------------------------------------------------------------

/// The settings the executor will run with: the compiled-in ones, with `flags` over them when they
/// are passed at launch (`run`, `profile`); nullopt after reporting a combination no backend runs
/// (schedrt::check_combination).
std::optional<codegen::RuntimeConfig> launch_settings(Session& s, const Emitted& em, const RuntimeFlags& flags,
                                                      bool at_launch);

/// Compiles the emitted files with the compiler schedc was configured with, against schedrt and
/// with the stage sources, and returns the executable's path in the cache (reused when the same
/// content was built before). Before building, the chosen stage must be one schedrt registers
/// (unless stage sources may register it), with a sequential reference when `check`; after, one
/// the stage sources' executor registers (check_stage). Compiler errors are reported with kind
/// `build`; an interrupted build removes its temporaries and reports nothing.
std::optional<std::string> build(Session& s, const Emitted& em, const codegen::RuntimeConfig& settings,
                                 const RuntimeFlags& flags, bool check, const BuildSettings& build);

// ---- run ----------------------------------------------------------------------------------

/// Starts the executor `exe` for a program of `ranks` ranks (through mpirun for the mpi backend)
/// with `settings` (the options given on the command line; the rest are compiled in) and `extra`
/// arguments, and returns its exit status (launch_executor).
int run(Session& s, const std::string& exe, const codegen::RuntimeConfig& settings, const RuntimeFlags& flags,
        int32_t ranks, const std::vector<std::string>& extra, bool verbose);

}  // namespace schedc::driver
