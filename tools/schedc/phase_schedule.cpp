// The schedule phase: the schedule the input asks for, from its explicit orders, a family or the
// solver (or the flags' --family / --solve); verified by the next phase.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include "ir/lower_bound.h"
#include "ir/model.h"
#include "profile/profile.h"
#include "solver/families/families.h"
#include "solver/synth/plan.h"
#include "solver/synth/synthesize.h"
#include "support/numbers.h"
#include "tools/schedc/interrupt.h"
#include "tools/schedc/phases.h"

namespace schedc::driver {

namespace {

void report_problem_errors(Session& s, const Input& in, const std::vector<ir::ProblemError>& errors) {
  for (const ir::ProblemError& e : errors) {
    SourceLoc loc = in.spec.loc_of(e.field);
    s.diags.error(e.kind, loc, e.message);
  }
}

std::optional<ir::Schedule> from_family(Session& s, Input& in, const std::string& name, const ir::Params& params,
                                        SourceLoc loc) {
  const solver::FamilyInfo* fam = solver::find_family(name);
  if (!fam) {
    std::string known;
    for (const auto& f : solver::families()) known += (known.empty() ? "" : ", ") + f.name;
    s.diags.error(DiagKind::UnknownFamily, loc, "unknown family " + backtick(name) + ", expected one of " + known);
    return std::nullopt;
  }
  std::vector<ir::Field> given;
  for (const auto& [field, loc] : in.spec.given) given.push_back(field);
  solver::apply_family_defaults(*fam, given, in.spec.problem);
  auto errors = ir::validate(in.spec.problem);
  if (!errors.empty()) {
    report_problem_errors(s, in, errors);
    return std::nullopt;
  }
  return solver::generate_family(name, in.spec.problem, params, loc, s.diags);
}

// A --warm-start file: its orders, for a problem of the input's shape.
std::optional<solver::SolveOptions::WarmStart> read_warm_start(Session& s, const Input& in, const std::string& path) {
  const int32_t file = s.read_file(path);
  if (file < 0) return std::nullopt;
  const frontend::InputFormat format = frontend::input_format(s.sources, file, path);
  // A torch-csv file's shape is inferred and checked against the problem being solved.
  frontend::Spec command_line;
  if (format == frontend::InputFormat::TorchCsv) command_line = in.spec;
  auto read = frontend::read_input(s.sources, file, format, command_line, s.diags);
  if (!read) return std::nullopt;
  if (!read->schedule) {
    s.diags.error(DiagKind::NoSchedule, read->map.file(),
                  "a warm start writes a schedule's orders (schedule JSON, torch-csv, or a spec with `schedule = "
                  "explicit {...}`); this input writes none");
    return std::nullopt;
  }
  std::string why;
  if (!solver::same_shape(read->schedule->problem, in.spec.problem, &why)) {
    s.diags.error(DiagKind::BadValue, read->map.file(), "this warm start is a schedule of another problem: " + why);
    return std::nullopt;
  }
  s.replaceable.push_back(file);
  const std::string name = std::filesystem::path(path).filename().string();
  return solver::SolveOptions::WarmStart{"warm-start(" + name + ")", std::move(*read->schedule)};
}

// The solver's answer, or its infeasibility explained in the spec's terms.
// The solver's options from the spec's `schedule = solve { ... }` and the flags; nullopt after an
// error.
std::optional<solver::SolveOptions> solve_options(Session& s, Input& in, const ScheduleFlags& flags) {
  const frontend::ScheduleSource& src = in.spec.schedule;
  solver::SolveOptions options;
  if (src.kind == frontend::SourceKind::Solve && !solver::apply_solve_params(src.params, options, s.diags))
    return std::nullopt;
  if (flags.time_limit) {
    if (!(*flags.time_limit > 0)) {
      s.diags.error(DiagKind::BadFlag, {}, "--time-limit must be a positive number of seconds");
      return std::nullopt;
    }
    options.time_limit_s = *flags.time_limit;
  }
  if (flags.deterministic) options.deterministic = true;
  if (flags.threads) {
    if (*flags.threads < 1 || *flags.threads > solver::kMaxThreads) {
      s.diags.error(DiagKind::BadFlag, {},
                    "--threads must be a whole number in 1.." + std::to_string(solver::kMaxThreads));
      return std::nullopt;
    }
    options.threads = *flags.threads;
  }
  if (!flags.quiet) {
    options.progress = &std::cerr;
    options.tty = isatty(STDERR_FILENO) != 0;
  }
  if (flags.debug) options.debug = DebugLog(&std::cerr);
  if (flags.z3_fault == "error") options.z3_fault = solver::SolveOptions::Z3Fault::Error;
  if (flags.z3_fault == "invalid-model") options.z3_fault = solver::SolveOptions::Z3Fault::InvalidModel;
  for (const std::string& path : flags.warm_start) {
    auto w = read_warm_start(s, in, path);
    if (!w) return std::nullopt;
    options.warm_starts.push_back(std::move(*w));
  }
  options.stop = install_interrupt_handlers();
  return options;
}

// The solve's schedule, its warnings and notes reported; an infeasible cap is an error that names
// the fields in conflict.
std::optional<ir::Schedule> solved(Session& s, Input& in, solver::SolveResult& r) {
  const frontend::ScheduleSource& src = in.spec.schedule;
  // Where the spec asks for the solve; `--solve` has no place in a file.
  const SourceLoc solve_loc = src.kind == frontend::SourceKind::Solve ? src.loc : SourceLoc{};
  for (const std::string& w : r.warnings) s.diags.warning(DiagKind::Solver, solve_loc, w);
  if (!r.bound_error.empty()) std::cerr << "schedc: internal error: " << r.bound_error << "\n";
  if (r.interrupted && r.schedule)
    std::cerr << "schedc: interrupted: the search ended early; writing the best schedule found (status "
              << solver::to_string(r.status) << ", " << format_number(r.objective) << ")\n";
  if (r.status != solver::SolveStatus::Infeasible) return std::move(r.schedule);
  const solver::Infeasibility& why = *r.infeasible;
  using ir::Field;
  SourceLoc at = in.spec.loc_of(Field::MemoryCap);
  std::string msg = "no schedule meets the memory cap: " + why.explanation;
  if (why.smallest_cap > 0)
    msg += "; the smallest feasible cap is " + backtick(format_number(why.smallest_cap) + in.spec.problem.memory_unit);
  s.diags.error(DiagKind::CapInfeasible, at, msg);
  for (const Field field : why.conflicting_fields) {
    if (field == Field::MemoryCap) continue;
    SourceLoc loc = in.spec.loc_of(field);
    std::string what = field == Field::MemoryF ? "the forward activation size `memory.F`"
                       : field == Field::StagesPerRank
                           ? "the stages this rank holds (`stages_per_rank` and `placement`)"
                           : backtick(ir::to_string(field));
    if (!loc.has_line() && field == Field::StagesPerRank) loc = in.spec.loc_of(Field::Placement);
    s.diags.note(loc.has_file() ? loc : at, "in conflict with " + what);
  }
  return std::nullopt;
}

// What the plan may choose (solver/synth/plan.h) and the input allows: `stages_per_rank = auto`
// needs a placement that fixes no stage count and no warm start; `partition = auto` a model whose
// other per-stage values follow its partition. nullopt after an error.
std::optional<solver::PlanSpace> plan_space(Session& s, Input& in, const ScheduleFlags& flags) {
  solver::PlanSpace space;
  space.base = in.spec.problem;
  space.vpp_auto = in.spec.stages_per_rank_auto;
  space.placement_auto = in.spec.placement_auto;
  const ir::Problem& p = in.spec.problem;
  if (space.vpp_auto) {
    const SourceLoc at = in.spec.loc_of(ir::Field::StagesPerRank);
    if (!flags.warm_start.empty()) {
      s.diags.error(DiagKind::BadFlag, {},
                    "--warm-start fixes the stages per rank, and `stages_per_rank = auto` leaves them to the solve");
      return std::nullopt;
    }
    if (p.placement == ir::PlacementKind::Custom) {
      s.diags.error(DiagKind::BadValue, at,
                    "`stages_per_rank = auto` needs placement `looped`, `vshape` or `wave`: a custom "
                    "`stage_to_rank` fixes the stages per rank");
      return std::nullopt;
    }
  }
  if (in.spec.partition_auto && in.spec.model) {
    const SourceLoc at = in.spec.partition_loc;
    if (!flags.warm_start.empty()) {
      s.diags.error(
          DiagKind::BadFlag, {},
          "--warm-start fixes the partition's costs, and `partition = auto` leaves the partition to the solve");
      return std::nullopt;
    }
    // Values per stage that the model does not derive cannot follow a partition the solve chooses.
    auto refuse = [&](ir::Field field, const char* why) {
      s.diags.error(DiagKind::BadValue, in.spec.loc_of(field),
                    backtick(ir::to_string(field)) + " " + why +
                        " with `partition = auto`: the solve chooses each stage's layers");
      s.diags.note(at, "`partition = auto` is here");
    };
    if (p.cost.FB) return refuse(ir::Field::CostFB, "cannot be stated"), std::nullopt;
    if (p.cost.R && !p.cost.R->is_uniform())
      return refuse(ir::Field::CostR, "cannot be a per-stage list"), std::nullopt;
    if (p.memory.input && !p.memory.input->is_uniform() && !in.spec.model->derive_input)
      return refuse(ir::Field::MemoryInput, "cannot be a per-stage list"), std::nullopt;
    if (!in.spec.model->deltas_follow)
      return refuse(in.spec.is_given(ir::Field::MemoryB) ? ir::Field::MemoryB : ir::Field::MemoryW, "cannot be stated"),
             std::nullopt;
    space.model = &*in.spec.model;
  }
  return space;
}

// The solve, through the plan layer (solver/synth/plan.h) where the input leaves the stages per
// rank or the partition open: its chosen problem and partition become the input's from here on,
// and a table of the candidates goes to stderr (not with --quiet).
std::optional<ir::Schedule> from_solver(Session& s, Input& in, const ScheduleFlags& flags) {
  auto space = plan_space(s, in, flags);
  if (!space) return std::nullopt;
  auto options = solve_options(s, in, flags);
  if (!options) return std::nullopt;
  solver::PlanResult plan = solver::solve_plan(*space, *options);
  const bool planned = space->vpp_auto || space->placement_auto || space->model;
  if (planned && !flags.quiet) {
    std::cerr << (space->model || space->placement_auto ? "schedc: plan:\n" : "schedc: stages_per_rank = auto:\n");
    size_t skipped = 0;
    for (const solver::PlanCandidate& c : plan.candidates) {
      if (space->model && !c.makespan && !c.chosen) {
        ++skipped;
        continue;
      }
      std::cerr << "  ";
      if (space->placement_auto) std::cerr << ir::to_string(c.placement) << " ";
      std::cerr << "vpp " << c.stages_per_rank;
      if (!c.layers_per_stage.empty()) {
        std::cerr << ", layers";
        for (int32_t n : c.layers_per_stage) std::cerr << " " << n;
      }
      std::cerr << ": ";
      if (c.makespan)
        std::cerr << (c.chosen ? "chosen, " : "") << c.status << " " << format_number(*c.makespan) << ", bound "
                  << format_number(c.bound) << "\n";
      else std::cerr << c.status << "\n";
    }
    if (skipped) std::cerr << "  and " << skipped << " more partitions not solved (their bounds, or the time)\n";
    if (space->model)
      std::cerr << "  plan bound " << format_number(plan.solve.lower_bound) << " over "
                << (plan.bound_exhaustive ? "every partition" : "every partition (open nodes by their prefix)")
                << " of each placement and stages-per-rank value tried\n";
  }
  if (!plan.error.empty()) {
    s.diags.error(DiagKind::BadValue, in.spec.loc_of(ir::Field::StagesPerRank),
                  "no number of stages per rank could be tried: " + plan.error);
    return std::nullopt;
  }
  in.spec.problem = plan.problem;
  if (space->model) in.spec.layers_per_stage = plan.layers_per_stage;
  if (!flags.quiet && space->model && plan.problem.placement == ir::PlacementKind::Looped &&
      !plan.layers_per_stage.empty())
    std::cerr << "  megatron layout: --pipeline-model-parallel-layout \""
              << ir::megatron_layout(*space->model, plan.layers_per_stage) << "\"\n";
  if (!flags.quiet && space->model && !plan.layers_per_stage.empty())
    std::cerr << "  torchtitan: module_fqns_per_model_part = "
              << ir::torchtitan_modules(*space->model, plan.layers_per_stage) << "\n";
  auto sched = solved(s, in, plan.solve);
  if (sched && space->model) {
    sched->layers_per_stage = plan.layers_per_stage;
    sched->embedding = in.spec.has_embedding;
    sched->head = in.spec.has_head;
  }
  return sched;
}

}  // namespace

std::optional<ir::Schedule> schedule(Session& s, Input& in, const ScheduleFlags& flags) {
  auto errors = ir::validate(in.spec.problem);
  if (!errors.empty() && !flags.family) {
    report_problem_errors(s, in, errors);
    return std::nullopt;
  }
  std::optional<ir::Schedule> sched;
  const frontend::ScheduleSource& src = in.spec.schedule;
  if (flags.family && flags.solve) {
    s.diags.error(DiagKind::BadFlag, {}, "--family and --solve exclude each other");
    return std::nullopt;
  }
  const bool solve = !flags.family && (flags.solve || src.kind == frontend::SourceKind::Solve);
  if (!flags.warm_start.empty() && !solve) {
    s.diags.error(DiagKind::BadFlag, {},
                  "--warm-start starts the solver's search: it needs --solve or a spec's `schedule = solve`");
    return std::nullopt;
  }
  if (in.spec.stages_per_rank_auto && !solve) {
    s.diags.error(DiagKind::BadValue, in.spec.loc_of(ir::Field::StagesPerRank),
                  "`stages_per_rank = auto` needs `schedule = solve` or --solve: a family or explicit orders fix the "
                  "stages per rank");
    return std::nullopt;
  }
  if (in.spec.placement_auto && !solve) {
    s.diags.error(DiagKind::BadValue, in.spec.loc_of(ir::Field::Placement),
                  "`placement = auto` needs `schedule = solve` or --solve: a family or explicit orders fix the "
                  "placement");
    return std::nullopt;
  }
  if (in.spec.partition_auto && !solve) {
    s.diags.error(DiagKind::BadValue, in.spec.partition_loc,
                  "`partition = auto` needs `schedule = solve` or --solve: a family or explicit orders run the "
                  "partition they are given");
    return std::nullopt;
  }
  if (flags.family) {
    sched = from_family(s, in, *flags.family, {}, SourceLoc{});
  } else if (flags.solve || src.kind == frontend::SourceKind::Solve) {
    sched = from_solver(s, in, flags);
  } else if (src.kind == frontend::SourceKind::Family) {
    sched = from_family(s, in, src.family, src.params, src.loc);
  } else if (in.schedule) {
    // The input's own orders, for its problem with the flags over it.
    sched = *in.schedule;
    sched->problem = in.spec.problem;
    sched->provenance = ir::Provenance::of("explicit");
  } else {
    s.diags.error(DiagKind::NoSchedule, in.map.file(),
                  !in.has_file() ? "no schedule to work on: give a spec or schedule file, or --family NAME, or --solve"
                                 : "the spec has no `schedule`: add `schedule = family NAME`, `schedule = solve` or "
                                   "`schedule = explicit {...}`, or pass --family NAME or --solve");
    return std::nullopt;
  }
  return sched;
}

std::optional<ir::Schedule> probe_schedule(Session& s, Input& in, const ScheduleFlags& flags) {
  const bool solve = flags.solve || (!flags.family && in.spec.schedule.kind == frontend::SourceKind::Solve);
  std::optional<ir::Problem> problem;
  if (!solve) {
    auto sched = schedule(s, in, flags);
    std::optional<ir::Timeline> timeline;
    if (!sched || !verify(s, in, *sched, timeline)) return std::nullopt;
    problem = sched->problem;
  } else {
    auto errors = ir::validate(in.spec.problem);
    report_problem_errors(s, in, errors);
    if (!errors.empty()) return std::nullopt;
    problem = in.spec.problem;
  }
  return profile::probe_schedule(*problem);
}

}  // namespace schedc::driver
