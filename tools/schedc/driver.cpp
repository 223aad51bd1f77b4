#include "tools/schedc/driver.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "codegen/torch_csv.h"
#include "ir/json_io.h"
#include "solver/families/families.h"
#include "solver/synth/synthesize.h"
#include "support/input.h"
#include "support/internal_error.h"
#include "support/output.h"
#include "support/numbers.h"
#include "support/units.h"
#include "tools/schedc/interrupt.h"

namespace schedc::driver {

namespace {

// "1" or "1:2:3" (one value per stage or rank), each with an optional unit of `dim` (`12.5ms`);
// a list is expressed in its finest unit, recorded in `units[field]` (erased when plain). With
// `allow_none`, "none" clears `*optional_out` (and returns an empty value). nullopt after setting
// `error` to the flag's message.
std::optional<ir::PerStage> parse_values(const std::string& flag, const std::string& key, const std::string& text,
                                         bool allow_none, std::optional<ir::PerStage>* optional_out, Dimension dim,
                                         std::map<std::string, std::string>& units, std::string& error) {
  std::string field = flag + "." + key;
  units.erase(field);
  if (allow_none && text == "none") {
    *optional_out = std::nullopt;
    return ir::PerStage{};
  }
  auto fail = [&](std::string message) -> std::optional<ir::PerStage> {
    error = std::move(message);
    return std::nullopt;
  };
  ir::PerStage v;
  std::stringstream ss(text);
  std::string part;
  std::vector<Quantity> values;
  const Unit* target = nullptr;
  while (std::getline(ss, part, ':')) {
    auto x = parse_quantity(part);
    if (!x) {
      size_t at = unit_suffix_start(part);
      if (at != std::string::npos)
        return fail("--" + flag + ": unknown unit `" + part.substr(at) + "` in `" + part + "`, " +
                    std::string(to_string(dim)) + " units are " + unit_names(dim));
      return fail("--" + flag + ": `" + key + "` needs a number or numbers separated by `:`, got `" + text + "`");
    }
    if (x->unit && x->unit->dim != dim)
      return fail("--" + flag + ": `" + key + "` is a " + std::string(to_string(dim)) + ", got `" + part + "` (a " +
                  std::string(to_string(x->unit->dim)) + " unit)");
    target = finer_unit(target, x->unit);
    values.push_back(*x);
  }
  if (values.empty()) return fail("--" + flag + ": `" + key + "` needs a value");
  std::vector<double> numbers;
  for (const Quantity& q : values) {
    if (target && !q.unit && q.value != 0)
      return fail("--" + flag + ": `" + key + "` mixes plain numbers and units in `" + text + "`");
    numbers.push_back(q.unit ? convert(q.value, *q.unit, *target) : q.value);
  }
  if (target) units[field] = std::string(target->name);
  if (numbers.size() == 1) v = ir::PerStage::of(numbers[0]);
  else v = ir::PerStage::list(numbers);
  if (optional_out) *optional_out = v;
  return v;
}

// Applies "K=V,K=V" pairs; `apply_one` returns false for an unknown key and sets `error` for a bad
// value. False, with `error` set, at the first bad pair.
template <class Fn>
bool for_each_pair(const std::string& flag, const std::string& text, const char* keys, std::string& error,
                   Fn apply_one) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      error = "--" + flag + ": expected KEY=VALUE pairs separated by `,`, got `" + item + "`";
      return false;
    }
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!apply_one(key, value)) {
      error = "--" + flag + ": unknown key `" + key + "`, expected one of " + keys;
      return false;
    }
    if (!error.empty()) return false;
  }
  return true;
}

template <class T>
std::optional<T> parse_enum(const std::string& flag, const std::string& text,
                            std::optional<T> (*parse)(std::string_view), const char* allowed, std::string& error) {
  auto v = parse(text);
  if (!v) error = "--" + flag + ": expected " + std::string(allowed) + ", got `" + text + "`";
  return v;
}

}  // namespace

