// `schedc schedule SPEC [--family NAME | --solve] [--format F] [-o FILE]`: produce the schedule in
// one of the output formats.

#include "codegen/emit.h"
#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/executor.h"

namespace schedc::driver {

void add_schedule_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string format = "json", output;
    ScheduleArgs args;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("schedule", "produce a schedule (explicit, family or solved)");
  cmd->add_option("--format", opts->format, "json | torch-csv | text | perfetto | svg | program")
      ->check(CLI::IsMember({"json", "torch-csv", "text", "perfetto", "svg", "program"}));
  cmd->add_option("-o,--output", opts->output, "write to this file instead of stdout");
  opts->args.add_to(*cmd);
  cmd->callback([opts, &rc] {
    Session s;
    auto done = load_and_schedule(s, opts->args);
    if (!done) {
      rc = s.finish(kInputError);
      return;
    }
    const ir::Schedule* sched = &done->schedule;
    const ir::Timeline& t = done->timeline;
    std::string out;
    const std::string& f = opts->format;
    if (f == "json") out = ir::write_schedule_json(*sched, &t.metrics);
    else if (f == "torch-csv") out = codegen::emit_torch_csv(*sched);
    else if (f == "text") out = codegen::emit_text(*sched, t);
    else if (f == "perfetto") out = codegen::emit_perfetto(*sched, t);
    else if (f == "svg") out = codegen::emit_svg(*sched, t);
    else if (f == "program") {
      int code = kInputError;
      auto prog = lower_verified(s, done->input, *sched, &code);
      if (!prog) {
        rc = s.finish(code);
        return;
      }
      out = ir::format_program(*prog);
    }
    rc = s.finish(write_output(s, opts->output, out) ? kOk : kInputError);
  });
}

}  // namespace schedc::driver
