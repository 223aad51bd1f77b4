#pragma once
// C++ code generation: a verified ir::Program becomes one source file per rank (straight-line
// calls into schedrt's Context, with `#line` directives back to the spec), a main.cpp that
// describes the program to the runtime (problem, costs, op tables for the interpreter, runtime
// defaults), and a CMakeLists.txt that builds them against schedrt (`find_package(schedrt)`, from
// an installed package or a build tree). The same input always gives byte-identical files.

#include <string>
#include <vector>

#include "codegen/runtime_config.h"
#include "ir/program.h"

namespace schedc::codegen {

struct EmitOptions {
  /// What the program was generated from, for the header and the runtime's report ("zbv.sched",
  /// "--family 1f1b --pp 4 --microbatches 8").
  std::string source_name;
  /// The file `#line` directives point at; empty for none (flags-only inputs).
  std::string line_file;
  /// lines[rank][position]: the line of that schedule position's action in `line_file` (0 when
  /// unknown, then `default_line` is used).
  std::vector<std::vector<int32_t>> lines;
  /// The line of the schedule's source (`schedule = family ...`) for ops without their own.
  int32_t default_line = 0;
  RuntimeConfig runtime;
  /// The simulated makespan, in the problem's time units, for the runtime's report.
  double simulated_makespan = 0;
};

struct EmittedFile {
  std::string name;  // relative to the output directory
  std::string content;
};

/// `rank_<r>.cpp` for every rank, `main.cpp`, `CMakeLists.txt`, in that order.
std::vector<EmittedFile> emit_cpp(const ir::Program& p, const EmitOptions& options);

}  // namespace schedc::codegen