CLI::Validator number_in(double lo, double hi) {
  // 100000, not format_number's 1e+05
  auto shown = [](double v) {
    return std::abs(v) < 1e15 && v == std::floor(v) ? std::to_string(static_cast<int64_t>(v)) : format_number(v);
  };
  std::string range = shown(lo) + ".." + shown(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        auto v = parse_number(text);
        if (v && *v >= lo && *v <= hi) return {};
        return "expected a number in " + range + ", got `" + text + "`";
      },
      "NUMBER in " + range);
}

void ProblemFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--pp", pp, "number of ranks (pipeline stages' devices)")->group("Problem");
  cmd.add_option("--vpp", vpp, "stages per rank")->group("Problem");
  cmd.add_option("--microbatches,-m", microbatches, "number of microbatches")->group("Problem");
  cmd.add_option("--direction", direction, "single | bidirectional")->group("Problem");
  cmd.add_option("--placement", placement, "looped | vshape | wave (custom needs a spec)")->group("Problem");
  cmd.add_option("--backward", backward, "fused | split | mixed")->group("Problem");
  cmd.add_option("--cost", cost, "F=1,B=1,W=1,comm=0[,FB=x]; per-stage values as 1:1:2; units as F=12.5ms")->group("Problem");
  cmd.add_option("--memory", memory, "F=1[,B=x,W=x,cap=x|none,static=x,balanced=false]; per-rank cap as 4:4:3:3; units as F=1.2GiB")->group("Problem");
  cmd.add_option("--objective", objective, "makespan | max-span")->group("Problem");
}

bool ProblemFlags::any() const {
  return pp || vpp || microbatches || direction || placement || backward || cost || memory || objective;
}

bool ProblemFlags::apply(frontend::Spec& spec, bool check_balance, Diagnostics& diags) const {
  std::string error;
  apply_or_explain(spec, check_balance, error);
  if (error.empty()) return true;
  diags.error(DiagKind::BadFlag, {}, std::move(error));
  return false;
}

