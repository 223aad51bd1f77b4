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
    OutputFlags out;
    Request rq;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print a schedule's timeline as a text grid or JSON");
  opts->out.add_to(*cmd, {"text", "json"});
  opts->rq.add_to(*cmd, Phase::Simulate);
  set_callback(*cmd, rc, [opts](Session& s) {
    Compilation c;
    if (!run_until(s, opts->rq, c)) return s.fail();
    const bool json = opts->out.format == "json";
    return finish_with_output(s, opts->out.output,
                              json ? timeline_json(*c.schedule, *c.timeline) : codegen::emit_text(*c.schedule, *c.timeline));
  });
}

}  // namespace schedc::driver
