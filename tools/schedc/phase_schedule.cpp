// The schedule phase: the schedule the input asks for, from its explicit orders, a family or the
// solver (or the flags' --family / --solve); verified by the next phase.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include "ir/lower_bound.h"
#include "profile/profile.h"
#include "solver/families/families.h"
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

std::optional<ir::Schedule> from_solver(Session& s, Input& in, const ScheduleFlags& flags) {
  auto options = solve_options(s, in, flags);
  if (!options) return std::nullopt;
  solver::SolveResult r = solver::synthesize(in.spec.problem, *options);
  return solved(s, in, r);
}

// `stages_per_rank = auto`: the spec's problem (one stage per rank) cut into each allowed number
// of stages per rank, solved in the order of their lower bounds, each with an equal share of what
// is left of the time limit, skipping those whose bound is no better than the best makespan found;
// the best (the fewest stages per rank on a tie) becomes the input's problem. A table of the
// candidates goes to stderr.
std::optional<ir::Schedule> from_solver_auto(Session& s, Input& in, const ScheduleFlags& flags) {
  const ir::Problem base = in.spec.problem;
  const SourceLoc at = in.spec.loc_of(ir::Field::StagesPerRank);
  if (!flags.warm_start.empty()) {
    s.diags.error(DiagKind::BadFlag, {},
                  "--warm-start fixes the stages per rank, and `stages_per_rank = auto` leaves them to the solve");
    return std::nullopt;
  }
  std::vector<int32_t> allowed;
  switch (base.placement) {
    case ir::PlacementKind::Looped: allowed = {1, 2, 4}; break;
    case ir::PlacementKind::VShape: allowed = {2}; break;
    case ir::PlacementKind::Wave: allowed = {2, 4}; break;
    case ir::PlacementKind::Custom:
      s.diags.error(DiagKind::BadValue, at,
                    "`stages_per_rank = auto` needs placement `looped`, `vshape` or `wave`: a custom "
                    "`stage_to_rank` fixes the stages per rank");
      return std::nullopt;
  }
  auto options = solve_options(s, in, flags);
  if (!options) return std::nullopt;
  struct Candidate {
    int32_t vpp = 0;
    ir::Problem problem;
    double bound = 0;
    std::optional<solver::SolveResult> result;
    std::string skipped;
  };
  std::vector<Candidate> cands;
  for (int32_t v : allowed) {
    Candidate c{v, ir::with_stages_per_rank(base, v), 0, std::nullopt, ""};
    if (auto errors = ir::validate(c.problem); !errors.empty()) {
      c.skipped = errors.front().message;
    } else {
      c.bound = ir::lower_bound(c.problem).value;
    }
    cands.push_back(std::move(c));
  }
  std::vector<size_t> order(cands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cands[a].bound < cands[b].bound; });
  const double limit = options->time_limit_s;
  const auto t0 = std::chrono::steady_clock::now();
  double shared = 0;  // deterministic runs: the shares of the limit given so far
  auto rest = [&] {   // of the limit; deterministic runs count shares, not the clock
    if (options->deterministic) return limit - shared;
    return std::max(limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.0);
  };
  std::optional<size_t> best;
  auto better = [&](size_t a, size_t b) {  // a's result beats b's
    const solver::SolveResult &x = *cands[a].result, &y = *cands[b].result;
    return x.objective < y.objective || (x.objective == y.objective && cands[a].vpp < cands[b].vpp);
  };
  for (size_t k = 0; k < order.size(); ++k) {
    Candidate& c = cands[order[k]];
    if (!c.skipped.empty()) continue;
    if (best && c.bound >= cands[*best].result->objective) {
      c.skipped = "its bound " + format_number(c.bound) + " is no better than " +
                  format_number(cands[*best].result->objective);
      continue;
    }
    size_t left = 0;
    for (size_t j = k; j < order.size(); ++j) left += cands[order[j]].skipped.empty();
    solver::SolveOptions o = *options;
    // Deterministic runs share the limit by count alone, so that their answer does not depend on
    // the clock.
    o.time_limit_s = o.deterministic ? limit / static_cast<double>(cands.size()) : rest() / static_cast<double>(left);
    shared += o.time_limit_s;
    c.result = solver::synthesize(c.problem, o);
    if (c.result->status == solver::SolveStatus::Infeasible || !c.result->schedule) continue;
    if (!best || better(order[k], *best)) best = order[k];
    if (c.result->interrupted) break;
  }
  // The shares of the candidates that were skipped go to the best one while its gap is open: its
  // search goes on from its schedule (a warm start: never worse), so the limit is used.
  if (best && !cands[*best].result->interrupted && cands[*best].result->status != solver::SolveStatus::Optimal &&
      rest() > 0.01 * limit) {
    Candidate& c = cands[*best];
    solver::SolveOptions o = *options;
    o.time_limit_s = rest();
    o.warm_starts.push_back({"vpp-" + std::to_string(c.vpp), *c.result->schedule});
    solver::SolveResult more = solver::synthesize(c.problem, o);
    if (more.schedule && more.status != solver::SolveStatus::Infeasible && more.objective <= c.result->objective)
      c.result = std::move(more);
  }
  if (!flags.quiet) {
    std::cerr << "schedc: stages_per_rank = auto:\n";
    for (const Candidate& c : cands) {
      std::cerr << "  vpp " << c.vpp << ": ";
      if (c.result && c.result->status != solver::SolveStatus::Infeasible && c.result->schedule)
        std::cerr << (best && cands[*best].vpp == c.vpp ? "chosen, " : "") << solver::to_string(c.result->status) << " "
                  << format_number(c.result->objective) << ", bound " << format_number(c.result->lower_bound) << "\n";
      else if (c.result) std::cerr << "no schedule meets the cap\n";
      else std::cerr << "skipped: " << c.skipped << "\n";
    }
  }
  // The chosen candidate's problem is the input's from here on; with none, v = 1's infeasibility
  // (or the first candidate's) is reported as a plain solve's.
  size_t pick = best ? *best : 0;
  for (size_t i = 0; !best && i < cands.size(); ++i)
    if (cands[i].result) {
      pick = i;
      break;
    }
  in.spec.problem = cands[pick].problem;
  if (!cands[pick].result) {
    s.diags.error(DiagKind::BadValue, at, "no number of stages per rank could be tried: " + cands[pick].skipped);
    return std::nullopt;
  }
  return solved(s, in, *cands[pick].result);
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
  if (flags.family) {
    sched = from_family(s, in, *flags.family, {}, SourceLoc{});
  } else if (in.spec.stages_per_rank_auto && solve) {
    sched = from_solver_auto(s, in, flags);
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
