// `schedc build SPEC -o BIN [--stage-source FILE]...`: emit and compile the executor (cached by
// content), with the user's stage sources, and copy it to BIN.

#include <filesystem>

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_build_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string output;
    Request rq;
  };
  auto opts = std::make_shared<Opts>();
  // The runtime flags are compiled in as the executor's defaults.
  opts->rq.last = Phase::Build;
  CLI::App* cmd = app.add_subcommand("build", "generate and compile a schedule's executor");
  opts->rq.args.add_to(*cmd);
  cmd->add_option("-o,--output", opts->output, "the executable to write")->required();
  opts->rq.build.add_to(*cmd);
  opts->rq.runtime.add_to(*cmd, false);
  opts->rq.dump.add_to(*cmd, opts->rq.last);
  cmd->callback([opts, &rc] {
    Session s;
    Compilation c;
    if (!run_until(s, opts->rq, c)) {
      rc = s.fail();
      return;
    }
    std::error_code ec;
    std::filesystem::path tmp = opts->output + ".schedc-tmp";
    std::filesystem::copy_file(c.executable, tmp, std::filesystem::copy_options::overwrite_existing, ec);
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
