#include "tools/schedc/launch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "schedc_build_config.h"
#include "tools/schedc/interrupt.h"
#include "tools/schedc/os.h"
#include "tools/schedc/phases.h"

namespace schedc::driver {

void print_command(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) line += a + " ";
  std::fprintf(stderr, "schedc: %s\n", line.c_str());
}

int launch_executor(Session& s, const std::vector<std::string>& argv, bool verbose) {
  if (verbose) print_command(argv);
  int status = run_process(argv);
  // Interrupted: schedc ends by the signal once the caller returns; whatever the executor said
  // when stopped is no failure to report.
  if (stop_signal() != 0) return 128 + stop_signal();
  if (status == 127) s.diags.error(DiagKind::Runtime, {}, "cannot start " + backtick(argv.front()));
  else if (status > 128)
    s.diags.error(DiagKind::Runtime, {}, "the executor was killed by signal " + std::to_string(status - 128));
  return status;
}

std::vector<std::string> mpirun_command(int32_t ranks) {
  std::vector<std::string> cmd = {build_config::kMpiexec, "-np",       std::to_string(ranks),
                                  "--oversubscribe",      "--bind-to", "none"};
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  return cmd;
}

std::vector<StageListing> builtin_stages() {
  std::vector<StageListing> out;
  for (const schedrt::StageInfo& i : schedrt::registered_stages()) out.push_back({i.name, i.memory, i.has_reference});
  return out;
}

namespace {

constexpr schedrt::StageMemory kMemoryKinds[] = {schedrt::StageMemory::Host, schedrt::StageMemory::Device,
                                                 schedrt::StageMemory::None};

std::string tick_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + backtick(n);
  return out;
}

}  // namespace

std::optional<std::vector<StageListing>> executor_stages(Session& s, const std::string& exe, bool verbose) {
  int log = open_log(exe + ".stages.log");
  std::vector<std::string> argv = {exe, "--list-stages", "--format", "json"};
  if (verbose) print_command(argv);
  int status = run_process(argv, log);
  std::string text = read_log(log);
  if (log >= 0) ::close(log);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (status != 0) {
    // An executor whose stages could not register (a name registered twice, another version of
    // schedrt/stage.h) says why; that is the user's program, not schedc.
    s.diags.error(DiagKind::Build, {},
                  "the executor built with the stage sources cannot start (exit status " + std::to_string(status) +
                      ")" + (text.empty() ? "" : ":\n" + text));
    return std::nullopt;
  }
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_array()) {
    s.diags.error(DiagKind::Internal, {}, "the executor's --list-stages printed no list (a bug in schedrt): " + text);
    return std::nullopt;
  }
  std::vector<StageListing> out;
  for (const auto& e : doc) {
    // The memory kind as schedrt::to_string writes it: host, device or no.
    const std::string memory = e.value("memory", "");
    auto kind = std::find_if(std::begin(kMemoryKinds), std::end(kMemoryKinds),
                             [&](schedrt::StageMemory m) { return schedrt::to_string(m) == memory; });
    if (kind == std::end(kMemoryKinds)) {
      s.diags.error(DiagKind::Internal, {},
                    "the executor's --list-stages printed an unknown memory kind " + backtick(memory) +
                        " (a bug in schedrt): " + text);
      return std::nullopt;
    }
    out.push_back({e.value("name", ""), *kind, e.value("reference", false)});
  }
  return out;
}

bool check_stage(Session& s, SourceLoc stage_loc, const codegen::RuntimeConfig& cfg, const RuntimeFlags& flags,
                 bool check, const std::vector<StageListing>& stages, bool with_sources) {
  const std::string& name = cfg.stage;
  const bool stage_flag = flags.given(schedrt::OptionId::Stage);
  std::vector<std::string> names, references;
  bool known = false, reference = false, for_backend = false;
  using schedrt::StageMemory;
  const StageMemory memory = cfg.backend == schedrt::BackendKind::Cuda ? StageMemory::Device : StageMemory::Host;
  for (const StageListing& l : stages) {
    if (std::find(names.begin(), names.end(), l.name) == names.end()) names.push_back(l.name);
    bool listed = std::find(references.begin(), references.end(), l.name) != references.end();
    if (l.reference && l.memory != StageMemory::Device && !listed) references.push_back(l.name);
    if (l.name != name) continue;
    known = true;
    if (l.memory == memory || l.memory == StageMemory::None) for_backend = true;
    if (l.memory != StageMemory::Device) reference = l.reference;
  }
  if (!known) {
    std::string hint = with_sources ? "; the --stage-source files register no stage of that name"
                                    : " (a stage of your own is compiled in with `--stage-source FILE`)";
    std::string message = "no stage " + backtick(name) + " is registered; registered stages: " + tick_list(names) +
                          hint;
    if (stage_flag) s.diags.error(DiagKind::BadFlag, {}, "--stage: " + message);
    else s.diags.error(DiagKind::BadValue, stage_loc, message);
    return false;
  }
  if (!for_backend) {
    s.diags.error(DiagKind::BadValue, stage_flag || flags.given(schedrt::OptionId::Backend) ? SourceLoc{} : stage_loc,
                  "stage " + backtick(name) + " has no implementation for " + schedrt::to_string(memory) +
                      " memory, which backend " + backtick(schedrt::to_string(cfg.backend)) + " needs");
    return false;
  }
  if (!check || reference) return true;
  bool builtin = codegen::is_builtin_stage(name);
  s.diags.error(DiagKind::BadFlag, {},
                "--check: stage " + backtick(name) + (stage_flag ? " (from --stage)" : " (from the runtime block)") +
                    " has no sequential reference to compare with, " +
                    (builtin ? "it computes nothing" : "its StageInfo says has_reference = false") +
                    "; stages with one: " + tick_list(references));
  return false;
}

int run(Session& s, const std::string& exe, const codegen::RuntimeConfig& settings, const RuntimeFlags& flags,
        int32_t ranks, const std::vector<std::string>& extra, bool verbose) {
  std::vector<std::string> argv;
  if (settings.backend == schedrt::BackendKind::Mpi) argv = mpirun_command(ranks);
  argv.push_back(exe);
  // The runtime block is compiled in; the flags given and the backend go on the command line.
  std::vector<std::string> options = schedrt::executor_arguments(settings, flags.given_all());
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  return launch_executor(s, argv, verbose);
}

}  // namespace schedc::driver
