// One table of runtime options (schedrt/options.h), three readers: the spec's runtime block
// (codegen::read_runtime_config), schedc's flags (driver::RuntimeFlags) and the generated
// executor's flags (schedrt::parse_command_line). Every row must be accepted and refused alike by
// all three, and each reader must know exactly the table's options: an option added to one reader
// only, or to the table but not a reader, fails here.

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "codegen/runtime_config.h"
#include "command_line.h"
#include "schedrt/options.h"
#include "support/diagnostics.h"
#include "tools/schedc/runtime_flags.h"

using namespace schedc;
using schedrt::OptionId;
using schedrt::OptionKind;
using schedrt::OptionSpec;
using schedrt::Surface;

namespace {

using Value = decltype(ir::Param::value);

// What a reader made of one value: the option's value as text, or the error message.
struct Outcome {
  bool ok = false;
  std::string value;  // ok: option_text of the option afterwards
  std::string error;  // !ok
};

// The runtime block `runtime { KEY = VALUE }`, VALUE a number or a name.
Outcome from_spec(const OptionSpec& o, const Value& value) {
  SourceManager sm;
  Diagnostics diags(&sm);
  ir::Params block;
  block.items.push_back({std::string(o.key), value, SourceLoc{0, 1, 1}, SourceLoc{0, 1, 9}});
  codegen::RuntimeConfig c;
  if (!codegen::read_runtime_config(block, c, diags)) return {false, {}, diags.all().at(0).message};
  return {true, schedrt::option_text(c, o.id), {}};
}

// `schedc run ... FLAG TEXT`, as far as CLI11 and RuntimeFlags::apply go.
Outcome from_schedc(const OptionSpec& o, const std::string& text) {
  CLI::App app;
  driver::RuntimeFlags flags;
  flags.add_to(app, true);
  std::vector<std::string> args = {std::string(o.flag), text};
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return {false, {}, e.what()};
  }
  codegen::RuntimeConfig c;
  flags.apply(c);
  return {true, schedrt::option_text(c, o.id), {}};
}

// The executor's command line of a two-rank program: ARGS after the program's name, read into
// `opt` (from the program's defaults).
schedrt::ParseResult parse_executor(std::vector<std::string> args, schedrt::RunOptions& opt) {
  args.insert(args.begin(), "executor");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  static int32_t stage_to_rank[] = {0, 1};
  schedrt::ProgramInfo info;
  info.ranks = 2;
  info.stages = 2;
  info.stage_to_rank = stage_to_rank;
  opt = schedrt::default_options(info);
  return schedrt::parse_command_line(static_cast<int>(argv.size()), argv.data(), info, opt);
}

Outcome run_executor(std::vector<std::string> args, OptionId id) {
  schedrt::RunOptions opt;
  auto r = parse_executor(std::move(args), opt);
  if (r.next != schedrt::ParseResult::Next::Run) return {false, {}, r.error};
  return {true, schedrt::option_text(opt, id), {}};
}

