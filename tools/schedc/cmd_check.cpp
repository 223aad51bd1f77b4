// `schedc check SPEC [--format text|json]`: parse and validate a spec; nothing else.

#include <algorithm>
#include <sstream>

#include "codegen/runtime_config.h"
#include "ir/json_io.h"
#include "ir/model.h"
#include "support/numbers.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/json_out.h"
#include "tools/schedc/stage_table.h"

namespace schedc::driver {

namespace {

std::string check_text(const std::string& path, const frontend::Spec& spec) {
  const ir::Problem& p = spec.problem;
  std::ostringstream os;
  os << path << ": ok: " << p.ranks << " ranks x " << p.stages_per_rank << " stages, " << p.microbatches
     << " microbatches, " << ir::direction_name(p.directions) << ", " << ir::to_string(p.placement) << ", backward "
     << ir::to_string(p.backward);
  if (!p.time_unit.empty()) os << ", times in " << p.time_unit;
  if (!p.memory_unit.empty()) os << ", memory in " << p.memory_unit;
  if (p.has_static_memory()) os << ", static memory";
  os << "\n";
  if (spec.partition_auto)
    os << "  partition = auto: the solve chooses each stage's layers; it starts from "
       << (spec.partition_fits_static ? "one whose static memory fits (the balanced partition's does not):\n"
                                      : "the balanced partition:\n");
  if (!spec.layers_per_stage.empty()) stage_table(os, spec.problem, spec.layers_per_stage);
  // The same partition as Megatron-Core states it (its stages run looped: stage s on rank s mod pp).
  if (spec.model && !spec.layers_per_stage.empty() && p.placement == ir::PlacementKind::Looped)
    os << "  megatron layout: --pipeline-model-parallel-layout \""
       << ir::megatron_layout(*spec.model, spec.layers_per_stage) << "\"\n";
  // torchtitan's module lists, one a stage in model order (its schedule places the stages).
  if (spec.model && !spec.layers_per_stage.empty())
    os << "  torchtitan: module_fqns_per_model_part = " << ir::torchtitan_modules(*spec.model, spec.layers_per_stage)
       << "\n";
  return os.str();
}

std::string check_json(const std::string& path, const frontend::Spec& spec) {
  ojson expect = ojson::array();
  for (const ir::Expectation& e : spec.expect) expect.push_back(expectation_json(e));
  std::vector<std::pair<std::string, std::string>> keys{
      {"file", ojson(path).dump()}, {"ok", "true"}, {"problem", ir::problem_json(spec.problem)}};
  // With a `model`: the layers each stage runs (its costs and memory are in `problem`).
  if (!spec.layers_per_stage.empty()) keys.push_back({"layers_per_stage", json_line(ojson(spec.layers_per_stage))});
  keys.push_back({"schedule", json_line(schedule_source_json(spec.schedule))});
  keys.push_back({"expect", json_line(expect)});
  return json_document("schedc.check", keys);
}

}  // namespace

void add_check_command(CLI::App& app, int& rc) {
  auto opts = std::make_shared<OutputCommand>();
  opts->rq.last = Phase::Load;
  CLI::App* cmd = app.add_subcommand("check", "parse and validate a spec (.sched) or schedule (.json)");
  cmd->add_option("spec", opts->rq.args.path, "the .sched or schedule .json file; - reads a spec from stdin")
      ->required();
  opts->out.add_to(*cmd, {"text", "json"});
  opts->rq.args.problem.add_to(*cmd);
  opts->rq.dump.add_to(*cmd, opts->rq.last);
  set_callback(*cmd, rc, [opts](Session& s) {
    if (!check_output_path(s, opts->out.output)) return s.finish();
    if (opts->rq.args.path.empty()) {
      s.diags.error(DiagKind::BadFlag, {}, "check: the path of the spec is empty");
      return s.finish();
    }
    Compilation c;
    const Input* in = run_until(s, opts->rq, c) ? &*c.input : nullptr;
    if (in) {
      auto errors = ir::validate(in->spec.problem);
      for (const auto& e : errors) s.diags.error(e.kind, in->spec.loc_of(e.field), e.message);
      codegen::RuntimeConfig runtime;
      codegen::read_runtime_config(in->spec.runtime, runtime, s.diags);
    }
    if (!in || s.diags.has_errors()) return s.fail();
    const std::string& path = s.sources.path(in->file);
    return finish_with_output(s, opts->out.output,
                              opts->out.format == "json" ? check_json(path, in->spec) : check_text(path, in->spec));
  });
}

}  // namespace schedc::driver
