#include "tools/schedc/executor.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "codegen/lower.h"
#include "codegen/verify_program.h"
#include "ir/json_io.h"
#include "schedc_build_config.h"

extern char** environ;

namespace schedc::driver {

namespace fs = std::filesystem;

void RuntimeFlags::add_to(CLI::App& cmd, bool with_trace) {
  const char* g = "Runtime";
  cmd.add_option("--backend", backend, "threads | mpi | cuda")
      ->check(CLI::IsMember({"threads", "mpi", "cuda"}))
      ->group(g);
  cmd.add_option("--stage", stage, "mlp | synthetic | noop")->check(CLI::IsMember({"mlp", "synthetic", "noop"}))->group(g);
  cmd.add_option("--dtype", dtype, "fp64 | fp32 | bf16 (mlp; bf16 on cuda only)")
      ->check(CLI::IsMember({"fp64", "fp32", "bf16"}))
      ->group(g);
  cmd.add_option("--hidden", hidden, "mlp width h of Linear(h, h)")->check(CLI::Range(1, 4096))->group(g);
  cmd.add_option("--layers", layers, "mlp layers per stage")->check(CLI::Range(1, 64))->group(g);
  cmd.add_option("--batch", batch, "mlp rows per microbatch")->check(CLI::Range(1, 4096))->group(g);
  cmd.add_option("--seed", seed, "weights and data seed")->check(CLI::Range(int64_t{0}, int64_t{1} << 53))->group(g);
  cmd.add_option("--ms-per-unit", ms_per_unit, "synthetic: milliseconds per cost unit")->check(number_in(0.0, 1e5))->group(g);
  cmd.add_option("--timeout", timeout, "watchdog: seconds a wait may take (default 60)")->check(number_in(0.001, 1e6))->group(g);
  cmd.add_option("--steps", steps, "steps to run (the last is reported)")->check(CLI::Range(1, 1000000))->group(g);
  if (with_trace) cmd.add_option("--trace", trace, "write the measured timeline (Perfetto JSON) to this file")->group(g);
}

void RuntimeFlags::apply(codegen::RuntimeConfig& c) const {
  if (backend) c.backend = *backend;
  if (stage) c.stage = *stage;
  if (dtype) c.dtype = *dtype;
  if (hidden) c.hidden = *hidden;
  if (layers) c.layers = *layers;
  if (batch) c.batch = *batch;
  if (seed) c.seed = *seed;
  if (ms_per_unit) c.ms_per_unit = *ms_per_unit;
  if (timeout) c.timeout = *timeout;
  if (steps) c.steps = *steps;
  if (trace) c.trace = *trace;
}

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

std::optional<ir::Program> lower_verified(Session& s, const Input& in, const ir::Schedule& sched, int* code) {
  ir::Program prog = codegen::lower(sched);
  auto issues = codegen::verify_program(sched, prog);
  if (issues.empty()) return prog;
  *code = kInputError;
  for (const codegen::ProgramIssue& i : issues) {
    if (i.is_bug) {
      *code = kInternalError;
      s.diags.error(DiagKind::Internal, {}, "the lowered program is invalid (a bug in schedc; please report it): " + i.message);
    } else {
      s.diags.error(i.kind, in.spec.loc_of("memory.cap"), i.message);
    }
  }
  return std::nullopt;
}

std::optional<Executor> load_executor(Session& s, const ScheduleArgs& args, const RuntimeFlags* flags, int* code) {
  *code = kInputError;
  auto in = load_input(s, args.path, args.problem);
  auto sched = in ? obtain_schedule(s, *in, args.schedule) : std::nullopt;
  if (!sched) return std::nullopt;
  return make_executor(s, *in, std::move(*sched), flags, source_name(args.path, args.problem, args.schedule), code);
}

std::optional<codegen::RuntimeConfig> runtime_settings(Session& s, const Executor& ex, const RuntimeFlags& flags) {
  codegen::RuntimeConfig cfg = ex.runtime;
  flags.apply(cfg);
  if (cfg.dtype == "bf16" && cfg.backend != "cuda") {
    s.diags.error(DiagKind::BadValue, {}, "dtype `bf16` needs backend `cuda` (only the GPU stage computes in bf16)");
    return std::nullopt;
  }
  return cfg;
}

std::optional<Executor> make_executor(Session& s, const Input& in, ir::Schedule sched, const RuntimeFlags* flags,
                                      const std::string& source, int* code) {
  Executor ex;
  if (!codegen::read_runtime_config(in.spec.runtime, ex.runtime, s.diags)) {
    *code = kInputError;
    return std::nullopt;
  }
  if (flags) flags->apply(ex.runtime);
  auto prog = lower_verified(s, in, sched, code);
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

namespace {

// `schedc: CMD ARGS...` on stderr, for --verbose.
void print_command(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) line += a + " ";
  std::fprintf(stderr, "schedc: %s\n", line.c_str());
}

pid_t spawn(const std::vector<std::string>& argv, const std::string* output_file) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (output_file) {
    posix_spawn_file_actions_addopen(&fa, 1, output_file->c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  pid_t pid = -1;
  int err = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return err == 0 ? pid : -1;
}

int wait_for(pid_t pid) {
  if (pid < 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
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

// The runtime's headers and library: the build tree schedc was built in, or an installation
// around the schedc executable (<prefix>/bin/schedc).
struct RuntimePaths {
  fs::path include, library;
};

std::optional<RuntimePaths> runtime_paths() {
  std::error_code ec;
  RuntimePaths built{build_config::kRuntimeInclude, build_config::kRuntimeLibrary};
  if (fs::exists(built.include / "schedrt" / "context.h", ec) && fs::exists(built.library, ec)) return built;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  fs::path prefix = self.parent_path().parent_path();
  RuntimePaths installed{prefix / build_config::kInstallInclude, prefix / build_config::kInstallLibrary};
  if (fs::exists(installed.include / "schedrt" / "context.h", ec) && fs::exists(installed.library, ec)) return installed;
  return std::nullopt;
}

}  // namespace

int run_process(const std::vector<std::string>& argv, const std::string* output_file) {
  return wait_for(spawn(argv, output_file));
}

int launch_executor(Session& s, const std::vector<std::string>& argv, bool verbose) {
  if (verbose) print_command(argv);
  int status = run_process(argv);
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
    s.diags.error(DiagKind::Build, {},
                  "cannot find schedrt's headers and library (looked in " + backtick(build_config::kRuntimeInclude) +
                      " and next to the schedc executable)");
    return std::nullopt;
  }
  const std::vector<std::string> flags = {"-std=c++20", "-O2", "-Wall", "-Wextra"};
  Hasher h;
  h.add(build_config::kCxx);
  for (const std::string& f : flags) h.add(f);
  for (const char* a : build_config::kLinkArgs) h.add(a);
  for (const auto& f : files) h.add(f.name), h.add(f.content);
  h.add(read_text(rt->library));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(rt->include / "schedrt", ec)) h.add(read_text(e.path()));
  fs::path root = cache_root(settings.cache_dir) / "v1";
  fs::path entry = root / h.hex();
  fs::path exe = entry / "executor";
  if (fs::exists(exe, ec)) return exe.string();
  fs::path tmp = root / ("tmp-" + h.hex() + "-" + std::to_string(getpid()));
  fs::create_directories(tmp, ec);
  if (ec) {
    s.diags.error(DiagKind::Io, {}, "cannot create the build cache directory " + backtick(tmp.string()) + ": " + ec.message());
    return std::nullopt;
  }
  for (const auto& f : files) {
    std::ofstream out(tmp / f.name, std::ios::binary);
    out << f.content;
  }
  // Compile the sources in parallel, then link.
  std::vector<std::pair<fs::path, pid_t>> jobs;
  std::vector<std::string> objects;
  size_t parallel = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  bool failed = false;
  std::string failure;
  auto reap = [&](size_t keep) {
    while (jobs.size() > keep) {
      auto [log, pid] = jobs.front();
      jobs.erase(jobs.begin());
      if (wait_for(pid) != 0 && !failed) failed = true, failure = read_text(log);
    }
  };
  for (const auto& f : files) {
    if (f.name.size() < 4 || f.name.substr(f.name.size() - 4) != ".cpp") continue;
    std::string obj = (tmp / (f.name + ".o")).string();
    std::string log = (tmp / (f.name + ".log")).string();
    std::vector<std::string> cmd = {build_config::kCxx};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    cmd.insert(cmd.end(), {"-I", rt->include.string(), "-c", (tmp / f.name).string(), "-o", obj});
    if (settings.verbose) print_command(cmd);
    jobs.emplace_back(log, spawn(cmd, &log));
    objects.push_back(obj);
    reap(parallel - 1);
  }
  reap(0);
  if (!failed) {
    std::vector<std::string> cmd = {build_config::kCxx, "-o", (tmp / "executor").string()};
    cmd.insert(cmd.end(), objects.begin(), objects.end());
    cmd.push_back(rt->library.string());
    for (const char* a : build_config::kLinkArgs) cmd.push_back(a);
    std::string log = (tmp / "link.log").string();
    if (run_process(cmd, &log) != 0) failed = true, failure = read_text(log);
  }
  if (failed) {
    fs::remove_all(tmp, ec);
    s.diags.error(DiagKind::Build, {}, "compiling the generated executor failed:\n" + failure);
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