// `executor FLAG TEXT`, with what the value needs to run otherwise: a stage on every backend
// (synthetic) unless the stage is tested, and the cuda backend for bf16.
Outcome from_executor(const OptionSpec& o, const std::string& text) {
  std::vector<std::string> args = {std::string(o.flag), text};
  if (o.id != OptionId::Stage) args.insert(args.end(), {"--stage", "synthetic"});
  if (text == "bf16") args.insert(args.end(), {"--backend", "cuda"});
  return run_executor(args, o.id);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string number_text(double v) {
  return v == static_cast<double>(static_cast<int64_t>(v)) ? std::to_string(static_cast<int64_t>(v))
                                                           : std::to_string(v);
}

// Whether the executor has a flag for `o` (not for schedc's own, code generation); without one it
// must refuse the flag as unknown.
bool at_executor(const OptionSpec& o, const Outcome& exe) {
  if (o.to_executor != schedrt::ToExecutor::Never) return true;
  CHECK_MESSAGE(contains(exe.error, "unknown option `" + std::string(o.flag) + "`"), exe.error);
  return false;
}

// Accepted by all three, with the same value.
void accepted(const OptionSpec& o, const std::string& text, const Value& spec_value) {
  CAPTURE(o.key);
  CAPTURE(text);
  Outcome spec = from_spec(o, spec_value), flag = from_schedc(o, text), exe = from_executor(o, text);
  CHECK_MESSAGE(spec.ok, spec.error);
  CHECK_MESSAGE(flag.ok, flag.error);
  CHECK(spec.value == flag.value);
  if (!at_executor(o, exe)) return;
  CHECK_MESSAGE(exe.ok, exe.error);
  CHECK(flag.value == exe.value);
}

// Refused by all three, each message saying what the table expects (`want`: its part common to
// all three readers; spec_want: the runtime block's, where it differs).
void refused(const OptionSpec& o, const std::string& text, const Value& spec_value, const std::string& want,
             const std::string& spec_want) {
  CAPTURE(o.key);
  CAPTURE(text);
  Outcome spec = from_spec(o, spec_value), flag = from_schedc(o, text), exe = from_executor(o, text);
  CHECK(!spec.ok);
  CHECK(!flag.ok);
  CHECK(!exe.ok);
  CHECK_MESSAGE(contains(spec.error, spec_want), spec.error);
  CHECK_MESSAGE(contains(flag.error, std::string(o.flag) + ": expected " + want), flag.error);
  if (!at_executor(o, exe)) return;
  CHECK_MESSAGE(contains(exe.error, std::string(o.flag) + " needs "), exe.error);
  if (o.kind != OptionKind::Stage)
    CHECK_MESSAGE(contains(exe.error, want), exe.error);  // the executor lists what is registered
}

// "--a --b": a set of flags, as failures print it.
std::string joined(const std::set<std::string>& flags) {
  std::string out;
  for (const std::string& f : flags) out += (out.empty() ? "" : " ") + f;
  return out;
}

std::string table_flags(bool with_never) {
  std::set<std::string> out;
  for (const OptionSpec& o : schedrt::kRuntimeOptions)
    if (with_never || o.to_executor != schedrt::ToExecutor::Never) out.emplace(o.flag);
  return joined(out);
}

}  // namespace

TEST_CASE("each reader knows exactly the table's options") {
  std::vector<std::string> keys;
  for (const OptionSpec& o : schedrt::kRuntimeOptions) keys.emplace_back(o.key);
  CHECK(codegen::runtime_keys() == keys);

  CLI::App app;
  driver::RuntimeFlags flags;
  flags.add_to(app, true);
  std::set<std::string> schedc_flags;
  for (const CLI::Option* opt : app.get_options([](const CLI::Option* x) { return x->get_group() == "Runtime"; }))
    for (const std::string& n : opt->get_lnames()) schedc_flags.insert("--" + n);
  CHECK(joined(schedc_flags) == table_flags(true));
  for (const OptionSpec& o : schedrt::kRuntimeOptions)
    CHECK(app.get_option(std::string(o.flag))->get_description() == schedrt::help_text(o));

  // The executor: the table's options (less schedc's own), and its own flags, which are not options.
  const std::set<std::string> own = {"--help",      "--list-stages", "--check", "--format",
                                     "--interpret", "--profile",     "--fault"};
  std::set<std::string> executor_flags;
  for (const std::string& f : schedrt::executor_flag_names())
    if (!own.count(f)) executor_flags.insert(f);
  CHECK(joined(executor_flags) == table_flags(false));
}

TEST_CASE("every value of every option: accepted by all three readers alike, and refused alike") {
  for (const OptionSpec& o : schedrt::kRuntimeOptions) {
    const std::string want = schedrt::expected(o, Surface::Flag);
    switch (o.kind) {
      case OptionKind::Name:
        for (std::string_view n : o.names) accepted(o, std::string(n), std::string(n));
        refused(o, "bogus", std::string("bogus"), want, "needs " + want + ", got `bogus`");
        break;
      case OptionKind::Stage:
        accepted(o, "mlp", std::string("mlp"));
        accepted(o, "synthetic", std::string("synthetic"));
        refused(o, "g p u", std::string("g p u"), want, "needs a stage name (");
        break;
      case OptionKind::Path:
        accepted(o, "trace.json", std::string("trace.json"));
        refused(o, "", std::string(), want, "needs " + want);
        break;
      case OptionKind::Integer:
      case OptionKind::Number: {
        accepted(o, number_text(o.lo), o.lo);
        accepted(o, number_text(o.hi), o.hi);
        const std::string range = schedrt::range_text(o, Surface::Flag);
        const std::string spec_range = schedrt::range_text(o, Surface::Spec);
        const double above = o.hi + std::max(1.0, o.hi);  // exact as a double up to 2^54
        refused(o, number_text(above), above, want, spec_range);
        // Below: the flags' bound minus one; the runtime block's own bound where it is open.
        const double below = o.spec_lo_open ? *o.spec_lo_open : o.lo - 1;
        CAPTURE(o.key);
        Outcome flag = from_schedc(o, number_text(o.lo - 1)), exe = from_executor(o, number_text(o.lo - 1));
        CHECK(!flag.ok);
        CHECK(!exe.ok);
        CHECK_MESSAGE(contains(flag.error, range), flag.error);
        CHECK_MESSAGE(contains(exe.error, range), exe.error);
        Outcome spec = from_spec(o, below);
        CHECK(!spec.ok);
        CHECK_MESSAGE(contains(spec.error, spec_range), spec.error);
        if (o.kind == OptionKind::Integer) refused(o, "1.5", 1.5, want, "needs an integer");
        if (o.id == OptionId::Seed) {  // one past 2^53, which a double would round to 2^53
          CHECK(!from_schedc(o, "9007199254740993").ok);
          CHECK(!from_executor(o, "9007199254740993").ok);
        }
        break;
      }
    }
  }
}

