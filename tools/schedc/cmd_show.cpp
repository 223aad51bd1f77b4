// `schedc show SPEC|SCHEDULE.json`: the schedule as a time-scaled grid for terminals.

#include "codegen/emit.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_show_command(CLI::App& app, int& rc) {
  struct Opts {
    ScheduleArgs args;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print a schedule as a text grid");
  opts->args.add_to(*cmd);
  cmd->callback([opts, &rc] {
    Session s;
    auto done = load_and_schedule(s, opts->args);
    if (!done) {
      rc = s.finish(kInputError);
      return;
    }
    rc = s.finish(write_output(s, "", codegen::emit_text(done->schedule, done->timeline)) ? kOk : kInputError);
  });
}

}  // namespace schedc::driver
