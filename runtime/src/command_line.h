#pragma once
// The generated executor's command line (internal to schedrt): the runtime options' flags, made
// from schedrt/options.h's table, and the executor's own (--check, --format, --profile, ...).

#include <string>
#include <vector>

#include "schedrt/program.h"
#include "schedrt/run.h"

namespace schedrt {

/// What parse_command_line found.
struct ParseResult {
  enum class Next { Run, Exit, ListStages };
  Next next = Next::Run;
  int code = 0;       // the exit code when next is Exit: 0 after --help, 2 after a bad command line
  std::string error;  // with code 2: the message, without the `schedrt: error: ` in front
};

/// Parses argv onto `o` (the program's defaults on entry). Prints --help itself.
ParseResult parse_command_line(int argc, char** argv, const ProgramInfo& info, RunOptions& o);

/// The long flags the executor accepts ("--backend", ...), in --help order; for tests.
std::vector<std::string> executor_flag_names();

}  // namespace schedrt
