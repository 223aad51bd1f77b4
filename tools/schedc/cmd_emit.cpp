// `schedc emit SPEC --target cpp -o DIR`: lower the schedule, prove the program deadlock-free, and
// write one C++ source per rank, main.cpp and a CMakeLists.txt that builds them against schedrt.
// The files are written into a temporary folder inside DIR and moved into place only once all are
// written, so a failed emit leaves DIR as it was; `.schedc-manifest` lists what schedc wrote, and
// the next emit removes those files it does not write again (rank_4..7.cpp of a larger schedule),
// never any other file.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/os.h"

namespace schedc::driver {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifest = ".schedc-manifest";
constexpr const char* kTempPrefix = ".schedc-tmp-";

// A name the manifest may list: a plain file name in the folder, never a path out of it.
bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name.rfind(".schedc", 0) != 0;
}

std::vector<std::string> read_manifest(const fs::path& dir) {
  std::ifstream in(dir / kManifest);
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#' && is_plain_name(line)) names.push_back(line);
  return names;
}

std::string manifest_text(const std::vector<std::string>& names) {
  std::string text =
      "# files written by `schedc emit`; the next emit into this folder removes those it does not write again\n";
  for (const std::string& n : names) text += n + "\n";
  return text;
}

// Temporaries of earlier emits that were killed.
void remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> stale;
  std::string prefix = kTempPrefix;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && is_stale_owner(std::string_view(name).substr(prefix.size())))
      stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

// Writes `files` into `dir` (see the top of this file); false after reporting.
bool write_folder(Session& s, const std::string& dir, const std::vector<codegen::EmittedFile>& files) {
  fs::path target(dir);
  std::error_code ec;
  bool existed = fs::exists(target, ec);
  if (existed && !fs::is_directory(target, ec)) {
    s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(dir) + ": it is not a directory");
    return false;
  }
  fs::create_directories(target, ec);
  if (ec) {
    s.diags.error(DiagKind::Io, {}, "cannot create " + backtick(dir) + ": " + ec.message());
    return false;
  }
  remove_stale_temporaries(target);
  fs::path tmp = target / (kTempPrefix + temp_owner());
  auto fail = [&](const std::string& message) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    if (!existed) fs::remove(target, ignored);  // only if still empty
    s.diags.error(DiagKind::Io, {}, message);
    return false;
  };
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec)) return fail("cannot write into " + backtick(dir) + ": " + ec.message());
  std::vector<std::string> written;
  for (const auto& f : files) {
    std::string why = write_file((tmp / f.name).string(), f.content);
    if (!why.empty()) return fail("cannot write " + backtick((target / f.name).string()) + ": " + why);
    written.push_back(f.name);
  }
  // Every name must be replaceable before anything is moved, so that a failure changes nothing.
  for (const std::string& name : written) {
    fs::file_status st = fs::symlink_status(target / name, ec);
    if (fs::is_directory(st)) return fail("cannot write " + backtick((target / name).string()) + ": it is a directory");
  }
  std::vector<std::string> previous = read_manifest(target);
  // While files move, the manifest in place lists both sets, so that an emit killed meanwhile
  // leaves nothing the next one would not remove.
  std::vector<std::string> both = previous;
  for (const std::string& name : written)
    if (std::find(both.begin(), both.end(), name) == both.end()) both.push_back(name);
  for (const auto& [name, list] : {std::pair{std::string("both"), both}, std::pair{std::string("new"), written}}) {
    std::string why = write_file((tmp / (std::string(kManifest) + "." + name)).string(), manifest_text(list));
    if (!why.empty()) return fail("cannot write " + backtick((target / kManifest).string()) + ": " + why);
  }
  fs::rename(tmp / (std::string(kManifest) + ".both"), target / kManifest, ec);
  if (ec) return fail("cannot write " + backtick((target / kManifest).string()) + ": " + ec.message());
  for (const std::string& name : written) {
    fs::rename(tmp / name, target / name, ec);
    if (ec) return fail("cannot move " + backtick(name) + " into " + backtick(dir) + ": " + ec.message());
  }
  fs::rename(tmp / (std::string(kManifest) + ".new"), target / kManifest, ec);
  if (ec) return fail("cannot write " + backtick((target / kManifest).string()) + ": " + ec.message());
  std::set<std::string> keep(written.begin(), written.end());
  for (const std::string& name : previous) {
    if (keep.count(name)) continue;
    fs::file_status st = fs::symlink_status(target / name, ec);
    if (fs::is_regular_file(st) || fs::is_symlink(st)) fs::remove(target / name, ec);
  }
  fs::remove_all(tmp, ec);
  return true;
}

}  // namespace

void add_emit_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string target = "cpp", output;
    Request rq;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("emit", "generate the per-rank C++ executor of a schedule");
  opts->rq.add_to(*cmd, Phase::Emit);
  cmd->add_option("--target", opts->target, "cpp")->check(CLI::IsMember({"cpp"}));
  cmd->add_option("-o,--output", opts->output, "the directory to write")->required();
  opts->rq.runtime.add_to(*cmd, false);
  set_callback(*cmd, rc, [opts](Session& s) {
    if (!check_output_path(s, opts->output)) return s.finish();
    Compilation c;
    if (!run_until(s, opts->rq, c)) return s.fail();
    return write_folder(s, opts->output, c.emitted->files) ? s.finish() : s.fail();
  });
}

}  // namespace schedc::driver