TEST_CASE("the ranges as messages give them") {
  CHECK(schedrt::range_text(schedrt::option(OptionId::Hidden), Surface::Flag) == "1..4096");
  CHECK(schedrt::range_text(schedrt::option(OptionId::MsPerUnit), Surface::Flag) == "0..100000");
  CHECK(schedrt::range_text(schedrt::option(OptionId::Seed), Surface::Spec) == "0..9007199254740992");
  // The one disagreement kept: the runtime block takes any timeout above 0, command lines 0.001 on.
  CHECK(schedrt::range_text(schedrt::option(OptionId::Timeout), Surface::Spec) == "above 0 and at most 1000000");
  CHECK(schedrt::range_text(schedrt::option(OptionId::Timeout), Surface::Flag) == "0.001..1000000");
  CHECK(schedrt::expected(schedrt::option(OptionId::Backend), Surface::Flag) == "one of `threads`, `mpi`, `cuda`");
}

TEST_CASE("bf16 needs cuda: one rule, one message, in schedc and in the executor") {
  schedrt::RuntimeSettings s;
  s.dtype = schedrt::Dtype::BF16;
  const std::string why = schedrt::check_combination(s);
  CHECK(why == "dtype `bf16` needs backend `cuda` (only the GPU stage computes in bf16)");
  Outcome exe = run_executor({"--dtype", "bf16", "--stage", "synthetic"}, OptionId::Dtype);
  CHECK(!exe.ok);
  CHECK(exe.error == why);
  s.backend = schedrt::BackendKind::Cuda;
  CHECK(schedrt::check_combination(s).empty());
}

TEST_CASE("schedc hands its flags to the executor as the table says, and the executor reads them back") {
  // Every option given on schedc's command line with a value other than its default.
  CLI::App app;
  driver::RuntimeFlags flags;
  flags.add_to(app, true);
  const std::vector<std::string> args = {"--backend", "mpi",       "--stage", "synthetic",        "--dtype",
                                         "fp32",      "--hidden",  "32",      "--layers",         "3",
                                         "--batch",   "5",         "--seed",  "9007199254740992", "--ms-per-unit",
                                         "0.0000001", "--timeout", "0.5",     "--steps",          "4",
                                         "--trace",   "t.json",    "--code",  "compact"};
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  codegen::RuntimeConfig cfg;
  cfg.layers_per_stage = {1, 2};
  flags.apply(cfg);
  CHECK(cfg.layers_per_stage.empty());  // --layers replaces the model's partition
  auto given = flags.given_all();
  std::vector<std::string> passed = schedrt::executor_arguments(cfg, given);
  CHECK(std::find(passed.begin(), passed.end(), "--code") == passed.end());  // code generation only
  schedrt::RunOptions opt;
  REQUIRE(parse_executor(passed, opt).next == schedrt::ParseResult::Next::Run);
  for (const OptionSpec& o : schedrt::kRuntimeOptions) {
    CAPTURE(o.key);
    if (o.to_executor == schedrt::ToExecutor::Never) continue;
    CHECK(schedrt::option_text(opt, o.id) == schedrt::option_text(cfg, o.id));
  }
  CHECK(opt.ms_per_unit == 1e-7);  // exact, not std::to_string's 0.000000

  // Nothing given: only the backend (the runtime block's is compiled in as well).
  driver::RuntimeFlags none;
  codegen::RuntimeConfig block;
  block.hidden = 16;
  CHECK(schedrt::executor_arguments(block, none.given_all()) == std::vector<std::string>{"--backend", "threads"});
  block.trace = "x.json";  // not compiled in: passed whenever set
  CHECK(schedrt::executor_arguments(block, none.given_all()) ==
        std::vector<std::string>{"--backend", "threads", "--trace", "x.json"});
}
