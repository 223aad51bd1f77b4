// `schedc emit SPEC --target cpp -o DIR`: lower the schedule, prove the program deadlock-free, and
// write one C++ source per rank, main.cpp and a CMakeLists.txt that builds them against schedrt.

#include <filesystem>

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/executor.h"

namespace schedc::driver {

void add_emit_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string path, target = "cpp", output;
    ProblemFlags problem;
    ScheduleFlags schedule;
    RuntimeFlags runtime;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("emit", "generate the per-rank C++ executor of a schedule");
  cmd->add_option("input", opts->path, "a .sched spec or schedule .json (omit with --family or --solve)");
  cmd->add_option("--target", opts->target, "cpp")->check(CLI::IsMember({"cpp"}));
  cmd->add_option("-o,--output", opts->output, "the directory to write")->required();
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
