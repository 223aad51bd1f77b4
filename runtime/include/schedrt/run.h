#pragma once
// Running a program: the settings of a run (the runtime block's defaults with the flags applied).

#include <cstdint>
#include <string>
#include <vector>

#include "schedrt/program.h"

namespace schedrt {

struct RunOptions {
  std::string backend = "threads";  // threads | mpi | cuda
  std::string stage = "mlp";        // a registered stage (schedrt/stage.h): mlp, synthetic, noop or the user's
  std::string dtype = "fp64";       // fp64 | fp32 | bf16 (cuda only)
  int32_t hidden = 64;
  int32_t layers = 2;
  /// The layers of each stage (the spec's `model` partition); empty: `layers` on every stage.
  /// `--layers` empties it.
  std::vector<int32_t> layers_per_stage;
  int32_t batch = 8;
  uint64_t seed = 1;
  double ms_per_unit = 10;
  double timeout_s = 60;
  int32_t steps = 1;
  bool check = false;
  bool interpret = false;           // run the op tables instead of the generated functions
  std::string format = "text";      // text | json
  std::string trace_path;
  std::string fault;                // testing only: drop-send=RANK | throw=RANK
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
