// The verify and simulate phases: a schedule is valid (ir::verify; each issue reported at the
// input's token when it has one), and its simulated timeline.

#include "support/internal_error.h"
#include "tools/schedc/phases.h"

namespace schedc::driver {

namespace {

// Reports verifier issues as diagnostics, located at the token when the input has one.
void report_issues(Session& s, const Input& in, const ir::Schedule& sched, const std::vector<ir::VerifyIssue>& issues) {
  const bool written = in.writes(sched);  // else no token of the input is this schedule's
  for (const ir::VerifyIssue& issue : issues) {
    SourceLoc loc = written ? in.map.action(issue.rank, issue.position) : SourceLoc{};
    // What a rank's order lacks (a missing action) is reported at that order.
    if (written && !loc.has_line() && issue.position < 0) loc = in.map.rank(issue.rank);
    std::string where;
    if (!loc.has_line() && issue.rank >= 0 && issue.position >= 0)
      where = "rank " + std::to_string(issue.rank) + " position " + std::to_string(issue.position) + ": ";
    if (!loc.has_file()) loc = in.map.file();
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
  s.diags.error(DiagKind::Internal, {},
                "the profiler's probe schedule does not verify (a bug in schedc; please report it)");
  return false;
}

ir::Timeline simulate(const ir::Schedule& sched) {
  ir::SimResult r = ir::simulate(sched);
  if (!r.timeline) SCHEDC_INTERNAL_ERROR("a verified schedule did not complete in simulation");
  return std::move(*r.timeline);
}

}  // namespace schedc::driver
