#include "tools/schedc/build_cache.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "schedc_build_config.h"
#include "tools/schedc/interrupt.h"
#include "tools/schedc/launch.h"
#include "tools/schedc/os.h"

namespace schedc::driver {

namespace fs = std::filesystem;

namespace {

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
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a_),
                  static_cast<unsigned long long>(b_));
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
  if (RuntimePaths built{build_config::kRuntimeInclude, build_config::kRuntimeLibrary}; has_runtime(built))
    return built;
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
  std::string amount = bytes < (10ull << 20) ? std::to_string(bytes / 1024) + " KiB"
                                             : std::to_string(bytes >> 20) + " MiB";
  return " (" + amount + " free on its file system)";
}

// What failed in a compiler or linker run, with its output (kept in memory, so a full disk does
// not lose it), or why there is none.
std::string tool_failure(const std::string& what, int status, std::string text, const fs::path& cache) {
  std::string tool = backtick(build_config::kCxx);
  std::string how = status == 127  ? "cannot start " + tool
                    : status > 128 ? tool + " was killed by signal " + std::to_string(status - 128)
                                   : tool + " exited with status " + std::to_string(status);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (!text.empty()) return what + " failed: " + how + ":\n" + text;
  return what + " failed: " + how + " and printed nothing; check that the build cache " + backtick(cache.string()) +
         " is writable and its file system is not full" + free_space_note(cache);
}

}  // namespace

std::optional<std::string> build_executor(Session& s, const std::vector<codegen::EmittedFile>& files,
                                          const BuildSettings& settings) {
  auto rt = runtime_paths();
  if (!rt) {
    auto installed = installed_runtime();
    std::string next_to = installed ? " in " + backtick(installed->include.string()) + " and " +
                                          backtick(installed->library.string())
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
    s.diags.error(DiagKind::Io, {},
                  "cannot create the build cache directory " + backtick(tmp.string()) + ": " + ec.message());
    return std::nullopt;
  }
  for (const auto& f : files) {
    std::string why = write_file((tmp / f.name).string(), f.content);
    if (why.empty()) continue;
    std::string note = free_space_note(root);  // before the clean-up frees some
    fs::remove_all(tmp, ec);
    s.diags.error(DiagKind::Io, {},
                  "cannot write " + backtick(f.name) + " into the build cache " + backtick(root.string()) + ": " + why +
                      note);
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
  // user's file; their folder is on the include path for their own headers. `-x c++`: C++ whatever
  // the file's name (the compiler would take `stage.txt` for a linker input, and the link would
  // then miss an object file it never made).
  for (size_t i = 0; i < stage_sources.size() && failure.empty(); ++i) {
    if (stop_signal() != 0) break;
    const fs::path& src = stage_sources[i];
    std::string base = "stage" + std::to_string(i) + "_" + src.filename().string();
    std::string obj = (tmp / (base + ".o")).string();
    int log = open_log((tmp / (base + ".log")).string());
    std::vector<std::string> cmd = {build_config::kCxx};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    cmd.insert(cmd.end(), {"-I", rt->include.string(), "-I", src.parent_path().string(), "-c", "-x", "c++",
                           src.string(), "-o", obj});
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