void ProblemFlags::apply_or_explain(frontend::Spec& spec, bool check_balance, std::string& error) const {
  ir::Problem& p = spec.problem;
  std::map<std::string, SourceLoc>& given = spec.given;
  std::map<std::string, std::string>& units = spec.units;
  std::map<std::string, std::string> set;  // problem field -> the flag that set it
  auto mark = [&](const std::string& field) {
    given[field] = SourceLoc{};
    set[field] = field == "ranks"             ? "--pp"
                 : field == "stages_per_rank" ? "--vpp"
                 : field == "microbatches"    ? "--microbatches"
                                              : "--" + field.substr(0, field.find('.'));
  };
  if (pp) p.ranks = *pp, mark("ranks");
  if (vpp) p.stages_per_rank = *vpp, mark("stages_per_rank");
  if (microbatches) p.microbatches = *microbatches, mark("microbatches");
  if (direction) {
    auto v = parse_enum("direction", *direction, ir::parse_direction, "`single` or `bidirectional`", error);
    if (!v) return;
    p.direction = *v, mark("direction");
  }
  if (placement) {
    auto v = parse_enum("placement", *placement, ir::parse_placement, "`looped`, `vshape` or `wave`", error);
    if (!v) return;
    p.placement = *v;
    if (p.placement == ir::PlacementKind::Custom) {
      error = "--placement: `custom` needs `stage_to_rank`, which only a spec file can give";
      return;
    }
    p.stage_to_rank.clear();
    mark("placement");
  }
  if (backward) {
    auto v = parse_enum("backward", *backward, ir::parse_backward, "`fused`, `split` or `mixed`", error);
    if (!v) return;
    p.backward = *v, mark("backward");
  }
  if (objective) {
    auto v = parse_enum("objective", *objective, ir::parse_objective, "`makespan` or `max-span`", error);
    if (!v) return;
    p.objective = *v, mark("objective");
  }
  // Each pair's value: false for an unknown key; `error` set for a bad value.
  auto values = [&](const std::string& flag, const std::string& k, const std::string& v, ir::PerStage& out,
                    Dimension dim) {
    if (auto x = parse_values(flag, k, v, false, nullptr, dim, units, error)) out = std::move(*x);
  };
  if (cost && !for_each_pair("cost", *cost, "F, B, W, comm, FB", error, [&](const std::string& k, const std::string& v) {
        constexpr Dimension kTime = Dimension::Time;
        if (k == "F") values("cost", k, v, p.cost.F, kTime);
        else if (k == "B") values("cost", k, v, p.cost.B, kTime);
        else if (k == "W") values("cost", k, v, p.cost.W, kTime);
        else if (k == "FB") {
          ir::PerStage x;
          values("cost", k, v, x, kTime);
          if (error.empty()) p.cost.FB = x;
        } else if (k == "comm") {
          ir::PerStage x;
          values("cost", k, v, x, kTime);
          if (error.empty() && !x.is_uniform()) error = "--cost: `comm` needs one number, got `" + v + "`";
          if (error.empty()) p.cost.comm = x.uniform;
        } else return false;
        if (error.empty()) mark("cost." + k);
        return true;
      }))
    return;
  if (memory &&
      !for_each_pair("memory", *memory, "F, B, W, cap, static, balanced", error, [&](const std::string& k, const std::string& v) {
        constexpr Dimension kMemory = Dimension::Memory;
        if (k == "F") values("memory", k, v, p.memory.F, kMemory);
        else if (k == "B") values("memory", k, v, p.memory.B, kMemory);
        else if (k == "W") values("memory", k, v, p.memory.W, kMemory);
        else if (k == "cap") parse_values("memory", k, v, true, &p.memory.cap, kMemory, units, error);
        else if (k == "static") values("memory", k, v, p.memory.static_memory, kMemory);
        else if (k == "balanced") {
          if (v != "true" && v != "false") error = "--memory: `balanced` needs `true` or `false`, got `" + v + "`";
          else spec.balanced = v == "true";
        } else return false;
        if (error.empty()) mark("memory." + k);
        return true;
      }))
    return;
  // Units, memory.B/W following memory.F, the balance check: a conflict the flags brought in is
  // the command line's error.
  // A flag that sets a memory delta makes the balance its business, whatever the input.
  bool deltas_set = set.count("memory.F") || set.count("memory.B") || set.count("memory.W");
  for (const ir::ProblemError& e : frontend::complete_problem(spec, check_balance || deltas_set)) {
    auto it = set.find(e.field);
    std::string flag = it != set.end() ? it->second
                       : e.field.rfind("memory.", 0) == 0 && memory ? "--memory"
                       : e.field.rfind("cost.", 0) == 0 && cost    ? "--cost"
                                                                   : "the problem flags";
    std::string message = e.message;
    const std::string spec_hint = "write `balanced = false` in `memory`";
    if (size_t at = message.find(spec_hint); at != std::string::npos)
      message.replace(at, spec_hint.size(), "add `balanced=false` to --memory");
    error = flag + ": " + message;
    return;
  }
  // A value out of its range is the flag's error (exit 2), whatever the rest of the problem is;
  // the ranges themselves are validate()'s.
  for (const ir::ProblemError& e : ir::validate(p)) {
    auto it = set.find(e.field);
    if (e.kind == DiagKind::OutOfRange && it != set.end()) {
      error = it->second + ": " + e.message;
      return;
    }
  }
}

void ScheduleFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--family", family, "generate the schedule of a known family (see `schedc families`)")
      ->group("Schedule");
  cmd.add_flag("--solve", solve, "synthesize the schedule with the solver")->group("Schedule");
  cmd.add_option("--time-limit", time_limit, "solver time limit in seconds (default 60)")
      ->check(number_in(solver::kMinTimeLimit, solver::kMaxTimeLimit))
      ->group("Schedule");
  cmd.add_flag("--deterministic", deterministic, "solver uses resource limits, not wall time")->group("Schedule");
  cmd.add_option("--threads", threads, "solver threads (default: every core)")
      ->check(CLI::Range(1, solver::kMaxThreads))
      ->group("Schedule");
  cmd.add_flag("--quiet,-q", quiet, "no progress output")->group("Schedule");
  cmd.add_flag("--debug", debug, "print the solver's debug lines on stderr (variants, Z3 probes, windows)")
      ->group("Schedule");
  cmd.add_option("--z3-fault", z3_fault, "testing: make Z3 fail (error | invalid-model)")
      ->check(CLI::IsMember({"error", "invalid-model"}))
      ->group("");
}

void ScheduleArgs::add_to(CLI::App& cmd) {
  cmd.add_option("input", path, "a .sched spec, schedule JSON (by its .json suffix or its content) or torch .csv; - reads a spec or schedule JSON from stdin (omit with --family or --solve)");
  problem.add_to(cmd);
  schedule.add_to(cmd);
}

std::optional<Scheduled> load_and_schedule(Session& s, const ScheduleArgs& args) {
  auto in = load_input(s, args.path, args.problem);
  if (!in) return std::nullopt;
  std::optional<ir::Timeline> timeline;
  auto sched = obtain_schedule(s, *in, args.schedule, &timeline);
  if (!sched) return std::nullopt;
  ir::Timeline t = timeline ? std::move(*timeline) : simulate_verified(*sched);
  return Scheduled{std::move(*in), std::move(*sched), std::move(t)};
}

int exit_code(const Diagnostics& diags) {
  if (diags.has_error_of_kind(DiagKind::Internal)) return kInternalError;
  if (diags.has_error_of_kind(DiagKind::BadFlag)) return kBadCommandLine;
  return diags.has_errors() ? kInputError : kOk;
}

int Session::finish() { return finish(exit_code(diags)); }

int Session::fail() {
  int code = finish();
  return code == kOk ? kInputError : code;
}

int Session::finish(int code) {
  std::cout.flush();
  diags.print(std::cerr);
  return code;
}

int32_t Session::read_file(const std::string& path) { return read_source(sources, diags, path); }

namespace {

// A schedule JSON document is an object; neither a spec nor a CSV row can start with `{`, so a copy
// saved without the `.json` suffix (`sched_copy.txt`, a pipe) is still read as one.
bool looks_like_json(std::string_view text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && text[i] == '{';
}

// Every problem field a JSON schedule or torch-csv import fixes.
void mark_all_given(Input& in) {
  for (const char* f : {"ranks", "stages_per_rank", "microbatches", "direction", "placement", "stage_to_rank",
                        "backward", "objective", "cost.F", "cost.B", "cost.W", "cost.comm", "cost.FB", "memory.F",
                        "memory.B", "memory.W", "memory.cap", "memory.static"})
    in.spec.given.emplace(f, SourceLoc{in.file, 0, 0});
  // The document's numbers are in its units: flags in other units are converted to the finest.
  const ir::Problem& p = in.spec.problem;
  for (const char* f : {"cost.F", "cost.B", "cost.W", "cost.comm", "cost.FB"})
    if (!p.time_unit.empty()) in.spec.units[f] = p.time_unit;
  for (const char* f : {"memory.F", "memory.B", "memory.W", "memory.cap", "memory.static"})
    if (!p.memory_unit.empty()) in.spec.units[f] = p.memory_unit;
}

void report_problem_errors(Session& s, const Input& in, const std::vector<ir::ProblemError>& errors) {
  for (const ir::ProblemError& e : errors) {
    SourceLoc loc = in.spec.loc_of(e.field);
    s.diags.error(e.kind, loc, e.message);
  }
}

}  // namespace

