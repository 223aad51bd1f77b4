#include "tools/schedc/executor.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "codegen/lower.h"
#include "codegen/verify_program.h"
#include "ir/json_io.h"
#include "schedrt/stage.h"
#include "schedc_build_config.h"
#include "support/units.h"
#include "tools/schedc/interrupt.h"
#include "tools/schedc/os.h"

namespace schedc::driver {

namespace fs = std::filesystem;

std::string source_name(const std::string& path, const ProblemFlags& p, const ScheduleFlags& s) {
  std::string out = path;
  auto add = [&](const std::string& flag, const std::string& value) {
    out += (out.empty() ? "" : " ") + flag + " " + value;
  };
  if (s.family) add("--family", *s.family);
  if (s.solve) out += out.empty() ? "--solve" : " --solve";
  if (p.pp) add("--pp", std::to_string(*p.pp));
  if (p.vpp) add("--vpp", std::to_string(*p.vpp));
  if (p.microbatches) add("--microbatches", std::to_string(*p.microbatches));
  if (p.direction) add("--direction", *p.direction);
  if (p.placement) add("--placement", *p.placement);
  if (p.backward) add("--backward", *p.backward);
  if (p.cost) add("--cost", *p.cost);
  if (p.memory) add("--memory", *p.memory);
  return out.empty() ? "the command line" : out;
}

std::optional<ir::Program> lower_verified(Session& s, const Input& in, const ir::Schedule& sched) {
  ir::Program prog = codegen::lower(sched);
  auto issues = codegen::verify_program(sched, prog);
  if (issues.empty()) return prog;
  for (const codegen::ProgramIssue& i : issues) {
    if (i.is_bug) {
      s.diags.error(DiagKind::Internal, {}, "the lowered program is invalid (a bug in schedc; please report it): " + i.message);
    } else {
      s.diags.error(i.kind, in.spec.loc_of("memory.cap"), i.message);
    }
  }
  return std::nullopt;
}

std::optional<Executor> load_executor(Session& s, const ScheduleArgs& args, const RuntimeFlags* flags) {
  auto in = load_input(s, args.path, args.problem);
  auto sched = in ? obtain_schedule(s, *in, args.schedule) : std::nullopt;
  if (!sched) return std::nullopt;
  return make_executor(s, *in, std::move(*sched), flags, source_name(args.path, args.problem, args.schedule));
}

std::optional<codegen::RuntimeConfig> runtime_settings(Session& s, const Executor& ex, const RuntimeFlags& flags) {
  codegen::RuntimeConfig cfg = ex.runtime;
  flags.apply(cfg);
  if (std::string why = schedrt::check_combination(cfg); !why.empty()) {
    s.diags.error(DiagKind::BadValue, {}, why);
    return std::nullopt;
  }
  return cfg;
}

std::optional<Executor> make_executor(Session& s, const Input& in, ir::Schedule sched, const RuntimeFlags* flags,
                                      const std::string& source) {
  Executor ex;
  if (!codegen::read_runtime_config(in.spec.runtime, ex.runtime, s.diags)) {
    return std::nullopt;
  }
  // Costs stated in a unit of time run at that speed on the synthetic stage (and its measured
  // and simulated times compare directly), unless `ms_per_unit` says otherwise.
  if (const Unit* unit = find_unit(in.spec.problem.time_unit); unit && !in.spec.runtime.find("ms_per_unit"))
    ex.runtime.ms_per_unit = unit->scale / 1e6;
  // The model's partition reaches the stages (each builds its own stage's layers), unless
  // --layers asks for one count everywhere (flags->apply below).
  if (const auto& lps = in.spec.layers_per_stage; !lps.empty()) {
    const bool layers_flag = flags && flags->given(schedrt::OptionId::Layers);
    if (const int32_t S = in.spec.problem.num_stages(); lps.size() != static_cast<size_t>(S) && !layers_flag) {
      s.diags.error(DiagKind::BadValue, in.spec.loc_of("model"),
                    "the model's partition gives the layers of " + backtick(std::to_string(lps.size())) +
                        " stages, the problem has " + backtick(std::to_string(S)) +
                        " (--pp or --vpp changed it): give --layers, or change the spec");
      return std::nullopt;
    }
    ex.runtime.layers_per_stage = lps;
    ex.runtime.embedding = in.spec.has_embedding;
    ex.runtime.head = in.spec.has_head;
  }
  if (flags) flags->apply(ex.runtime);
  if (const ir::Param* p = in.spec.runtime.find("stage")) ex.stage_loc = p->value_loc;
  auto prog = lower_verified(s, in, sched);
  if (!prog) return std::nullopt;
  codegen::EmitOptions eo;
  eo.source_name = source;
  eo.runtime = ex.runtime;
  eo.simulated_makespan = simulate_verified(sched).metrics.makespan;
  const frontend::ScheduleSource& src = in.spec.schedule;
  bool explicit_orders = src.kind == frontend::SourceKind::Explicit && src.ranks == sched.ranks;
  if (in.file >= 0) {
    eo.line_file = s.sources.path(in.file);
    if (in.kind == Input::Kind::Spec) {
      eo.default_line = src.loc.line;
      if (explicit_orders)
        for (const auto& locs : src.token_locs) {
          eo.lines.emplace_back();
          for (const SourceLoc& l : locs) eo.lines.back().push_back(l.line);
        }
    } else if (in.kind == Input::Kind::ScheduleJson && explicit_orders) {
      eo.default_line = 1;
      for (size_t r = 0; r < sched.ranks.size(); ++r) {
        eo.lines.emplace_back();
        for (size_t i = 0; i < sched.ranks[r].size(); ++i)
          eo.lines.back().push_back(
              ir::locate_json(s.sources, in.file, "/ranks/" + std::to_string(r) + "/" + std::to_string(i)).line);
      }
    } else {
      eo.line_file.clear();  // nothing in the file corresponds to the ops
    }
  }
  ex.files = codegen::emit_cpp(*prog, eo);
  ex.schedule = std::move(sched);
  ex.program = std::move(*prog);
  return ex;
}

void BuildSettings::add_to(CLI::App& cmd) {
  cmd.add_option("--cache-dir", cache_dir, "build cache (default $SCHEDC_CACHE_DIR, $XDG_CACHE_HOME/schedc or ~/.cache/schedc)");
  cmd.add_flag("--verbose,-v", verbose, "print the compiler and launcher commands");
  cmd.add_option("--stage-source", stage_sources,
                 "a C++ file with stages of your own (SCHEDRT_REGISTER_STAGE), compiled into the executor; repeatable")
      ->check(CLI::ExistingFile)
      ->type_name("FILE")
      ->take_all()
      ->group("Runtime");
}

std::vector<StageListing> builtin_stages() {
  std::vector<StageListing> out;
  for (const schedrt::StageInfo& i : schedrt::registered_stages())
    out.push_back({i.name, i.memory, i.has_reference});
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
  if (verbose) {
    std::string line;
    for (const auto& a : argv) line += a + " ";
    std::fprintf(stderr, "schedc: %s\n", line.c_str());
  }
  int status = run_process(argv, log);
  std::string text = read_log(log);
  if (log >= 0) ::close(log);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (status != 0) {
    // An executor whose stages could not register (a name registered twice, another version of
    // schedrt/stage.h) says why; that is the user's program, not schedc.
    s.diags.error(DiagKind::Build, {}, "the executor built with the stage sources cannot start (exit status " +
                                          std::to_string(status) + ")" + (text.empty() ? "" : ":\n" + text));
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

bool check_stage(Session& s, const Executor& ex, const codegen::RuntimeConfig& cfg, const RuntimeFlags& flags, bool check,
                 const std::vector<StageListing>& stages, bool with_sources) {
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
    std::string message = "no stage " + backtick(name) + " is registered; registered stages: " + tick_list(names) + hint;
    if (stage_flag)
      s.diags.error(DiagKind::BadFlag, {}, "--stage: " + message);
    else
      s.diags.error(DiagKind::BadValue, ex.stage_loc, message);
    return false;
  }
  if (!for_backend) {
    s.diags.error(DiagKind::BadValue, stage_flag || flags.given(schedrt::OptionId::Backend) ? SourceLoc{} : ex.stage_loc,
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

namespace {

// `schedc: CMD ARGS...` on stderr, for --verbose.
void print_command(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) line += a + " ";
  std::fprintf(stderr, "schedc: %s\n", line.c_str());
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A 128-bit content hash (two independent 64-bit mixes) for cache keys.
class Hasher {
 public:
  void add(std::string_view s) {
    for (unsigned char c : s) {
      a_ = (a_ ^ c) * 0x100000001b3ull;
      b_ = ((b_ << 5) | (b_ >> 59)) ^ c;
      b_ *= 0x9e3779b97f4a7c15ull;
    }
    a_ ^= s.size();
    b_ += s.size();
  }
  std::string hex() const {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a_), static_cast<unsigned long long>(b_));
    return buf;
  }

 private:
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x84222325cbf29ce4ull;
};

fs::path cache_root(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* d = std::getenv("SCHEDC_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "schedc";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "schedc";
  return fs::temp_directory_path() / "schedc-cache";
}

// The runtime's headers and library: the installation around the schedc executable
// (<prefix>/bin/schedc, <prefix>/include, <prefix>/lib) when there is one, else the build tree
// schedc was built in. The installation comes first: an installed schedc must build against what
// was installed with it, even while the tree it was built from is still there.
struct RuntimePaths {
  fs::path include, library;
};

// Where an installation around this executable keeps the runtime (nullopt: /proc/self/exe unreadable).
std::optional<RuntimePaths> installed_runtime() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  fs::path prefix = self.parent_path().parent_path();
  return RuntimePaths{prefix / build_config::kInstallInclude, prefix / build_config::kInstallLibrary};
}

bool has_runtime(const RuntimePaths& p) {
  std::error_code ec;
  return fs::exists(p.include / "schedrt" / "context.h", ec) && fs::exists(p.library, ec);
}

std::optional<RuntimePaths> runtime_paths() {
  if (auto installed = installed_runtime(); installed && has_runtime(*installed)) return installed;
  if (RuntimePaths built{build_config::kRuntimeInclude, build_config::kRuntimeLibrary}; has_runtime(built)) return built;
  return std::nullopt;
}

// `tmp-HASH-OWNER` folders of schedc processes that are gone (killed while building).
void remove_stale_temporaries(const fs::path& root) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("tmp-", 0) != 0) continue;
    size_t dash = name.find('-', 4);
    if (dash != std::string::npos && is_stale_owner(std::string_view(name).substr(dash + 1))) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

// " (N KiB free on its file system)", for messages about writes that failed.
std::string free_space_note(const fs::path& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return "";
  unsigned long long bytes = static_cast<unsigned long long>(v.f_bavail) * v.f_frsize;
  std::string amount = bytes < (10ull << 20) ? std::to_string(bytes / 1024) + " KiB" : std::to_string(bytes >> 20) + " MiB";
  return " (" + amount + " free on its file system)";
}

// What failed in a compiler or linker run, with its output (kept in memory, so a full disk does
// not lose it), or why there is none.
std::string tool_failure(const std::string& what, int status, std::string text, const fs::path& cache) {
  std::string tool = backtick(build_config::kCxx);
  std::string how = status == 127 ? "cannot start " + tool
                    : status > 128 ? tool + " was killed by signal " + std::to_string(status - 128)
                                   : tool + " exited with status " + std::to_string(status);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (!text.empty()) return what + " failed: " + how + ":\n" + text;
  return what + " failed: " + how + " and printed nothing; check that the build cache " + backtick(cache.string()) +
         " is writable and its file system is not full" + free_space_note(cache);
}

}  // namespace

int launch_executor(Session& s, const std::vector<std::string>& argv, bool verbose) {
  if (verbose) print_command(argv);
  int status = run_process(argv);
  // Interrupted: schedc ends by the signal once the caller returns; whatever the executor said
  // when stopped is no failure to report.
  if (stop_signal() != 0) return 128 + stop_signal();
  if (status == 127) s.diags.error(DiagKind::Runtime, {}, "cannot start " + backtick(argv.front()));
  else if (status > 128) s.diags.error(DiagKind::Runtime, {}, "the executor was killed by signal " + std::to_string(status - 128));
  return status;
}

std::vector<std::string> mpirun_command(int32_t ranks) {
  std::vector<std::string> cmd = {build_config::kMpiexec, "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none"};
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  return cmd;
}

std::optional<std::string> build_executor(Session& s, const std::vector<codegen::EmittedFile>& files,
                                          const BuildSettings& settings) {
  auto rt = runtime_paths();
  if (!rt) {
    auto installed = installed_runtime();
    std::string next_to = installed ? " in " + backtick(installed->include.string()) + " and " + backtick(installed->library.string())
                                    : "";
    s.diags.error(DiagKind::Build, {},
                  "cannot find schedrt's headers and library (looked next to the schedc executable" + next_to +
                      ", and in the build tree, " + backtick(build_config::kRuntimeInclude) + ")");
    return std::nullopt;
  }
  const std::vector<std::string> flags = {"-std=c++20", "-O2", "-Wall", "-Wextra"};
  Hasher h;
  h.add(build_config::kCxx);
  for (const std::string& f : flags) h.add(f);
  for (const char* a : build_config::kLinkArgs) h.add(a);
  for (const auto& f : files) h.add(f.name), h.add(f.content);
  // The user's stage sources, by content (headers they include are not part of the key).
  std::vector<fs::path> stage_sources;
  for (const std::string& src : settings.stage_sources) {
    fs::path p = fs::absolute(src);
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      s.diags.error(DiagKind::Io, {}, "cannot read the stage source " + backtick(src));
      return std::nullopt;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    h.add("stage-source"), h.add(p.filename().string()), h.add(ss.str());
    stage_sources.push_back(p.lexically_normal());
  }
  h.add(read_text(rt->library));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(rt->include / "schedrt", ec)) h.add(read_text(e.path()));
  fs::path root = cache_root(settings.cache_dir) / "v1";
  remove_stale_temporaries(root);
  fs::path entry = root / h.hex();
  fs::path exe = entry / "executor";
  if (fs::exists(exe, ec)) return exe.string();
  fs::path tmp = root / ("tmp-" + h.hex() + "-" + temp_owner());
  fs::create_directories(tmp, ec);
  if (ec) {
    s.diags.error(DiagKind::Io, {}, "cannot create the build cache directory " + backtick(tmp.string()) + ": " + ec.message());
    return std::nullopt;
  }
  for (const auto& f : files) {
    std::string why = write_file((tmp / f.name).string(), f.content);
    if (why.empty()) continue;
    std::string note = free_space_note(root);  // before the clean-up frees some
    fs::remove_all(tmp, ec);
    s.diags.error(DiagKind::Io, {},
                  "cannot write " + backtick(f.name) + " into the build cache " + backtick(root.string()) + ": " + why + note);
    return std::nullopt;
  }
  // Compile the sources in parallel, then link.
  struct Job {
    std::string source;
    int log;
    pid_t pid;
  };
  std::vector<Job> jobs;
  std::vector<std::string> objects;
  size_t parallel = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  std::string failure;
  auto reap = [&](size_t keep) {
    while (jobs.size() > keep) {
      Job job = jobs.front();
      jobs.erase(jobs.begin());
      int status = wait_process(job.pid);
      if (status != 0 && failure.empty())
        failure = tool_failure("compiling " + backtick(job.source), status, read_log(job.log), root);
      if (job.log >= 0) ::close(job.log);
    }
  };
  for (const auto& f : files) {
    if (stop_signal() != 0) break;
    if (f.name.size() < 4 || f.name.substr(f.name.size() - 4) != ".cpp") continue;
    std::string obj = (tmp / (f.name + ".o")).string();
    int log = open_log((tmp / (f.name + ".log")).string());
    std::vector<std::string> cmd = {build_config::kCxx};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    cmd.insert(cmd.end(), {"-I", rt->include.string(), "-c", (tmp / f.name).string(), "-o", obj});
    if (settings.verbose) print_command(cmd);
    jobs.push_back({f.name, log, start_process(cmd, log)});
    objects.push_back(obj);
    reap(parallel - 1);
  }
  // The stage sources compile from where they are, so that the compiler's messages name the
  // user's file; their folder is on the include path for their own headers.
  for (size_t i = 0; i < stage_sources.size() && failure.empty(); ++i) {
    if (stop_signal() != 0) break;
    const fs::path& src = stage_sources[i];
    std::string base = "stage" + std::to_string(i) + "_" + src.filename().string();
    std::string obj = (tmp / (base + ".o")).string();
    int log = open_log((tmp / (base + ".log")).string());
    std::vector<std::string> cmd = {build_config::kCxx};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    cmd.insert(cmd.end(), {"-I", rt->include.string(), "-I", src.parent_path().string(), "-c", src.string(), "-o", obj});
    if (settings.verbose) print_command(cmd);
    jobs.push_back({settings.stage_sources[i], log, start_process(cmd, log)});
    objects.push_back(obj);
    reap(parallel - 1);
  }
  reap(0);
  if (failure.empty() && stop_signal() == 0) {
    std::vector<std::string> cmd = {build_config::kCxx, "-o", (tmp / "executor").string()};
    cmd.insert(cmd.end(), objects.begin(), objects.end());
    cmd.push_back(rt->library.string());
    for (const char* a : build_config::kLinkArgs) cmd.push_back(a);
    int log = open_log((tmp / "link.log").string());
    if (settings.verbose) print_command(cmd);
    int status = run_process(cmd, log);
    if (status != 0) failure = tool_failure("linking the generated executor", status, read_log(log), root);
    if (log >= 0) ::close(log);
  }
  if (stop_signal() != 0) {  // interrupted: leave nothing behind; schedc ends by the signal
    fs::remove_all(tmp, ec);
    return std::nullopt;
  }
  if (!failure.empty()) {
    fs::remove_all(tmp, ec);
    s.diags.error(DiagKind::Build, {}, failure);
    return std::nullopt;
  }
  fs::rename(tmp, entry, ec);
  if (ec) fs::remove_all(tmp, ec);  // another schedc built the same entry meanwhile
  if (!fs::exists(exe)) {
    s.diags.error(DiagKind::Io, {}, "cannot move the built executor into the cache at " + backtick(entry.string()));
    return std::nullopt;
  }
  return exe.string();
}

}  // namespace schedc::driver
