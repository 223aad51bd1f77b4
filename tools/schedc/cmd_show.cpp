// `schedc show SPEC|SCHEDULE.json`: the schedule as a time-scaled grid for terminals.

#include "codegen/emit.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_show_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string path;
    ProblemFlags problem;
    ScheduleFlags schedule;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print a schedule as a text grid");
  cmd->add_option("input", opts->path, "a .sched spec or schedule .json (omit with --family or --solve)");
  opts->problem.add_to(*cmd);
  opts->schedule.add_to(*cmd);
  cmd->callback([opts, &rc] {
    Session s;
    auto in = load_input(s, opts->path, opts->problem);
    auto sched = in ? obtain_schedule(s, *in, opts->schedule) : std::nullopt;
    if (!sched) {
      rc = s.finish(kInputError);
      return;
    }
    ir::Timeline t = simulate_verified(*sched);
    rc = s.finish(write_output(s, "", codegen::emit_text(*sched, t)) ? kOk : kInputError);
  });
}

}  // namespace schedc::driver
