// `schedc profile SPEC [--backend threads|mpi|cuda] [--write] [--format text|json]`: measure each
// stage's F, B, W (and FB when the spec has it) and the transfer between ranks on the real backend,
// and print them as a `cost` block in microseconds, or write that block into the spec.
//
//   load the input -> the problem the run uses (a family fills in what the spec leaves open; a
//   solver never changes the problem, so it does not run) -> a probe schedule with its placement
//   -> executor (cached) -> `executor --profile FILE` -> cost block -> print, or --write

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "frontend/spec.h"
#include "profile/profile.h"
#include "support/input.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {
namespace {

// A fresh temporary file for the executor's JSON; removed when this goes away.
struct TempFile {
  std::string path;
  TempFile() {
    std::string pattern = (std::filesystem::temp_directory_path() / "schedc-profile-XXXXXX").string();
    int fd = mkstemp(pattern.data());
    if (fd >= 0) {
      close(fd);
      path = pattern;
    }
  }
  ~TempFile() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove(path, ec);
  }
};

// The spec with `block` in place of its cost block, checked by parsing it again: the problem must
// be the old one with the new costs. nullopt after reporting.
std::optional<std::string> rewritten_spec(Session& s, const Input& in, const std::string& block) {
  const std::string& path = s.sources.path(in.file);
  std::string text = profile::replace_cost_block(s.sources, in.file, block);
  SourceManager again;
  int32_t file = again.add(path, text);
  Diagnostics diags(&again);
  auto spec = frontend::parse_spec(again, file, diags);
  if (!spec) {
    s.diags.error(DiagKind::OutOfRange, SourceLoc{in.file, 0, 0},
                  "the measured costs do not fit in the spec (the language allows 0..1e15 per value), so it was not "
                  "changed:\n" +
                      diags.str());
    return std::nullopt;
  }
  // Against the spec as written, parsed the same way: `in`'s problem may have been completed since
  // (a family fills in the backward mode a spec leaves out), which the text does not say.
  SourceManager before;
  int32_t old_file = before.add(path, s.sources.text(in.file));
  Diagnostics old_diags(&before);
  auto old_spec = frontend::parse_spec(before, old_file, old_diags);
  ir::Problem want = old_spec ? old_spec->problem : in.spec.problem;
  want.cost = spec->problem.cost;
  want.time_unit = spec->problem.time_unit;  // the block states its costs in us
  if (!(want == spec->problem)) {
    s.diags.error(DiagKind::Internal, SourceLoc{in.file, 0, 0},
                  "rewriting the cost block would change more than the costs (a bug in schedc; please report it); the "
                  "spec was not changed");
    return std::nullopt;
  }
  return text;
}

}  // namespace

void add_profile_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string format = "text";
    bool write = false;
    Request rq;
  };
  auto opts = std::make_shared<Opts>();
  // The executor of a probe schedule, with the runtime flags passed at run time (as `schedc run`).
  opts->rq.last = Phase::Run;
  opts->rq.probe = true;
  opts->rq.runtime_at_launch = true;
  CLI::App* cmd = app.add_subcommand("profile",
                                     "measure each stage's F, B, W and the transfers; print or write a cost block");
  cmd->add_option("input", opts->rq.args.path,
                  "a .sched spec or schedule .json (omit with --family and the problem flags)");
  cmd->add_flag("--write", opts->write, "update the spec's cost block in place (atomically; nothing else changes)");
  cmd->add_option("--format", opts->format, "text (a cost block) | json (the raw measurements)")
      ->check(CLI::IsMember({"text", "json"}));
  opts->rq.build.add_to(*cmd);
  opts->rq.args.problem.add_to(*cmd);
  opts->rq.args.schedule.add_to(*cmd);
  opts->rq.runtime.add_to(*cmd, false);
  opts->rq.dump.add_to(*cmd, opts->rq.last);
  set_callback(*cmd, rc, [opts](Session& s) {
    Request& rq = opts->rq;
    if (opts->write && rq.args.problem.any()) {
      s.diags.error(DiagKind::BadFlag, {},
                    "--write measures the spec's own problem: drop the problem flags (--pp, --cost, ...)");
      return s.finish();
    }
    Compilation c;
    if (!run_until(s, rq, c, Phase::Load)) return s.fail();
    const Input& in = *c.input;
    if (opts->write && (!in.has_file() || in.format != frontend::InputFormat::Spec)) {
      s.diags.error(DiagKind::Unsupported, in.map.file(), "--write updates the cost block of a .sched spec; give one");
      return s.finish(kInputError);
    }
    if (!run_until(s, rq, c, Phase::Build)) return s.fail();
    TempFile out;
    if (out.path.empty()) {
      s.diags.error(DiagKind::Io, {}, "cannot create a temporary file for the measurements");
      return s.finish(kInputError);
    }
    c.settings->trace.clear();  // profiling records no trace
    rq.launch = {"--profile", out.path};
    run_until(s, rq, c);
    if (const int status = c.exit_status; status != 0) {
      if (status != 127 && status <= 128)
        s.diags.error(DiagKind::Runtime, {},
                      "profiling failed (the executor's exit status is " + std::to_string(status) + ")");
      return s.finish(status == 2 ? kInternalError : kInputError);
    }
    auto read = read_input(out.path);
    std::string json = std::holds_alternative<std::string>(read) ? std::get<std::string>(read) : "";
    std::string error = std::holds_alternative<ReadFailure>(read) ? std::get<ReadFailure>(read).message : "";
    auto measured = error.empty() ? profile::read_measured(json, c.program->problem.num_stages(), &error)
                                  : std::nullopt;
    if (!measured) {
      s.diags.error(DiagKind::Internal, {}, "the executor's measurements cannot be read (a bug in schedc): " + error);
      return s.finish(kInternalError);
    }
    std::string block = profile::format_cost_block(*measured);
    if (opts->write) {
      auto text = rewritten_spec(s, in, block);
      if (!text || !profile::write_spec_atomically(s.sources.path(in.file), s.sources.text(in.file), *text, s.diags))
        return s.finish(kInputError);
      std::fprintf(stderr, "schedc: wrote the measured cost block into %s\n", s.sources.path(in.file).c_str());
    }
    std::fputs(opts->format == "json" ? json.c_str() : (block + "\n").c_str(), stdout);
    return s.finish(kOk);
  });
}

}  // namespace schedc::driver
