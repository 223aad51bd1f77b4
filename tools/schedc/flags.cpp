#include "tools/schedc/flags.h"

#include <cassert>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "ir/schedule.h"
#include "solver/synth/synthesize.h"
#include "support/numbers.h"
#include "support/units.h"

namespace schedc::driver {

namespace {

// The field `--FLAG KEY=...` sets (`--cost F=1`: cost.F); the keys for_each_pair admits are fields.
ir::Field field_of(const std::string& flag, const std::string& key) {
  std::optional<ir::Field> f = ir::parse_field(flag + "." + key);
  assert(f && "every key of --cost and --memory is a field");
  return *f;
}

// "1" or "1:2:3" (one value per stage or rank), each with an optional unit of `dim` (`12.5ms`);
// a list is expressed in its finest unit, recorded in `units[field]` (erased when plain). With
// `allow_none`, "none" clears `*optional_out` (and returns an empty value). nullopt after setting
// `error` to the flag's message.
std::optional<ir::PerStage> parse_values(const std::string& flag, const std::string& key, const std::string& text,
                                         bool allow_none, std::optional<ir::PerStage>* optional_out, Dimension dim,
                                         ir::FieldUnits& units, std::string& error) {
  const ir::Field field = field_of(flag, key);
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
// value. False, with `error` set, at the first bad pair. A key given twice is an error, as it is in
// a spec's block (no silent "last wins").
template <class Fn>
bool for_each_pair(const std::string& flag, const std::string& text, const char* keys, std::string& error,
                   Fn apply_one) {
  std::stringstream ss(text);
  std::string item;
  std::set<std::string> seen;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      error = "--" + flag + ": expected KEY=VALUE pairs separated by `,`, got `" + item + "`";
      return false;
    }
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!seen.insert(key).second) {
      error = "--" + flag + ": `" + key + "` is given twice";
      return false;
    }
    if (!apply_one(key, value)) {
      error = "--" + flag + ": unknown key `" + key + "`, expected one of " + keys;
      return false;
    }
    if (!error.empty()) return false;
  }
  return true;
}

// `--FLAG TEXT` for an enum field, when given: sets `out`; false after setting `error`.
template <class T>
bool set_enum(const std::optional<std::string>& text, const char* flag, std::optional<T> (*parse)(std::string_view),
              const char* allowed, T& out, std::string& error) {
  if (!text) return true;
  std::optional<T> v = parse(*text);
  if (!v) {
    error = std::string(flag) + ": expected " + allowed + ", got `" + *text + "`";
    return false;
  }
  out = *v;
  return true;
}

// A flag's whole number; one out of the problem's range is validate()'s range error, as for any
// other source.
std::optional<int32_t> whole_number(std::string_view s) {
  std::optional<double> x = parse_number(s);
  if (!x || *x != std::floor(*x) || std::abs(*x) > 1e9) return std::nullopt;
  return static_cast<int32_t>(*x);
}

// `--direction`: `single`, `bidirectional` or a number of directions.
std::optional<int32_t> parse_direction_flag(std::string_view s) {
  if (auto named = ir::parse_direction(s)) return named;
  return whole_number(s);
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
  cmd.add_option("--vpp", vpp, "stages per rank, or `auto` (try 1, 2 and 4 with --solve)")->group("Problem");
  cmd.add_option("--microbatches,-m", microbatches, "number of microbatches")->group("Problem");
  cmd.add_option("--direction", direction, "single | bidirectional | K (K pipelines, as `directions = K`)")
      ->group("Problem");
  cmd.add_option("--placement", placement, "looped | vshape | wave (custom needs a spec)")->group("Problem");
  cmd.add_option("--backward", backward, "fused | split | mixed")->group("Problem");
  cmd.add_option("--cost", cost,
                 "F=1,B=1,W=1,comm=0[,FB=x][,action_overhead=x][,message_overhead=x][,R=x]; per-stage values as "
                 "1:1:2; "
                 "units as F=12.5ms")
      ->group("Problem");
  cmd.add_option("--memory", memory,
                 "F=1[,B=x,W=x,cap=x|none,static=x,input=x,balanced=false]; per-rank cap as 4:4:3:3; units as "
                 "F=1.2GiB")
      ->group("Problem");
  cmd.add_option("--objective", objective, "makespan | max-span")->group("Problem");
  cmd.add_option("--recompute", recompute, "off | allowed | all (recomputation; needs memory input=x)")
      ->group("Problem");
}

