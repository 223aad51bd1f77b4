// `schedc emit SPEC --target cpp -o DIR`: lower the schedule, prove the program deadlock-free, and
// write one C++ source per rank, main.cpp and a CMakeLists.txt that builds them against schedrt.

#include <filesystem>

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/executor.h"

namespace schedc::driver {

void add_emit_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string target = "cpp", output;
    ScheduleArgs args;
    RuntimeFlags runtime;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("emit", "generate the per-rank C++ executor of a schedule");
  opts->args.add_to(*cmd);
  cmd->add_option("--target", opts->target, "cpp")->check(CLI::IsMember({"cpp"}));
  cmd->add_option("-o,--output", opts->output, "the directory to write")->required();
  opts->runtime.add_to(*cmd, false);
  cmd->callback([opts, &rc] {
    Session s;
    int code = kInputError;
    auto ex = load_executor(s, opts->args, &opts->runtime, &code);
    if (!ex) {
      rc = s.finish(code);
      return;
    }
    std::error_code ec;
    std::filesystem::create_directories(opts->output, ec);
    if (ec) {
      s.diags.error(DiagKind::Io, {}, "cannot create " + backtick(opts->output) + ": " + ec.message());
      rc = s.finish(kInputError);
      return;
    }
    bool ok = true;
    for (const auto& f : ex->files) ok = ok && write_output(s, (std::filesystem::path(opts->output) / f.name).string(), f.content);
    rc = s.finish(ok ? kOk : kInputError);
  });
}

}  // namespace schedc::driver
