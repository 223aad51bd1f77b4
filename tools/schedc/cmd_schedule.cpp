// `schedc schedule SPEC [--family NAME | --solve] [--format F] [-o FILE]`: produce the schedule in
// one of the output formats.

#include "codegen/emit.h"
#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

namespace {

// PyTorch's pipelining model has one rank per stage; a file with a stage on two rows is one its
// validator rejects, so none is written.
bool refuse_torch_csv(Session& s, const Input& in, const ir::Schedule& sched, const std::string& format) {
  for (const auto& order : sched.ranks)
    for (ir::Action a : order)
      if (a.kind == ir::ActionKind::R) {
        s.diags.error(DiagKind::Unsupported, in.spec.loc_of(ir::Field::Recompute),
                      format + " cannot express recomputation: " + backtick(ir::format_action(a)) +
                          " has no action in PyTorch's pipelining (write json, text, perfetto, svg or program "
                          "instead)");
        return true;
      }
  auto conflict = codegen::torch_csv_conflict(sched.problem);
  if (!conflict) return false;
  s.diags.error(DiagKind::Unsupported, in.spec.loc_of(ir::Field::Direction),
                format + " cannot express a bidirectional schedule: stage " +
                    backtick(std::to_string(conflict->stage.value)) + " runs on ranks " +
                    backtick(std::to_string(conflict->first.value)) + " and " +
                    backtick(std::to_string(conflict->second.value)) +
                    ", but PyTorch's pipelining has one rank per stage (write json, text, perfetto, svg or program "
                    "instead)");
  return true;
}

}  // namespace

void add_schedule_command(CLI::App& app, int& rc) {
  auto opts = std::make_shared<OutputCommand>();
  CLI::App* cmd = app.add_subcommand("schedule", "produce a schedule (explicit, family or solved)");
  opts->out.add_to(*cmd, {"json", "torch-csv", "torch-csv-comms", "text", "perfetto", "svg", "program"});
  opts->rq.add_to(*cmd, Phase::VerifyProgram);
  set_callback(*cmd, rc, [opts](Session& s) {
    if (!check_output_path(s, opts->out.output)) return s.finish();
    const std::string& f = opts->out.format;
    // torch-csv-comms is the lowered program, the one schedc's executors run, in torch's words.
    const bool lowered = f == "program" || f == "torch-csv-comms";
    Request& rq = opts->rq;
    rq.last = lowered ? Phase::VerifyProgram : Phase::Simulate;
    Compilation c;
    if (!run_until(s, rq, c, Phase::Simulate)) return s.fail();
    const ir::Schedule& sched = *c.schedule;
    const ir::Timeline& t = *c.timeline;
    if ((f == "torch-csv" || f == "torch-csv-comms") && refuse_torch_csv(s, *c.input, sched, f)) return s.fail();
    if (lowered && !run_until(s, rq, c)) return s.fail();
    std::string out;
    if (f == "json") out = ir::write_schedule_json(sched, &t.metrics);
    else if (f == "torch-csv") out = codegen::emit_torch_csv(sched);
    else if (f == "text") out = codegen::emit_text(sched, t);
    else if (f == "perfetto") out = codegen::emit_perfetto(sched, t);
    else if (f == "svg") out = codegen::emit_svg(sched, t);
    else if (f == "program") out = ir::format_program(*c.program);
    else if (f == "torch-csv-comms") out = codegen::emit_torch_csv_comms(*c.program);
    return finish_with_output(s, opts->out.output, out);
  });
}

}  // namespace schedc::driver
