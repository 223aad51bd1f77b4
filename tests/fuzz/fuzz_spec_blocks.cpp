// libFuzzer target: what a `.sched` file's blocks and the command line's values say, read the way
// the driver reads them. The input is text: leading lines that start with `-` are command-line
// arguments (`--cost F=1,B=2:3`, `--memory cap=4:4`, `--pp 4`, `--family zb-h1`, ...; a line is
// split at its first blank into flag and value), the rest is a spec (none: flags only). The
// arguments go through CLI11 with the real option table (ProblemFlags, ScheduleFlags), then
// ProblemFlags::apply; the spec through frontend::read_input; then the runtime block through
// codegen::read_runtime_config, solve options through solver::apply_solve_params, and a family
// source or `--family` through the driver's schedule and verify phases (family defaults,
// parameters, verify) on small problems. Nothing may crash or throw; a bad flag is a `bad-flag` diagnostic (the CLI's
// exit 2) with a message; each reader returns failure exactly when it reported an error; a
// schedule that obtain_schedule returns simulates to completion.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "codegen/runtime_config.h"
#include "frontend/spec.h"
#include "solver/synth/synthesize.h"
#include "support/diagnostics.h"
#include "support/source.h"
#include "tools/schedc/phases.h"

namespace {

using namespace schedc;

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_spec_blocks: %s\n", what);
  std::abort();
}

// Problems small enough that a family generates its schedule quickly (family defaults may still
// raise stages_per_rank to 2).
bool is_small(const ir::Problem& p) { return p.ranks <= 16 && p.microbatches <= 64 && p.stages_per_rank <= 4; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  size_t pos = 0;
  while (pos < text.size() && text[pos] == '-') {
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    size_t blank = line.find(' ');
    args.push_back(line.substr(0, blank));
    if (blank != std::string::npos) args.push_back(line.substr(blank + 1));
  }
  const std::string spec_text = text.substr(pos);

  driver::ProblemFlags problem_flags;
  driver::ScheduleFlags schedule_flags;
  {
    CLI::App app("fuzz");
    problem_flags.add_to(app);
    schedule_flags.add_to(app);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError&) {
      return 0;  // exit 2 with CLI11's message
    }
  }

  driver::Session s;
  driver::Input in;
  if (!spec_text.empty()) {
    int32_t file = s.sources.add("fuzz.sched", spec_text);
    auto read = frontend::read_input(s.sources, file, frontend::InputFormat::Spec, {}, s.diags);
    require(read.has_value() == !s.diags.has_errors(), "read_input's result disagrees with its errors");
    if (!read) return 0;
    in = std::move(*read);
  }
  if (problem_flags.any() || !in.has_file()) {
    const size_t before = s.diags.error_count();
    bool applied = problem_flags.apply(in.spec, true, s.diags);
    require(applied == (s.diags.error_count() == before), "ProblemFlags::apply's result disagrees with its errors");
    if (!applied) {
      require(s.diags.has_error_of_kind(DiagKind::BadFlag) && !s.diags.all().back().message.empty(),
              "a command-line error without a `bad-flag` message");
      return 0;
    }
  }

  const size_t errors_before = s.diags.error_count();
  codegen::RuntimeConfig config;
  bool runtime_ok = codegen::read_runtime_config(in.spec.runtime, config, s.diags);
  require(runtime_ok == (s.diags.error_count() == errors_before),
          "read_runtime_config's result disagrees with its errors");

  const frontend::ScheduleSource& src = in.spec.schedule;
  const bool solve = schedule_flags.solve || (!schedule_flags.family && src.kind == frontend::SourceKind::Solve);
  if (src.kind == frontend::SourceKind::Solve) {
    const size_t before = s.diags.error_count();
    solver::SolveOptions options;
    bool ok = solver::apply_solve_params(src.params, options, s.diags);
    require(ok == (s.diags.error_count() == before), "apply_solve_params' result disagrees with its errors");
  }
  (void)s.diags.str();
  if (solve || !is_small(in.spec.problem)) return 0;  // the solver is the solver's fuzzing, not this one's

  const size_t before = s.diags.error_count();
  std::optional<ir::Schedule> sched = driver::schedule(s, in, schedule_flags);
  std::optional<ir::Timeline> timeline;
  bool valid = sched && driver::verify(s, in, *sched, timeline);
  (void)s.diags.str();
  require(valid == (s.diags.error_count() == before), "the schedule and verify phases disagree with their errors");
  if (valid) (void)driver::simulate(*sched);  // an internal error (exit 3, a finding) when it deadlocks
  return 0;
}
