// `schedc build SPEC -o BIN [--stage-source FILE]...`: emit and compile the executor (cached by
// content), with the user's stage sources, and copy it to BIN.

#include <filesystem>

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/executor.h"

namespace schedc::driver {

void add_build_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string output;
    ScheduleArgs args;
    RuntimeFlags runtime;
    BuildSettings build;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("build", "generate and compile a schedule's executor");
  opts->args.add_to(*cmd);
  cmd->add_option("-o,--output", opts->output, "the executable to write")->required();
  opts->build.add_to(*cmd);
  opts->runtime.add_to(*cmd, false);
  cmd->callback([opts, &rc] {
    Session s;
    auto ex = load_executor(s, opts->args, &opts->runtime);
    // The stage is compiled in as the executor's default: it must be registered there. schedrt's
    // own stages are known before building; the stage sources' only once the executor lists them.
    const bool sources = !opts->build.stage_sources.empty();
    if (ex && !sources && !check_stage(s, *ex, ex->runtime, opts->runtime, false, builtin_stages(), false)) {
      rc = s.fail();
      return;
    }
    auto exe = ex ? build_executor(s, ex->files, opts->build) : std::nullopt;
    if (!exe) {
      rc = s.fail();
      return;
    }
    if (sources) {
      auto stages = executor_stages(s, *exe, opts->build.verbose);
      if (!stages || !check_stage(s, *ex, ex->runtime, opts->runtime, false, *stages, true)) {
        rc = s.fail();
        return;
      }
    }
    std::error_code ec;
    std::filesystem::path tmp = opts->output + ".schedc-tmp";
    std::filesystem::copy_file(*exe, tmp, std::filesystem::copy_options::overwrite_existing, ec);
    if (!ec) std::filesystem::rename(tmp, opts->output, ec);
    if (ec) {
      std::string why = std::filesystem::is_directory(opts->output) ? "it is a directory" : ec.message();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(opts->output) + ": " + why);
      rc = s.fail();
      return;
    }
    rc = s.finish();
  });
}

}  // namespace schedc::driver
