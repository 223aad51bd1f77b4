#pragma once
// Running a program: the settings of a run (the runtime block's defaults with the flags applied).

#include <cstdint>
#include <string>
#include <vector>

#include "schedrt/options.h"
#include "schedrt/program.h"

namespace schedrt {

/// The runtime options (schedrt/options.h: the runtime block's defaults, then the flags) and the
/// executor's own flags.
struct RunOptions : RuntimeSettings {
  bool check = false;
  bool interpret = false;       // run the op tables instead of the generated functions
  std::string format = "text";  // text | json
  std::string fault;            // testing only: drop-send=RANK | throw=RANK
  /// Not empty: instead of running the program, time each stage's F, B and W and the transfers
  /// between ranks on the backend, and write the figures there as JSON (schedc profile reads them).
  std::string profile_path;
};

/// The program's defaults (its runtime block) as options.
RunOptions default_options(const ProgramInfo& info);

/// Runs the program as `options` say (every rank: threads in this process, or this process's MPI
/// rank), prints the report on rank 0 and returns the exit code (0 ok, 1 a failure or a --check
/// mismatch, with the message on stderr).
int run(const ProgramInfo& info, const RunOptions& options, int* argc = nullptr, char*** argv = nullptr);

}  // namespace schedrt
