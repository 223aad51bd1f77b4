// The verify and simulate phases: a schedule is valid (ir::verify; each issue reported at the
// input's token when it has one), and its simulated timeline.

#include "ir/json_io.h"
#include "support/internal_error.h"
#include "tools/schedc/phases.h"

namespace schedc::driver {

namespace {

// Reports verifier issues as diagnostics, located at the token when the input has one.
void report_issues(Session& s, const Input& in, const ir::Schedule& sched,
                          const std::vector<ir::VerifyIssue>& issues) {
  const frontend::ScheduleSource& src = in.spec.schedule;
  bool explicit_source = src.kind == frontend::SourceKind::Explicit;
  for (const ir::VerifyIssue& issue : issues) {
    SourceLoc loc;
    std::string where;
    if (issue.rank >= 0 && issue.position >= 0 && explicit_source) {
      size_t r = static_cast<size_t>(issue.rank), i = static_cast<size_t>(issue.position);
      if (in.kind == Input::Kind::ScheduleJson)
        loc = ir::locate_json(s.sources, in.file, "/ranks/" + std::to_string(r) + "/" + std::to_string(i));
      else if (r < src.token_locs.size() && i < src.token_locs[r].size())
        loc = src.token_locs[r][i];
    }
    if (!loc.has_line() && issue.rank >= 0 && issue.position >= 0)
      where = "rank " + std::to_string(issue.rank) + " position " + std::to_string(issue.position) + ": ";
    if (!loc.has_file() && in.file >= 0) loc = SourceLoc{in.file, 0, 0};
    s.diags.error(issue.kind, loc, where + issue.message);
    if (issue.rank >= 0 && issue.position >= 0)
      s.diags.note(SourceLoc{loc.file, 0, 0}, "rank " + std::to_string(issue.rank) + "'s order, position " +
                                    std::to_string(issue.position) + " marked:\n" +
                                    ir::render_order(sched, issue.rank, issue.position));
  }
}

}  // namespace

bool verify(Session& s, const Input& in, const ir::Schedule& sched, std::optional<ir::Timeline>& timeline) {
  ir::SimResult sim;
  ir::VerifyOptions vo;
  vo.simulation = &sim;
  auto issues = ir::verify(sched, vo);
  if (!issues.empty()) {
    report_issues(s, in, sched, issues);
    return false;
  }
  if (sim.timeline) timeline = std::move(sim.timeline);
  return true;
}

bool verify_own(Session& s, const ir::Schedule& sched) {
  if (ir::verify(sched).empty()) return true;
  s.diags.error(DiagKind::Internal, {}, "the profiler's probe schedule does not verify (a bug in schedc; please report it)");
  return false;
}

ir::Timeline simulate(const ir::Schedule& sched) {
  ir::SimResult r = ir::simulate(sched);
  if (!r.timeline) SCHEDC_INTERNAL_ERROR("a verified schedule did not complete in simulation");
  return std::move(*r.timeline);
}

}  // namespace schedc::driver