std::optional<Input> load_input(Session& s, const std::string& path, const ProblemFlags& flags) {
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
      auto sched = codegen::import_torch_csv(s.sources, in.file, base.problem, base.given, s.diags);
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

namespace {

std::optional<ir::Schedule> from_family(Session& s, Input& in, const std::string& name, const ir::Params& params,
                                        SourceLoc loc) {
  const solver::FamilyInfo* fam = solver::find_family(name);
  if (!fam) {
    std::string known;
    for (const auto& f : solver::families()) known += (known.empty() ? "" : ", ") + f.name;
    s.diags.error(DiagKind::UnknownFamily, loc, "unknown family " + backtick(name) + ", expected one of " + known);
    return std::nullopt;
  }
  std::vector<std::string> given;
  for (const auto& [k, v] : in.spec.given) given.push_back(k);
  solver::apply_family_defaults(*fam, given, in.spec.problem);
  auto errors = ir::validate(in.spec.problem);
  if (!errors.empty()) {
    report_problem_errors(s, in, errors);
    return std::nullopt;
  }
  return solver::generate_family(name, in.spec.problem, params, loc, s.diags);
}

// The solver's answer, or its infeasibility explained in the spec's terms.
std::optional<ir::Schedule> from_solver(Session& s, Input& in, const ScheduleFlags& flags) {
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
      s.diags.error(DiagKind::BadFlag, {}, "--threads must be a whole number in 1.." + std::to_string(solver::kMaxThreads));
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
  options.stop = install_interrupt_handlers();
  solver::SolveResult r = solver::synthesize(in.spec.problem, options);
  // Where the spec asks for the solve; `--solve` has no place in a file.
  const SourceLoc solve_loc = src.kind == frontend::SourceKind::Solve ? src.loc : SourceLoc{};
  for (const std::string& w : r.warnings) s.diags.warning(DiagKind::Solver, solve_loc, w);
  if (!r.bound_error.empty()) std::cerr << "schedc: internal error: " << r.bound_error << "\n";
  if (r.interrupted && r.schedule)
    std::cerr << "schedc: interrupted: the search ended early; writing the best schedule found (status "
              << solver::to_string(r.status) << ", " << format_number(r.objective) << ")\n";
  if (r.status != solver::SolveStatus::Infeasible) return std::move(r.schedule);
  const solver::Infeasibility& why = *r.infeasible;
  SourceLoc at = in.spec.loc_of("memory.cap");
  std::string msg = "no schedule meets the memory cap: " + why.explanation;
  if (why.smallest_cap > 0) msg += "; the smallest feasible cap is " + backtick(format_number(why.smallest_cap) + in.spec.problem.memory_unit);
  s.diags.error(DiagKind::CapInfeasible, at, msg);
  for (const std::string& field : why.conflicting_fields) {
    if (field == "memory.cap") continue;
    SourceLoc loc = in.spec.loc_of(field);
    std::string what = field == "memory.F" ? "the forward activation size `memory.F`"
                       : field == "stages_per_rank" ? "the stages this rank holds (`stages_per_rank` and `placement`)"
                                                    : backtick(field);
    if (!loc.has_line() && field == "stages_per_rank") loc = in.spec.loc_of("placement");
    s.diags.note(loc.has_file() ? loc : at, "in conflict with " + what);
  }
  return std::nullopt;
}

}  // namespace

std::optional<ir::Schedule> obtain_schedule(Session& s, Input& in, const ScheduleFlags& flags,
                                            std::optional<ir::Timeline>* timeline) {
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
  if (flags.family) {
    sched = from_family(s, in, *flags.family, {}, SourceLoc{});
  } else if (flags.solve || src.kind == frontend::SourceKind::Solve) {
    sched = from_solver(s, in, flags);
  } else if (src.kind == frontend::SourceKind::Family) {
    sched = from_family(s, in, src.family, src.params, src.loc);
  } else if (src.kind == frontend::SourceKind::Explicit) {
    ir::Schedule x;
    x.problem = in.spec.problem;
    x.ranks = src.ranks;
    x.overlap = src.overlap;
    x.provenance = ir::Provenance::of("explicit");
    sched = std::move(x);
  } else {
    s.diags.error(DiagKind::NoSchedule, in.file >= 0 ? SourceLoc{in.file, 0, 0} : SourceLoc{},
                  in.kind == Input::Kind::FlagsOnly
                      ? "no schedule to work on: give a spec or schedule file, or --family NAME, or --solve"
                      : "the spec has no `schedule`: add `schedule = family NAME`, `schedule = solve` or "
                        "`schedule = explicit {...}`, or pass --family NAME or --solve");
    return std::nullopt;
  }
  if (!sched) return std::nullopt;
  ir::SimResult sim;
  ir::VerifyOptions vo;
  vo.simulation = &sim;
  auto issues = ir::verify(*sched, vo);
  if (!issues.empty()) {
    report_verify_issues(s, in, *sched, issues);
    return std::nullopt;
  }
  if (timeline && sim.timeline) *timeline = std::move(sim.timeline);
  return sched;
}

void report_verify_issues(Session& s, const Input& in, const ir::Schedule& sched,
                          const std::vector<ir::VerifyIssue>& issues) {
  const frontend::ScheduleSource& src = in.spec.schedule;
  bool explicit_source = src.kind == frontend::SourceKind::Explicit;
  for (const ir::VerifyIssue& issue : issues) {
    SourceLoc loc;
    std::string where;
    if (issue.rank >= 0 && issue.position >= 0 && explicit_source) {
      size_t r = static_cast<size_t>(issue.rank), i = static_cast<size_t>(issue.position);
      if (in.kind == Input::Kind::ScheduleJson)
        loc = ir::locate_json(s.sources, in.file, "/ranks/" + std::to_string(r) + "/" + std::to_string(i));
      else if (r < src.token_locs.size() && i < src.token_locs[r].size())
        loc = src.token_locs[r][i];
    }
    if (!loc.has_line() && issue.rank >= 0 && issue.position >= 0)
      where = "rank " + std::to_string(issue.rank) + " position " + std::to_string(issue.position) + ": ";
    if (!loc.has_file() && in.file >= 0) loc = SourceLoc{in.file, 0, 0};
    s.diags.error(issue.kind, loc, where + issue.message);
    if (issue.rank >= 0 && issue.position >= 0)
      s.diags.note(SourceLoc{loc.file, 0, 0}, "rank " + std::to_string(issue.rank) + "'s order, position " +
                                    std::to_string(issue.position) + " marked:\n" +
                                    ir::render_order(sched, issue.rank, issue.position));
  }
}

ir::Timeline simulate_verified(const ir::Schedule& sched) {
  ir::SimResult r = ir::simulate(sched);
  if (!r.timeline) SCHEDC_INTERNAL_ERROR("a verified schedule did not complete in simulation");
  return std::move(*r.timeline);
}

bool write_output(Session& s, const std::string& path, const std::string& content) {
  if (path.empty() || path == "-") {
    std::cout << content;
    std::cout.flush();
    if (!std::cout) {  // `> /dev/full`, a closed pipe: never exit 0 with the output lost
      int e = errno;
      s.diags.error(DiagKind::Io, {}, std::string("cannot write to standard output") + (e ? ": " + std::string(std::strerror(e)) : ""));
      return false;
    }
    return true;
  }
  OutputPlan plan = plan_output(path);
  if (plan.error.empty()) {
    // Never the input itself: `schedule spec.sched -o spec.sched` would lose the spec.
    std::error_code ec;
    for (int32_t f = 0; f < s.sources.size(); ++f)
      if (std::filesystem::equivalent(plan.target, s.sources.path(f), ec)) {
        plan.error = "it is also the input; write the output to another path";
        break;
      }
  }
  if (!plan.error.empty()) {
    s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(path) + ": " + plan.error);
    return false;
  }
  std::optional<PendingOutput> pending;  // a second interrupt removes the temporary
  if (!plan.tmp.empty()) pending.emplace(plan.tmp);
  if (std::string why = write_planned(plan, content); !why.empty()) {
    s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(path) + ": " + why);
    return false;
  }
  return true;
}

}  // namespace schedc::driver
