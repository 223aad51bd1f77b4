// The load phase: the input file (a .sched spec, schedule JSON or torch-csv), with the problem
// flags over its problem.

#include "frontend/torch_csv.h"
#include "ir/json_io.h"
#include "tools/schedc/phases.h"

namespace schedc::driver {

namespace {

// A schedule JSON document is an object; neither a spec nor a CSV row can start with `{`, so a copy
// saved without the `.json` suffix (`sched_copy.txt`, a pipe) is still read as one.
bool looks_like_json(std::string_view text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && text[i] == '{';
}

// Every problem field a JSON schedule or torch-csv import fixes.
void mark_all_given(Input& in) {
  for (ir::Field f : ir::kProblemFields) in.spec.given.emplace(f, SourceLoc{in.file, 0, 0});
  // The document's numbers are in its units: flags in other units are converted to the finest.
  const ir::Problem& p = in.spec.problem;
  for (ir::Field f : ir::kTimeFields)
    if (!p.time_unit.empty()) in.spec.units[f] = p.time_unit;
  for (ir::Field f : ir::kMemoryFields)
    if (!p.memory_unit.empty()) in.spec.units[f] = p.memory_unit;
}

}  // namespace

std::optional<Input> load(Session& s, const std::string& path, const ProblemFlags& flags) {
  Input in;
  if (path.empty()) {
    in.kind = Input::Kind::FlagsOnly;
  } else {
    in.file = s.read_file(path);
    if (in.file < 0) return std::nullopt;
    in.spec.file = in.file;
    // The suffix names the format when it is `.json` or `.csv`; any other name (a `.sched` spec, a
    // copy saved as `.txt`, stdin) is read as schedule JSON when its content is one.
    const bool csv = path.ends_with(".csv");
    if (path.ends_with(".json") || (!csv && looks_like_json(s.sources.text(in.file)))) {
      in.kind = Input::Kind::ScheduleJson;
      auto sched = ir::read_schedule_json(s.sources, in.file, s.diags);
      if (!sched) return std::nullopt;
      in.spec.problem = sched->problem;
      in.spec.schedule.kind = frontend::SourceKind::Explicit;
      in.spec.schedule.ranks = std::move(sched->ranks);
      in.spec.schedule.overlap = std::move(sched->overlap);
      in.provenance = std::move(sched->provenance);
      mark_all_given(in);
    } else if (csv) {
      in.kind = Input::Kind::TorchCsv;
      frontend::Spec base;
      if (!flags.apply(base, true, s.diags)) return std::nullopt;
      auto sched = frontend::read_torch_csv(s.sources, in.file, base.problem, base.given, s.diags);
      if (!sched) return std::nullopt;
      in.spec.problem = sched->problem;
      in.spec.schedule.kind = frontend::SourceKind::Explicit;
      in.spec.schedule.ranks = std::move(sched->ranks);
      in.spec.schedule.overlap = std::move(sched->overlap);
      mark_all_given(in);
      return in;  // the flags were applied by the importer
    } else {
      in.kind = Input::Kind::Spec;
      auto spec = frontend::parse_spec(s.sources, in.file, s.diags);
      if (!spec) return std::nullopt;
      in.spec = std::move(*spec);
    }
  }
  if (in.kind == Input::Kind::FlagsOnly && (!flags.pp || !flags.microbatches)) {
    // A problem that was never stated is not one rank and one microbatch.
    std::string missing = !flags.pp && !flags.microbatches ? "--pp and --microbatches" : !flags.pp ? "--pp" : "--microbatches";
    s.diags.error(DiagKind::BadFlag, {},
                  "no problem is stated: without a spec, give " + missing +
                      " (the ranks and microbatches; the other problem flags have defaults)");
    return std::nullopt;
  }
  if (flags.any() || in.kind == Input::Kind::FlagsOnly) {
    // A JSON document's memory deltas may be unbalanced (version 1 allowed it); the check applies
    // to what a spec or a flag states.
    bool check_balance = in.kind != Input::Kind::ScheduleJson;
    if (!flags.apply(in.spec, check_balance, s.diags)) return std::nullopt;
  }
  return in;
}

}  // namespace schedc::driver
