#include "command_line.h"

#include "schedrt/options.h"
#include "schedrt/stage.h"

#include <CLI/CLI.hpp>

#include <array>
#include <charconv>
#include <string>
#include <vector>

namespace schedrt {
namespace {

struct UsageError {
  std::string message;
};

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  auto res = std::from_chars(v.data(), v.data() + v.size(), x);
  if (res.ec != std::errc() || res.ptr != v.data() + v.size() || x < lo || x > hi)
    throw UsageError{flag + " needs an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got `" + v +
                     "`"};
  return x;
}

std::string one_of(const std::string& flag, const std::string& v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += list.empty() ? "`" : ", `";
    list += a;
    list += "`";
  }
  throw UsageError{flag + " needs one of " + list + ", got `" + v + "`"};
}

// `mlp`, or `mlp`, `x` and `y`: the stages --check can compare with a sequential run.
std::string reference_stages() {
  std::vector<std::string> names;
  for (const std::string& n : stage_names())
    if (has_sequential_reference(n)) names.push_back("`" + n + "`");
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

// "`mlp`, `synthetic`, `noop`": every registered stage, for messages.
std::string registered_list() {
  std::string out;
  for (const std::string& n : stage_names()) out += (out.empty() ? "`" : ", `") + n + "`";
  return out;
}

constexpr const char* kOwnStageHint =
    "a stage of your own is compiled in with `schedc build|run --stage-source FILE` or, in CMake, "
    "schedrt_add_stage_sources(TARGET FILE...)";

bool is_registered(const std::string& stage) {
  return find_stage(stage, StageMemory::Host) || find_stage(stage, StageMemory::Device);
}

// The flags' values as written: CLI11 splits the command line (`--hidden 32` and `--hidden=32`
// alike, the last of a repeated flag wins), and the values are converted and range-checked here,
// with the table's ranges (schedrt/options.h).
struct Flags {
  std::array<std::string, kOptionCount> option;
  std::string format, profile, fault;
  bool check = false, interpret = false, list_stages = false;
};

void add_flags(CLI::App& app, Flags& f) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.allow_extras();  // reported by parse_command_line, as `unknown option`
  for (const OptionSpec& o : kRuntimeOptions) {
    if (o.to_executor == ToExecutor::Never) continue;  // schedc's own (code generation)
    app.add_option(std::string(o.flag), f.option[static_cast<size_t>(o.id)], help_text(o))
        ->type_name(std::string(o.type_name));
    if (o.id == OptionId::Stage)
      app.add_flag("--list-stages", f.list_stages, "list the stages registered in this executor and exit");
  }
  app.add_flag("--check", f.check, "compare loss and gradients with a sequential run of the same model (mlp)");
  app.add_option("--format", f.format, "text | json: the report's format (stdout)")->type_name("NAME");
  app.add_flag("--interpret", f.interpret, "run the program's op tables instead of the generated code");
  app.add_option("--profile", f.profile, "time each stage's F, B, W and the transfers instead, JSON to this file")
      ->type_name("FILE");
  app.add_option("--fault", f.fault, "testing only: drop-send=R (lose rank R's first send) or throw=R (fail rank R)")
      ->type_name("KIND=R");
}

// The values given, checked against the table and against each other, onto `o`.
ParseResult apply(const CLI::App& app, const Flags& f, const ProgramInfo& info, RunOptions& o) {
  if (!app.remaining().empty()) throw UsageError{"unknown option `" + app.remaining().front() + "` (see --help)"};
  auto given = [&](std::string_view flag) { return app.get_option(std::string(flag))->count() > 0; };
  for (const OptionSpec& opt : kRuntimeOptions) {
    if (opt.to_executor == ToExecutor::Never || !given(opt.flag)) continue;
    const std::string& text = f.option[static_cast<size_t>(opt.id)];
    // A stage must be registered in this executor, which knows them all.
    if (opt.kind == OptionKind::Stage && !is_registered(text))
      throw UsageError{"--stage needs one of " + registered_list() + ", got `" + text + "` (" + kOwnStageHint + ")"};
    auto value = parse_flag_value(opt, text);
    if (!value)
      throw UsageError{std::string(opt.flag) + " needs " + expected(opt, Surface::Flag) + ", got `" + text + "`"};
    set_option(o, opt.id, *value);
  }
  if (given("--format")) o.format = one_of("--format", f.format, {"text", "json"});
  if (f.list_stages) return {ParseResult::Next::ListStages, 0, {}};
  if (given("--profile")) o.profile_path = f.profile;
  o.check = f.check;
  o.interpret = f.interpret;
  if (given("--fault")) {
    o.fault = f.fault;
    bool ok = (o.fault.rfind("drop-send=", 0) == 0 || o.fault.rfind("throw=", 0) == 0);
    if (ok) parse_int("--fault", o.fault.substr(o.fault.find('=') + 1), 0, info.ranks - 1);
    else throw UsageError{"--fault needs `drop-send=RANK` or `throw=RANK`, got `" + o.fault + "`"};
  }
  const StageMemory memory = o.backend == BackendKind::Cuda ? StageMemory::Device : StageMemory::Host;
  if (!given("--stage") && !is_registered(o.stage))
    throw UsageError{"stage `" + o.stage +
                     "` (the spec's runtime block) is not registered in this executor; registered stages: " +
                     registered_list() + " (" + kOwnStageHint + ")"};
  if (!find_stage(o.stage, memory))
    throw UsageError{"stage `" + o.stage + "` has no implementation for " + to_string(memory) +
                     " memory, which backend `" + to_string(o.backend) +
                     "` needs (a StageInfo with `.memory = schedrt::StageMemory::" +
                     (memory == StageMemory::Device ? "Device" : "Host") + "`)"};
  if (o.check && !has_sequential_reference(o.stage))
    throw UsageError{"--check needs a stage with a sequential reference (" + reference_stages() + "); stage `" +
                     o.stage + "` has none (it computes nothing to compare)"};
  if (std::string why = check_combination(o); !why.empty()) throw UsageError{why};
  if (!o.profile_path.empty() && (o.check || o.interpret || !o.fault.empty()))
    throw UsageError{"--profile runs no program: it excludes --check, --interpret and --fault"};
  return {};
}

}  // namespace

ParseResult parse_command_line(int argc, char** argv, const ProgramInfo& info, RunOptions& o) {
  CLI::App app{"A pipeline-parallel training step generated by schedc; the flags override the spec's runtime block.",
               argc > 0 ? argv[0] : "executor"};
  Flags f;
  add_flags(app, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return {ParseResult::Next::Exit, app.exit(e), {}};
  } catch (const CLI::ParseError& e) {
    return {ParseResult::Next::Exit, 2, std::string(e.what()) + " (see --help)"};
  }
  try {
    return apply(app, f, info, o);
  } catch (const UsageError& e) {
    return {ParseResult::Next::Exit, 2, e.message};
  }
}

std::vector<std::string> executor_flag_names() {
  CLI::App app;
  Flags f;
  add_flags(app, f);
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& name : o->get_lnames()) out.push_back("--" + name);
  return out;
}

}  // namespace schedrt
