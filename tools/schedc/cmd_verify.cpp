// `schedc verify SPEC|SCHEDULE.json`: the schedule is valid and the spec's `expect` clauses hold.

#include <iostream>

#include <nlohmann/json.hpp>

#include "ir/expect.h"
#include "solver/families/families.h"
#include "support/numbers.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

namespace {

// `expect { optimal }` holds when the solver's provenance says so.
bool proven_optimal(const ir::Schedule& sched) {
  if (sched.provenance.empty()) return false;
  auto prov = nlohmann::json::parse(sched.provenance, nullptr, false);
  return prov.is_object() && prov.value("status", "") == "optimal";
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
    s.diags.error(DiagKind::ExpectFailed, e.loc, "expected the same schedule as family " + backtick(e.family) + ": " + where);
    ok = false;
  }
  return ok;
}

}  // namespace

void add_verify_command(CLI::App& app, int& rc) {
  struct Opts {
    ScheduleArgs args;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("verify", "check a schedule's validity and the spec's `expect` clauses");
  opts->args.add_to(*cmd);
  cmd->callback([opts, &rc] {
    Session s;
    if (opts->args.path.empty()) throw CommandLineError{"verify: give a .sched spec or a schedule .json"};
    auto done = load_and_schedule(s, opts->args);
    if (!done) {
      rc = s.finish(kInputError);
      return;
    }
    const Input* in = &done->input;
    const ir::Schedule* sched = &done->schedule;
    const ir::Timeline& t = done->timeline;
    bool ok = ir::check_metric_expectations(in->spec.expect, t.metrics, s.diags);
    ok &= check_driver_expectations(s, *in, *sched);
    if (!ok) {
      rc = s.finish(kInputError);
      return;
    }
    const ir::Metrics& m = t.metrics;
    double peak = 0;
    for (double v : m.peak_memory) peak = std::max(peak, v);
    std::cout << opts->args.path << ": ok: valid schedule, " << sched->num_actions() << " actions, makespan "
              << format_number(m.makespan) << ", peak memory " << format_number(peak);
    if (!in->spec.expect.empty())
      std::cout << "; " << in->spec.expect.size() << (in->spec.expect.size() == 1 ? " expectation holds" : " expectations hold");
    std::cout << "\n";
    rc = s.finish(kOk);
  });
}

}  // namespace schedc::driver
