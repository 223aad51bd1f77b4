// `schedc build SPEC -o BIN`: emit and compile the executor (cached by content) and copy it to BIN.

#include <filesystem>

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/executor.h"

namespace schedc::driver {

void add_build_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string path, output;
    ProblemFlags problem;
    ScheduleFlags schedule;
    RuntimeFlags runtime;
    BuildSettings build;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("build", "generate and compile a schedule's executor");
  cmd->add_option("input", opts->path, "a .sched spec or schedule .json (omit with --family or --solve)");
  cmd->add_option("-o,--output", opts->output, "the executable to write")->required();
  cmd->add_option("--cache-dir", opts->build.cache_dir, "build cache (default $SCHEDC_CACHE_DIR, $XDG_CACHE_HOME/schedc or ~/.cache/schedc)");
  cmd->add_flag("--verbose,-v", opts->build.verbose, "print the compiler commands");
  opts->problem.add_to(*cmd);
  opts->schedule.add_to(*cmd);
  opts->runtime.add_to(*cmd, false);
  cmd->callback([opts, &rc] {
    Session s;
    auto in = load_input(s, opts->path, opts->problem);
    auto sched = in ? obtain_schedule(s, *in, opts->schedule) : std::nullopt;
    int code = kInputError;
    auto ex = sched ? make_executor(s, *in, std::move(*sched), &opts->runtime,
                                    source_name(opts->path, opts->problem, opts->schedule), &code)
                    : std::nullopt;
    auto exe = ex ? build_executor(s, ex->files, opts->build) : std::nullopt;
    if (!exe) {
      rc = s.finish(ex ? kInputError : code);
      return;
    }
    std::error_code ec;
    std::filesystem::path tmp = opts->output + ".schedc-tmp";
    std::filesystem::copy_file(*exe, tmp, std::filesystem::copy_options::overwrite_existing, ec);
    if (!ec) std::filesystem::rename(tmp, opts->output, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(opts->output) + ": " + ec.message());
      rc = s.finish(kInputError);
      return;
    }
    rc = s.finish(kOk);
  });
}

}  // namespace schedc::driver