bool ProblemFlags::any() const {
  return pp || vpp || microbatches || direction || placement || backward || cost || memory || objective || recompute;
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
  using ir::Field;
  ir::FieldUnits& units = spec.units;
  std::map<Field, std::string> set;  // problem field -> the flag that set it
  std::map<Field, size_t> lists;     // field -> the length of the list a flag gave it
  auto mark = [&](Field field, std::string flag) {
    spec.given[field] = SourceLoc{};
    set[field] = std::move(flag);
  };
  if (pp) p.ranks = *pp, mark(Field::Ranks, "--pp");
  if (vpp) {
    spec.stages_per_rank_auto = *vpp == "auto";
    if (spec.stages_per_rank_auto) {
      p.stages_per_rank = 1;
    } else {
      std::optional<int32_t> x = whole_number(*vpp);
      if (!x) {
        error = "--vpp: expected `auto` or a whole number in 1.." + std::to_string(ir::kMaxStagesPerRank) + ", got `" +
                *vpp + "`";
        return;
      }
      p.stages_per_rank = *x;
    }
    mark(Field::StagesPerRank, "--vpp");
  }
  if (microbatches) p.microbatches = *microbatches, mark(Field::Microbatches, "--microbatches");
  if (!set_enum(direction, "--direction", parse_direction_flag, "`single`, `bidirectional` or a number of directions",
                p.directions, error) ||
      !set_enum(placement, "--placement", ir::parse_placement, "`looped`, `vshape` or `wave`", p.placement, error) ||
      !set_enum(backward, "--backward", ir::parse_backward, "`fused`, `split` or `mixed`", p.backward, error) ||
      !set_enum(objective, "--objective", ir::parse_objective, "`makespan` or `max-span`", p.objective, error) ||
      !set_enum(recompute, "--recompute", ir::parse_recompute, "`off`, `allowed` or `all`", p.recompute, error))
    return;
  if (placement && p.placement == ir::PlacementKind::Custom) {
    error = "--placement: `custom` needs `stage_to_rank`, which only a spec file can give";
    return;
  }
  if (placement) p.stage_to_rank.clear();
  if (direction) {
    p.direction_microbatches.clear();  // a count from the flag: the even split
    mark(Field::Direction, "--direction");
  }
  if (placement) mark(Field::Placement, "--placement");
  if (backward) mark(Field::Backward, "--backward");
  if (objective) mark(Field::Objective, "--objective");
  if (recompute) mark(Field::Recompute, "--recompute");
  // Each pair's value: false for an unknown key; `error` set for a bad value.
  auto values = [&](const std::string& flag, const std::string& k, const std::string& v, ir::PerStage& out,
                    Dimension dim) {
    if (auto x = parse_values(flag, k, v, false, nullptr, dim, units, error)) {
      if (!x->is_uniform()) lists[field_of(flag, k)] = x->values.size();
      out = std::move(*x);
    }
  };
  if (cost && !for_each_pair("cost", *cost, "F, B, W, comm, FB, action_overhead, message_overhead, R", error,
                             [&](const std::string& k, const std::string& v) {
                               constexpr Dimension kTime = Dimension::Time;
                               if (k == "F") values("cost", k, v, p.cost.F, kTime);
                               else if (k == "B") values("cost", k, v, p.cost.B, kTime);
                               else if (k == "W") values("cost", k, v, p.cost.W, kTime);
                               else if (k == "FB" || k == "R") {
                                 ir::PerStage x;
                                 values("cost", k, v, x, kTime);
                                 if (error.empty()) (k == "FB" ? p.cost.FB : p.cost.R) = x;
                               } else if (k == "comm" || k == "action_overhead" || k == "message_overhead") {
                                 ir::PerStage x;
                                 values("cost", k, v, x, kTime);
                                 if (error.empty() && !x.is_uniform())
                                   error = "--cost: `" + k + "` needs one number, got `" + v + "`";
                                 if (error.empty())
                                   (k == "comm"              ? p.cost.comm
                                    : k == "action_overhead" ? p.cost.action_overhead
                                                             : p.cost.message_overhead) = x.uniform;
                               } else return false;
                               if (error.empty()) mark(field_of("cost", k), "--cost");
                               return true;
                             }))
    return;
  if (memory && !for_each_pair("memory", *memory, "F, B, W, cap, static, input, balanced", error,
                               [&](const std::string& k, const std::string& v) {
                                 constexpr Dimension kMemory = Dimension::Memory;
                                 if (k == "F") values("memory", k, v, p.memory.F, kMemory);
                                 else if (k == "B") values("memory", k, v, p.memory.B, kMemory);
                                 else if (k == "W") values("memory", k, v, p.memory.W, kMemory);
                                 else if (k == "cap") {
                                   auto x = parse_values("memory", k, v, true, &p.memory.cap, kMemory, units, error);
                                   if (x && !x->is_uniform()) lists[Field::MemoryCap] = x->values.size();
                                 } else if (k == "static") values("memory", k, v, p.memory.static_memory, kMemory);
                                 else if (k == "input") {
                                   ir::PerStage x;
                                   values("memory", k, v, x, kMemory);
                                   if (error.empty()) p.memory.input = x;
                                 } else if (k == "balanced") {
                                   if (v != "true" && v != "false")
                                     error = "--memory: `balanced` needs `true` or `false`, got `" + v + "`";
                                   else spec.balanced = v == "true";
                                 } else return false;
                                 if (error.empty()) mark(field_of("memory", k), "--memory");
                                 return true;
                               }))
    return;
  // Units, memory.B/W following memory.F, the balance check: a conflict the flags brought in is
  // the command line's error.
  // A flag that sets a memory delta makes the balance its business, whatever the input.
  bool deltas_set = set.count(Field::MemoryF) || set.count(Field::MemoryB) || set.count(Field::MemoryW);
  for (const ir::ProblemError& e : frontend::complete_problem(spec, check_balance || deltas_set)) {
    auto it = set.find(e.field);
    const std::string_view name = ir::to_string(e.field);
    std::string flag = it != set.end()                         ? it->second
                       : name.starts_with("memory.") && memory ? "--memory"
                       : name.starts_with("cost.") && cost     ? "--cost"
                                                               : "the problem flags";
    std::string message = e.message;
    const std::string spec_hint = "write `balanced = false` in `memory`";
    if (size_t at = message.find(spec_hint); at != std::string::npos)
      message.replace(at, spec_hint.size(), "add `balanced=false` to --memory");
    error = flag + ": " + message;
    return;
  }
  // A list whose length is not the problem's count of stages (of ranks, for `cap`) is the flag's
  // error too, once that count is settled: the ranks are when given; the stages per rank only when
  // given (else a family may choose them, and `auto` leaves them to the solver), but a length that
  // is no multiple of the ranks is wrong whatever they become.
  const bool ranks_settled = spec.given.count(Field::Ranks) != 0;
  const bool vpp_settled = spec.given.count(Field::StagesPerRank) != 0 && !spec.stages_per_rank_auto;
  auto wrong_length = [&](Field field) {
    auto it = lists.find(field);
    if (it == lists.end() || !ranks_settled || p.ranks < 1) return false;
    const size_t n = it->second, ranks = static_cast<size_t>(p.ranks);
    if (field == Field::MemoryCap) return n != ranks;
    return n != static_cast<size_t>(p.num_stages()) && (vpp_settled || n % ranks != 0);
  };
  // A value out of its range is the flag's error (exit 2), whatever the rest of the problem is;
  // the ranges and lengths themselves are validate()'s.
  // So is a value no tick holds, when the flag of its kind was given (`--cost F=1e-16`).
  const bool off_tick_time = cost && !ir::exact_scale_of(ir::time_values(p));
  const bool off_tick_memory = memory && !ir::exact_scale_of(ir::memory_values(p));
  for (const ir::ProblemError& e : ir::validate(p)) {
    if (e.kind == DiagKind::BadValue &&
        ((e.field == Field::CostF && off_tick_time) || (e.field == Field::MemoryF && off_tick_memory))) {
      error = std::string(e.field == Field::CostF ? "--cost" : "--memory") + ": " + e.message;
      return;
    }
    auto it = set.find(e.field);
    if (it != set.end() &&
        (e.kind == DiagKind::OutOfRange || (e.kind == DiagKind::BadValue && wrong_length(e.field)))) {
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
  cmd.add_option("--warm-start", warm_start,
                 "with --solve: a schedule (JSON, torch-csv, or a spec's explicit orders) whose orders start the "
                 "search, re-timed under this problem and fitted under its cap; the answer is never worse than it "
                 "(repeatable)")
      ->group("Schedule");
  cmd.add_option("--z3-fault", z3_fault, "testing: make Z3 fail (error | invalid-model)")
      ->check(CLI::IsMember({"error", "invalid-model"}))
      ->group("");
}

void ScheduleArgs::add_to(CLI::App& cmd) {
  cmd.add_option(
      "input", path,
      "a .sched spec, schedule JSON (by its .json suffix or its content) or torch .csv; - reads a spec or schedule JSON from stdin (omit with --family or --solve)");
  problem.add_to(cmd);
  schedule.add_to(cmd);
}

std::string source_name(const std::string& path, const ProblemFlags& p, const ScheduleFlags& s) {
  std::string out = path;
  auto add = [&](const std::string& flag, const std::string& value) {
    out += (out.empty() ? "" : " ") + flag + " " + value;
  };
  if (s.family) add("--family", *s.family);
  if (s.solve) out += out.empty() ? "--solve" : " --solve";
  if (p.pp) add("--pp", std::to_string(*p.pp));
  if (p.vpp) add("--vpp", *p.vpp);
  if (p.microbatches) add("--microbatches", std::to_string(*p.microbatches));
  if (p.direction) add("--direction", *p.direction);
  if (p.placement) add("--placement", *p.placement);
  if (p.backward) add("--backward", *p.backward);
  if (p.recompute) add("--recompute", *p.recompute);
  if (p.cost) add("--cost", *p.cost);
  if (p.memory) add("--memory", *p.memory);
  return out.empty() ? "the command line" : out;
}

void OutputFlags::add_to(CLI::App& cmd, const std::vector<std::string>& formats) {
  format = formats.front();
  std::string help;
  for (const std::string& f : formats) help += (help.empty() ? "" : " | ") + f;
  cmd.add_option("--format", format, help)->check(CLI::IsMember(formats));
  cmd.add_option("-o,--output", output, "write to this file instead of stdout (`-`: stdout)");
}

void BuildSettings::add_to(CLI::App& cmd) {
  cmd.add_option("--cache-dir", cache_dir,
                 "build cache (default $SCHEDC_CACHE_DIR, $XDG_CACHE_HOME/schedc or ~/.cache/schedc)");
  cmd.add_flag("--verbose,-v", verbose, "print the compiler and launcher commands");
  cmd.add_option("--stage-source", stage_sources,
                 "a C++ file with stages of your own (SCHEDRT_REGISTER_STAGE), compiled into the executor; repeatable")
      ->check(CLI::ExistingFile)
      ->type_name("FILE")
      ->take_all()
      ->group("Runtime");
}

}  // namespace schedc::driver
