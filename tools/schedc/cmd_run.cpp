// `schedc run SPEC [--backend threads|mpi|cuda] [--stage NAME] [--stage-source FILE]... [--check]
// [--trace FILE] [--format text|json] [--timeout S]`: build the executor (cached) and run it; the executor prints
// the report (stdout) and its errors (stderr).

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

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
    bool interpret = false;
    Request rq;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("run", "build a schedule's executor and run it");
  opts->rq.add_to(*cmd, Phase::Run);
  // The runtime block is compiled in as the executor's defaults; the flags are passed at run time,
  // so that changing them does not rebuild.
  opts->rq.runtime_at_launch = true;
  cmd->add_flag("--check", opts->rq.check, "compare loss and gradients with a sequential run of the same model");
  cmd->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--interpret", opts->interpret, "run the op tables instead of the generated code (for comparison)");
  cmd->add_option("--fault", opts->fault, "testing: drop-send=RANK | throw=RANK")->group("");
  opts->rq.build.add_to(*cmd);
  opts->rq.runtime.add_to(*cmd, true);
  set_callback(*cmd, rc, [opts](Session& s) {
    Request& rq = opts->rq;
    rq.launch = {"--format", opts->format};
    if (rq.check) rq.launch.push_back("--check");
    if (opts->interpret) rq.launch.push_back("--interpret");
    if (!opts->fault.empty()) rq.launch.insert(rq.launch.end(), {"--fault", opts->fault});
    Compilation c;
    if (!run_until(s, rq, c, Phase::Emit) || !check_fault(s, opts->fault, c.program->problem.ranks) ||
        !run_until(s, rq, c))
      return s.fail();
    const int status = c.exit_status;
    if (status == 0) return s.finish(kOk);
    if (status == 2) {
      s.diags.error(DiagKind::Runtime, {},
                    "the executor rejected its command line (a bug in schedc; please report it)");
      return s.finish(kInternalError);
    }
    if (status != 127 && status <= 128)
      s.diags.error(DiagKind::Runtime, {}, "the executor failed (exit status " + std::to_string(status) + ")");
    return s.finish(kInputError);
  });
}

}  // namespace schedc::driver
