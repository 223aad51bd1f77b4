// `schedc run SPEC [--backend threads|mpi|cuda] [--stage NAME] [--stage-source FILE]... [--check]
// [--trace FILE] [--format text|json] [--timeout S]`: build the executor (cached) and run it; the executor prints
// the report (stdout) and its errors (stderr).

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/executor.h"

namespace schedc::driver {
namespace {

// `--fault drop-send=RANK | throw=RANK` (testing), checked here: the executor rejecting its
// command line means a bug in schedc, never a user's mistake. Reports `bad-flag`; false then.
bool check_fault(Session& s, const std::string& fault, int32_t ranks) {
  if (fault.empty()) return true;
  size_t eq = fault.find('=');
  std::string kind = fault.substr(0, eq), rank = eq == std::string::npos ? "" : fault.substr(eq + 1);
  bool digits = !rank.empty() && rank.size() <= 6 && rank.find_first_not_of("0123456789") == std::string::npos;
  if ((kind == "drop-send" || kind == "throw") && digits && std::stoi(rank) < ranks) return true;
  s.diags.error(DiagKind::BadFlag, {},
                "--fault: expected `drop-send=RANK` or `throw=RANK` with RANK in 0.." + std::to_string(ranks - 1) +
                    ", got " + backtick(fault));
  return false;
}

}  // namespace

void add_run_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string format = "text", fault;
    bool check = false, interpret = false;
    ScheduleArgs args;
    RuntimeFlags runtime;
    BuildSettings build;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("run", "build a schedule's executor and run it");
  opts->args.add_to(*cmd);
  cmd->add_flag("--check", opts->check, "compare loss and gradients with a sequential run of the same model");
  cmd->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--interpret", opts->interpret, "run the op tables instead of the generated code (for comparison)");
  cmd->add_option("--fault", opts->fault, "testing: drop-send=RANK | throw=RANK")->group("");
  opts->build.add_to(*cmd);
  opts->runtime.add_to(*cmd, true);
  cmd->callback([opts, &rc] {
    Session s;
    // The runtime block is compiled in as the executor's defaults; the flags are passed at run
    // time, so that changing them does not rebuild.
    auto ex = load_executor(s, opts->args, nullptr);
    if (!ex) {
      rc = s.fail();
      return;
    }
    if (!check_fault(s, opts->fault, ex->program.problem.ranks)) {
      rc = s.fail();
      return;
    }
    const RuntimeFlags& f = opts->runtime;
    auto settings = runtime_settings(s, *ex, f);
    if (!settings) {
      rc = s.finish(kInputError);
      return;
    }
    const codegen::RuntimeConfig& cfg = *settings;
    // `--check` compares with a sequential run of the same model, which only some stages have,
    // and the stage must be registered: schedrt's own stages are checked before anything is
    // built, the stage sources' once the executor lists what they register.
    const bool sources = !opts->build.stage_sources.empty();
    if (!sources && !check_stage(s, *ex, cfg, f, opts->check, builtin_stages(), false)) {
      rc = s.fail();
      return;
    }
    auto exe = build_executor(s, ex->files, opts->build);
    if (!exe) {
      rc = s.finish(kInputError);
      return;
    }
    if (sources) {
      auto stages = executor_stages(s, *exe, opts->build.verbose);
      if (!stages || !check_stage(s, *ex, cfg, f, opts->check, *stages, true)) {
        rc = s.fail();
        return;
      }
    }
    std::vector<std::string> argv;
    if (cfg.backend == schedrt::BackendKind::Mpi) argv = mpirun_command(ex->program.problem.ranks);
    argv.push_back(*exe);
    // The runtime block is compiled in; the flags given and the backend go on the command line.
    std::vector<std::string> options = schedrt::executor_arguments(cfg, f.given_all());
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--format", opts->format});
    if (opts->check) argv.push_back("--check");
    if (opts->interpret) argv.push_back("--interpret");
    if (!opts->fault.empty()) argv.insert(argv.end(), {"--fault", opts->fault});
    int status = launch_executor(s, argv, opts->build.verbose);
    if (status == 0) {
      rc = s.finish(kOk);
      return;
    }
    if (status == 2) {
      s.diags.error(DiagKind::Runtime, {}, "the executor rejected its command line (a bug in schedc; please report it)");
      rc = s.finish(kInternalError);
      return;
    }
    if (status != 127 && status <= 128) s.diags.error(DiagKind::Runtime, {}, "the executor failed (exit status " + std::to_string(status) + ")");
    rc = s.finish(kInputError);
  });
}

}  // namespace schedc::driver
