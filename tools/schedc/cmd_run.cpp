// `schedc run SPEC [--backend threads|mpi] [--stage mlp|synthetic|noop] [--check] [--trace FILE]
// [--format text|json] [--timeout S]`: build the executor (cached) and run it; the executor prints
// the report (stdout) and its errors (stderr).

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/executor.h"

namespace schedc::driver {

void add_run_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string path, format = "text", fault;
    bool check = false, interpret = false;
    ProblemFlags problem;
    ScheduleFlags schedule;
    RuntimeFlags runtime;
    BuildSettings build;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("run", "build a schedule's executor and run it");
  cmd->add_option("input", opts->path, "a .sched spec or schedule .json (omit with --family or --solve)");
  cmd->add_flag("--check", opts->check, "compare loss and gradients with a sequential run of the same model");
  cmd->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--interpret", opts->interpret, "run the op tables instead of the generated code (for comparison)");
  cmd->add_option("--fault", opts->fault, "testing: drop-send=RANK | throw=RANK")->group("");
  cmd->add_option("--cache-dir", opts->build.cache_dir, "build cache (default $SCHEDC_CACHE_DIR, $XDG_CACHE_HOME/schedc or ~/.cache/schedc)");
  cmd->add_flag("--verbose,-v", opts->build.verbose, "print the compiler and launcher commands");
  opts->problem.add_to(*cmd);
  opts->schedule.add_to(*cmd);
  opts->runtime.add_to(*cmd, true);
  cmd->callback([opts, &rc] {
    Session s;
    auto in = load_input(s, opts->path, opts->problem);
    auto sched = in ? obtain_schedule(s, *in, opts->schedule) : std::nullopt;
    int code = kInputError;
    // The runtime block is compiled in as the executor's defaults; the flags are passed at run
    // time, so that changing them does not rebuild.
    auto ex = sched ? make_executor(s, *in, std::move(*sched), nullptr,
                                    source_name(opts->path, opts->problem, opts->schedule), &code)
                    : std::nullopt;
    auto exe = ex ? build_executor(s, ex->files, opts->build) : std::nullopt;
    if (!exe) {
      rc = s.finish(ex ? kInputError : code);
      return;
    }
    const RuntimeFlags& f = opts->runtime;
    codegen::RuntimeConfig cfg = ex->runtime;
    f.apply(cfg);
    if (cfg.dtype == "bf16" && cfg.backend != "cuda") {
      s.diags.error(DiagKind::BadValue, {}, "dtype `bf16` needs backend `cuda` (only the GPU stage computes in bf16)");
      rc = s.finish(kInputError);
      return;
    }
    std::vector<std::string> argv;
    if (cfg.backend == "mpi") argv = mpirun_command(ex->program.problem.ranks);
    argv.push_back(*exe);
    argv.insert(argv.end(), {"--backend", cfg.backend, "--format", opts->format});
    if (f.stage) argv.insert(argv.end(), {"--stage", *f.stage});
    if (f.dtype) argv.insert(argv.end(), {"--dtype", *f.dtype});
    if (f.hidden) argv.insert(argv.end(), {"--hidden", std::to_string(*f.hidden)});
    if (f.layers) argv.insert(argv.end(), {"--layers", std::to_string(*f.layers)});
    if (f.batch) argv.insert(argv.end(), {"--batch", std::to_string(*f.batch)});
    if (f.seed) argv.insert(argv.end(), {"--seed", std::to_string(*f.seed)});
    if (f.ms_per_unit) argv.insert(argv.end(), {"--ms-per-unit", std::to_string(*f.ms_per_unit)});
    if (f.timeout) argv.insert(argv.end(), {"--timeout", std::to_string(*f.timeout)});
    if (f.steps) argv.insert(argv.end(), {"--steps", std::to_string(*f.steps)});
    if (!cfg.trace.empty()) argv.insert(argv.end(), {"--trace", cfg.trace});
    if (opts->check) argv.push_back("--check");
    if (opts->interpret) argv.push_back("--interpret");
    if (!opts->fault.empty()) argv.insert(argv.end(), {"--fault", opts->fault});
    if (opts->build.verbose) {
      std::string line;
      for (const auto& a : argv) line += a + " ";
      std::fprintf(stderr, "schedc: %s\n", line.c_str());
    }
    int status = run_process(argv);
    if (status == 0) {
      rc = s.finish(kOk);
      return;
    }
    if (status == 2) {
      s.diags.error(DiagKind::Runtime, {}, "the executor rejected its command line (a bug in schedc; please report it)");
      rc = s.finish(kInternalError);
      return;
    }
    if (status == 127) s.diags.error(DiagKind::Runtime, {}, "cannot start " + backtick(argv.front()));
    else if (status > 128) s.diags.error(DiagKind::Runtime, {}, "the executor was killed by signal " + std::to_string(status - 128));
    else s.diags.error(DiagKind::Runtime, {}, "the executor failed (exit status " + std::to_string(status) + ")");
    rc = s.finish(kInputError);
  });
}

}  // namespace schedc::driver
