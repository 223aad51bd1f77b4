// `schedc build SPEC -o BIN`: emit and compile the executor (cached by content) and copy it to BIN.

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
  cmd->add_option("--cache-dir", opts->build.cache_dir, "build cache (default $SCHEDC_CACHE_DIR, $XDG_CACHE_HOME/schedc or ~/.cache/schedc)");
  cmd->add_flag("--verbose,-v", opts->build.verbose, "print the compiler commands");
  opts->runtime.add_to(*cmd, false);
  cmd->callback([opts, &rc] {
    Session s;
    int code = kInputError;
    auto ex = load_executor(s, opts->args, &opts->runtime, &code);
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
      std::string why = std::filesystem::is_directory(opts->output) ? "it is a directory" : ec.message();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(opts->output) + ": " + why);
      rc = s.finish(kInputError);
      return;
    }
    rc = s.finish(kOk);
  });
}

}  // namespace schedc::driver
