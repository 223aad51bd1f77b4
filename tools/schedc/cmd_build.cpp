// `schedc build SPEC -o BIN [--stage-source FILE]...`: emit and compile the executor (cached by
// content), with the user's stage sources, and copy it to BIN.

#include <filesystem>

#include "support/output.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_build_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string output;
    Request rq;  // the runtime flags are compiled in as the executor's defaults
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("build", "generate and compile a schedule's executor");
  opts->rq.add_to(*cmd, Phase::Build);
  cmd->add_option("-o,--output", opts->output, "the executable to write")->required();
  opts->rq.build.add_to(*cmd);
  opts->rq.runtime.add_to(*cmd, false);
  set_callback(*cmd, rc, [opts](Session& s) {
    if (!check_output_path(s, opts->output)) return s.finish();
    // A read-only executable is refused before the build, as the shell refuses `>` onto it.
    if (std::string why = unwritable_reason(opts->output); !why.empty()) {
      s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(opts->output) + ": " + why);
      return s.fail();
    }
    Compilation c;
    if (!run_until(s, opts->rq, c)) return s.fail();
    std::error_code ec;
    std::filesystem::path tmp = opts->output + ".schedc-tmp";
    std::filesystem::copy_file(c.executable, tmp, std::filesystem::copy_options::overwrite_existing, ec);
    if (!ec) std::filesystem::rename(tmp, opts->output, ec);
    if (!ec) return s.finish();
    std::string why = std::filesystem::is_directory(opts->output) ? "it is a directory" : ec.message();
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(opts->output) + ": " + why);
    return s.fail();
  });
}

}  // namespace schedc::driver
