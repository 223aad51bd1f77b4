// The verify-program and emit phases: the lowered program is proved deadlock-free and within the
// cap, then emitted as C++ with the runtime block's settings compiled in.

#include "codegen/verify_program.h"
#include "support/units.h"
#include "tools/schedc/phases.h"

namespace schedc::driver {

bool verify_program(Session& s, const Input& in, const ir::Schedule& sched, const ir::Program& prog) {
  auto issues = codegen::verify_program(sched, prog);
  for (const codegen::ProgramIssue& i : issues) {
    if (i.is_bug) {
      s.diags.error(DiagKind::Internal, {},
                    "the lowered program is invalid (a bug in schedc; please report it): " + i.message);
    } else {
      s.diags.error(i.kind, in.spec.loc_of(ir::Field::MemoryCap), i.message);
    }
  }
  return issues.empty();
}

namespace {

// Where each op's `#line` directive points: the input's line of the schedule position it belongs
// to, when the schedule's orders are the input's own.
void line_map(const Session& s, const Input& in, const ir::Schedule& sched, codegen::EmitOptions& eo) {
  using frontend::InputFormat;
  const bool written = in.writes(sched);
  // A torch-csv file's cells are no place to point a C++ compiler at.
  if (!in.has_file() || in.format == InputFormat::TorchCsv || (in.format == InputFormat::ScheduleJson && !written))
    return;
  eo.line_file = s.sources.path(in.file);
  eo.default_line = in.format == InputFormat::Spec ? in.map.schedule().line : 1;
  if (!written) return;
  for (size_t r = 0; r < sched.ranks.size(); ++r) {
    eo.lines.emplace_back();
    for (size_t i = 0; i < sched.ranks[r].size(); ++i)
      eo.lines.back().push_back(in.map.action(static_cast<int32_t>(r), static_cast<int32_t>(i)).line);
  }
}

}  // namespace

std::optional<Emitted> emit(Session& s, const Input& in, const ir::Schedule& sched, const ir::Program& prog,
                            const ir::Metrics& simulated, const RuntimeFlags* flags, const std::string& source) {
  Emitted em;
  if (!codegen::read_runtime_config(in.spec.runtime, em.runtime, s.diags)) return std::nullopt;
  // Costs stated in a unit of time run at that speed on the synthetic stage (and its measured
  // and simulated times compare directly), unless `ms_per_unit` says otherwise.
  if (const Unit* unit = find_unit(in.spec.problem.time_unit); unit && !in.spec.runtime.find("ms_per_unit"))
    em.runtime.ms_per_unit = unit->scale / 1e6;
  // The model's partition reaches the stages (each builds its own stage's layers), unless
  // --layers asks for one count everywhere (flags->apply below).
  if (const auto& lps = in.spec.layers_per_stage; !lps.empty()) {
    const bool layers_flag = flags && flags->given(schedrt::OptionId::Layers);
    if (const int32_t S = in.spec.problem.num_stages(); lps.size() != static_cast<size_t>(S) && !layers_flag) {
      s.diags.error(DiagKind::BadValue, in.spec.loc_of(ir::Field::Model),
                    "the model's partition gives the layers of " + backtick(std::to_string(lps.size())) +
                        " stages, the problem has " + backtick(std::to_string(S)) +
                        " (--pp or --vpp changed it): give --layers, or change the spec");
      return std::nullopt;
    }
    em.runtime.layers_per_stage = lps;
    em.runtime.embedding = in.spec.has_embedding;
    em.runtime.head = in.spec.has_head;
  }
  if (flags) flags->apply(em.runtime);
  if (const ir::Param* p = in.spec.runtime.find("stage")) em.stage_loc = p->value_loc;
  codegen::EmitOptions eo;
  eo.source_name = source;
  eo.runtime = em.runtime;
  eo.simulated_makespan = simulated.makespan;
  line_map(s, in, sched, eo);
  em.files = codegen::emit_cpp(prog, eo);
  return em;
}

}  // namespace schedc::driver
