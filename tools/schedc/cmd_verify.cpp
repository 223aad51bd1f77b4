// `schedc verify SPEC|SCHEDULE.json [--optimal] [--format text|json]`: the schedule is valid and
// the spec's `expect` clauses hold; with --optimal, its provenance's optimality claim is
// re-derived from the problem.

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ir/expect.h"
#include "ir/json_io.h"
#include "solver/families/families.h"
#include "solver/synth/prove.h"
#include "support/numbers.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/json_out.h"

namespace schedc::driver {

namespace {

// `expect { optimal }` holds when the solver's provenance says so.
bool proven_optimal(const ir::Schedule& sched) {
  return sched.provenance && sched.provenance->solve && sched.provenance->solve->claims_optimal();
}

bool check_driver_expectations(Session& s, const Input& in, const ir::Schedule& sched) {
  bool ok = true;
  for (const ir::Expectation& e : in.spec.expect) {
    if (e.kind == ir::Expectation::Kind::Optimal && !proven_optimal(sched)) {
      s.diags.error(DiagKind::ExpectFailed, e.loc,
                    "expected a schedule proved optimal, but it was not (only `schedule = solve` can prove it)");
      ok = false;
    }
    if (e.kind != ir::Expectation::Kind::SameAs) continue;
    Diagnostics family_diags;
    auto other = solver::generate_family(e.family, sched.problem, {}, e.loc, family_diags);
    if (!other) {
      s.diags.error(DiagKind::ExpectFailed, e.loc,
                    "expected the same schedule as family " + backtick(e.family) + ", which cannot be generated here");
      for (const auto& d : family_diags.all()) s.diags.note(e.loc, d.message);
      ok = false;
      continue;
    }
    if (other->ranks == sched.ranks && other->has_overlap() == sched.has_overlap() &&
        (!sched.has_overlap() || other->overlap == sched.overlap))
      continue;
    std::string where;
    for (size_t r = 0; r < sched.ranks.size() && where.empty(); ++r) {
      const auto& a = sched.ranks[r];
      const auto& b = other->ranks[r];
      size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      if (i < a.size() || i < b.size())
        where = "rank " + std::to_string(r) + " differs at position " + std::to_string(i) + ": " +
                (i < a.size() ? backtick(ir::format_action(a[i])) : std::string("end")) + " vs " +
                (i < b.size() ? backtick(ir::format_action(b[i])) : std::string("end"));
    }
    if (where.empty()) where = "the overlapped units differ";
    s.diags.error(DiagKind::ExpectFailed, e.loc,
                  "expected the same schedule as family " + backtick(e.family) + ": " + where);
    ok = false;
  }
  return ok;
}

// What the schedule's provenance claims, and where: a schedule JSON's own `provenance`, or the
// one the solver just made for a spec's `schedule = solve`.
struct Claim {
  std::optional<ir::Provenance> provenance;
  SourceLoc loc;  // of `status` (of the schedule source for a spec)
  SourceLoc objective_loc;
};

Claim read_claim(Session& s, const Input& in, const ir::Schedule& sched) {
  Claim c;
  if (in.format == frontend::InputFormat::ScheduleJson) {
    c.provenance = in.schedule->provenance;
    c.loc = in.map.json("/provenance/status");
    c.objective_loc = in.map.json("/provenance/objective");
    return c;
  }
  c.provenance = sched.provenance;
  c.loc = in.map.schedule().has_file() ? in.map.schedule() : in.map.file();
  c.objective_loc = c.loc;
  return c;
}

// --optimal: re-derives the claim. False after reporting; on success `argument` says what holds.
bool check_optimal_claim(Session& s, const Input& in, const ir::Schedule& sched, const ir::Metrics& metrics,
                         const ScheduleFlags& flags, std::string* argument) {
  Claim c = read_claim(s, in, sched);
  const ir::SolveRecord* claim = c.provenance && c.provenance->solve ? &*c.provenance->solve : nullptr;
  std::string status = claim ? claim->status : "";
  if (!claim || !claim->claims_optimal()) {
    std::string source = c.provenance ? c.provenance->source : "";
    std::string seen = !status.empty()   ? "the provenance's status is " + backtick(status) + ", not `optimal`"
                       : !source.empty() ? "the schedule's source is " + backtick(source) + ", which claims nothing"
                                         : "the schedule carries no provenance";
    s.diags.error(DiagKind::ExpectFailed, c.loc,
                  "no optimality claim to check: " + seen + " (only `schedule = solve` claims optimality)");
    return false;
  }
  // The claim is about this schedule: its objective must be the one claimed.
  const double objective = metrics.objective_value(sched.problem.objective);
  if (claim->objective) {
    double claimed = *claim->objective;
    if (std::abs(claimed - objective) > 1e-9 * std::max(1.0, std::abs(objective))) {
      s.diags.error(DiagKind::ExpectFailed, c.objective_loc,
                    "the provenance claims an optimal objective of " + backtick(format_number(claimed)) +
                        ", but the schedule's is " + backtick(format_number(objective)));
      return false;
    }
  }
  solver::ProveOptions o;
  if (flags.time_limit) o.time_limit_s = *flags.time_limit;  // its range is checked on parsing
  // Only a claim that came from the exact model may be re-derived by it; any claim by the bound.
  o.use_z3 = claim->method.rfind("time-indexed SAT, exact", 0) == 0;
  solver::ProofCheck r = solver::prove_optimal(sched, o);
  if (r.verdict == solver::ProofVerdict::Internal) {
    s.diags.error(DiagKind::Internal, c.loc, "cannot check the optimality claim: " + r.message);
    return false;
  }
  if (r.verdict == solver::ProofVerdict::Refuted) {
    s.diags.error(DiagKind::ExpectFailed, c.loc, "the optimality claim does not hold: " + r.message);
    return false;
  }
  if (r.verdict == solver::ProofVerdict::Unknown) {
    s.diags.error(DiagKind::ExpectFailed, c.loc, "cannot re-derive the optimality claim: " + r.message);
    return false;
  }
  *argument = r.message;
  return true;
}

// The verdict of a schedule that passed: `argument` is --optimal's, when asked.
std::string verdict_text(const std::string& path, const Input& in, const ir::Schedule& sched, const ir::Metrics& m,
                         bool optimal, const std::string& argument) {
  double peak = 0;
  for (double v : m.peak_memory) peak = std::max(peak, v);
  std::ostringstream os;
  const ir::Problem& p = sched.problem;
  std::string t = p.time_unit.empty() ? "" : " " + p.time_unit, mem = p.memory_unit.empty() ? "" : " " + p.memory_unit;
  os << path << ": ok: valid schedule, " << sched.num_actions() << " actions, makespan " << format_number(m.makespan)
     << t << ", peak memory " << format_number(peak) << mem;
  if (!in.spec.expect.empty())
    os << "; " << in.spec.expect.size() << (in.spec.expect.size() == 1 ? " expectation holds" : " expectations hold");
  os << "\n";
  if (optimal) os << path << ": ok: optimal claim holds: " << argument << "\n";
  return os.str();
}

std::string verdict_json(const std::string& path, const Input& in, const ir::Schedule& sched, const ir::Metrics& m,
                         bool optimal, const std::string& argument) {
  ojson expect = ojson::array();
  for (const ir::Expectation& e : in.spec.expect) expect.push_back(expectation_json(e));
  std::vector<std::pair<std::string, std::string>> fields = {{"file", ojson(path).dump()},
                                                             {"ok", "true"},
                                                             {"actions", std::to_string(sched.num_actions())},
                                                             {"metrics", ir::metrics_json(m)},
                                                             {"expect", json_line(expect)}};
  if (optimal) fields.emplace_back("optimal_claim", ojson(argument).dump());
  return json_document("schedc.verify", fields);
}

}  // namespace

void add_verify_command(CLI::App& app, int& rc) {
  struct Opts {
    Request rq;
    bool optimal = false;
    OutputFlags out;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("verify", "check a schedule's validity and the spec's `expect` clauses");
  opts->rq.add_to(*cmd, Phase::Simulate);
  cmd->add_flag("--optimal", opts->optimal,
                "re-derive the provenance's optimality claim: the lower bound, or an exact Z3 probe "
                "(limited by --time-limit, default 60 s)");
  opts->out.add_to(*cmd, {"text", "json"});
  set_callback(*cmd, rc, [opts](Session& s) {
    if (!check_output_path(s, opts->out.output)) return s.finish();
    if (opts->rq.args.path.empty()) {
      s.diags.error(DiagKind::BadFlag, {}, "verify: give a .sched spec or a schedule .json");
      return s.finish();
    }
    Compilation c;
    if (!run_until(s, opts->rq, c)) return s.fail();
    const Input& in = *c.input;
    const ir::Schedule& sched = *c.schedule;
    const ir::Metrics& m = c.timeline->metrics;
    bool ok = ir::check_metric_expectations(in.spec.expect, m, s.diags);
    ok &= check_driver_expectations(s, in, sched);
    if (!ok) return s.fail();
    std::string argument;
    if (opts->optimal && !check_optimal_claim(s, in, sched, m, opts->rq.args.schedule, &argument)) return s.fail();
    std::string out = opts->out.format == "json"
                          ? verdict_json(s.sources.path(in.file), in, sched, m, opts->optimal, argument)
                          : verdict_text(opts->rq.args.path, in, sched, m, opts->optimal, argument);
    return finish_with_output(s, opts->out.output, out);
  });
}

}  // namespace schedc::driver
