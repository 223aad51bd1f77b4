// schedrt::main: the command line of every generated executor.

#include "backends/backends.h"
#include "backends/cuda/cuda.h"
#include "command_line.h"
#include "profile.h"
#include "run_internal.h"
#include "schedrt/program.h"
#include "schedrt/run.h"
#include "schedrt/stage.h"

#include <cstdio>
#include <string>
#include <vector>

namespace schedrt {
namespace {

// `--list-stages`: what is registered in this executor, one line each (or a JSON array, which
// schedc reads to check a stage name before running an executor built with stage sources).
int list_stages(bool json) {
  std::string out = json ? "[" : "";
  bool first = true;
  for (const StageInfo& s : registered_stages()) {
    if (json) {
      out += std::string(first ? "" : ", ") + "{\"name\": " + json_quote(s.name) +
             ", \"memory\": " + json_quote(to_string(s.memory)) +
             ", \"reference\": " + (s.has_reference ? "true" : "false") +
             ", \"description\": " + json_quote(s.description) + "}";
    } else {
      char line[128];
      std::snprintf(line, sizeof line, "%-16s %-7s %-10s ", s.name.c_str(), to_string(s.memory).c_str(),
                    s.has_reference ? "reference" : "-");
      out += line + s.description + "\n";
    }
    first = false;
  }
  std::fputs((json ? out + "]\n" : out).c_str(), stdout);
  return 0;
}

}  // namespace

RunOptions default_options(const ProgramInfo& info) {
  RunOptions o;
  static_cast<RuntimeSettings&>(o) = info.defaults;
  if (info.layers_per_stage) o.layers_per_stage.assign(info.layers_per_stage, info.layers_per_stage + info.stages);
  return o;
}

int run(const ProgramInfo& info, const RunOptions& opt, int* argc, char*** argv) {
  BackendOptions bo;
  bo.timeout_s = opt.timeout;
  int rc = 0;
  auto body = [&](Backend& backend) {
    int r = opt.profile_path.empty() ? rank_main(backend, info, opt) : profile_rank(backend, info, opt);
    if (backend.rank() == 0) rc = r;
  };
  int no_argc = 0;
  char** no_argv = nullptr;
  int* ac = argc ? argc : &no_argc;
  char*** av = argv ? argv : &no_argv;
  std::string failure = opt.backend == BackendKind::Mpi    ? run_mpi(info.ranks, bo, body, ac, av)
                        : opt.backend == BackendKind::Cuda ? run_cuda(info.ranks, bo, body, ac, av)
                                                           : run_threads(info.ranks, bo, body);
  if (!failure.empty()) {
    std::fprintf(stderr, "schedrt: error: %s\n", failure.c_str());
    return 1;
  }
  return rc;
}

int main(int argc, char** argv, const ProgramInfo& info) {
  // A stage that could not register (a name given twice, another API version) is a mistake in
  // the program, not in its command line.
  if (auto errors = registry_errors(); !errors.empty()) {
    for (const std::string& e : errors) std::fprintf(stderr, "schedrt: error: %s\n", e.c_str());
    return 1;
  }
  RunOptions opt = default_options(info);
  ParseResult parsed = parse_command_line(argc, argv, info, opt);
  if (parsed.next == ParseResult::Next::ListStages) return list_stages(opt.format == "json");
  if (parsed.next == ParseResult::Next::Exit) {
    if (!parsed.error.empty()) std::fprintf(stderr, "schedrt: error: %s\n", parsed.error.c_str());
    return parsed.code;
  }
  return run(info, opt, &argc, &argv);
}

}  // namespace schedrt
