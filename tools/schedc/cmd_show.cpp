// `schedc show SPEC|SCHEDULE.json [--format text|json]`: the schedule's simulated timeline, as a
// time-scaled grid for terminals or as JSON for scripts.

#include "codegen/emit.h"
#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/json_out.h"

namespace schedc::driver {

void add_show_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string format = "text", output;
    Request rq;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print a schedule's timeline as a text grid or JSON");
  cmd->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-o,--output", opts->output, "write to this file instead of stdout");
  opts->rq.args.add_to(*cmd);
  opts->rq.dump.add_to(*cmd, Phase::Simulate);
  cmd->callback([opts, &rc] {
    Session s;
    Compilation c;
    if (!run_until(s, opts->rq, c)) {
      rc = s.fail();
      return;
    }
    const ir::Schedule& sched = *c.schedule;
    std::string out = opts->format == "json" ? timeline_json(sched, *c.timeline)
                                             : codegen::emit_text(sched, *c.timeline);
    rc = write_output(s, opts->output, out) ? s.finish() : s.fail();
  });
}

}  // namespace schedc::driver
