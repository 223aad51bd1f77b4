// Warm starts (SolveOptions::warm_starts, `--warm-start`): a given schedule's orders are
// candidates from the start, re-timed under the problem solved and fitted under its cap, so the
// answer is never worse than a valid one: a tighter cap's answer makes a looser cap's solve
// monotone. Schedules of another shape, or invalid ones, are skipped with a warning.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"
#include "tests/common/solve.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

std::string found_by(const Schedule& s) {
  REQUIRE(s.provenance);
  return nlohmann::json::parse(provenance_json(*s.provenance)).value("found_by", "");
}

// Only the warm starts (and the sequential fallback when none is usable): what they give is visible.
solver::SolveOptions starts_only() {
  solver::SolveOptions o = test::deterministic(5);
  o.use_families = false;
  o.use_greedy = false;
  o.use_z3 = false;
  o.use_local = false;
  return o;
}

}  // namespace

TEST_CASE("a valid warm start is the answer when nothing else runs, re-timed under the new costs") {
  test::Rng rng(4242);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Problem p = test::random_problem(rng);
    if (!validate(p).empty()) continue;
    Schedule given = test::random_valid(p, rng);
    // Other costs, same shape: the orders stay valid, their timing changes.
    Problem q = p;
    q.cost.F = PerStage::of(test::uniform(rng, 1, 5));
    q.cost.comm = test::uniform(rng, 0, 2) * 0.25;
    solver::SolveOptions o = starts_only();
    o.warm_starts.push_back({"given", given});
    solver::SolveResult r = solver::synthesize(q, o);
    REQUIRE(r.schedule);
    CHECK(verify(*r.schedule).empty());
    Schedule retimed = given;
    retimed.problem = q;
    CHECK(r.objective == doctest::Approx(test::objective_of(retimed)).epsilon(1e-12));
    CHECK(found_by(*r.schedule) == "given");
    CHECK(r.warnings.empty());
    ++checked;
  }
  CHECK(checked > 30);
}

TEST_CASE("the whole solve is never worse than its warm start") {
  test::Rng rng(99);
  for (int trial = 0; trial < 8; ++trial) {
    Problem p = test::random_problem(rng);
    if (!validate(p).empty()) continue;
    // The best of a few hundred random orders: often better than what a short solve finds alone.
    Schedule best = test::random_valid(p, rng);
    for (int k = 0; k < 200; ++k) {
      Schedule s = test::random_valid(p, rng);
      if (test::objective_of(s) < test::objective_of(best)) best = s;
    }
    solver::SolveOptions o = test::deterministic(0.3);
    o.warm_starts.push_back({"best-random", best});
    solver::SolveResult r = solver::synthesize(p, o);
    REQUIRE(r.schedule);
    CHECK(r.objective <= test::objective_of(best) + 1e-9);
  }
}

TEST_CASE("a tighter cap's answer as warm start makes the looser cap's solve monotone") {
  // Two directions, pp 6, m 24: short solves at caps 6, 9 and none, each warm-started with the
  // tighter ones' answers. Without the warm starts the looser solves can land in worse basins.
  Problem p = test::two_directions(6, 24);
  std::vector<solver::SolveOptions::WarmStart> pool;
  double previous = 1e300;
  for (double cap : {6.0, 9.0, 0.0}) {
    CAPTURE(cap);
    if (cap > 0) p.memory.cap = PerStage::of(cap);
    else p.memory.cap.reset();
    solver::SolveOptions o;
    o.time_limit_s = 0.3;  // wall time: the guarantee holds however far each search gets
    o.threads = 1;
    o.warm_starts = pool;
    solver::SolveResult r = solver::synthesize(p, o);
    REQUIRE(r.schedule);
    CHECK(verify(*r.schedule).empty());
    CHECK(r.objective <= previous + 1e-9);
    previous = std::min(previous, r.objective);
    pool.push_back({"cap" + std::to_string(cap), *r.schedule});
  }
}

TEST_CASE("a warm start over the cap is fitted under it; one of another shape is skipped with a warning") {
  Problem open = test::two_directions(8, 32);
  Diagnostics diags;
  auto family = solver::generate_family("dualpipe", open, {}, SourceLoc{}, diags);
  REQUIRE(family);
  Problem capped = open;
  capped.memory.cap = PerStage::of(8);
  Schedule over = *family;
  over.problem = capped;
  REQUIRE_FALSE(verify(over).empty());  // dualpipe holds more than 8 activations here
  solver::SolveOptions o = starts_only();
  o.warm_starts.push_back({"dp", *family});
  solver::SolveResult r = solver::synthesize(capped, o);
  REQUIRE(r.schedule);
  CHECK(verify(*r.schedule).empty());
  CHECK(found_by(*r.schedule) == "dp-fitted");

  Problem other = open;
  other.microbatches = 16;
  std::string why;
  CHECK_FALSE(solver::same_shape(family->problem, other, &why));
  CHECK(why == "microbatches 32, not 16");
  solver::SolveOptions o2 = starts_only();
  o2.warm_starts.push_back({"dp", *family});
  solver::SolveResult r2 = solver::synthesize(other, o2);
  REQUIRE(r2.schedule);
  CHECK(found_by(*r2.schedule) == "sequential");
  REQUIRE(r2.warnings.size() == 1);
  CHECK(r2.warnings[0].find("warm start dp is not for this problem (microbatches 32, not 16)") != std::string::npos);

  // The same stage-to-rank map under another placement name is the same shape.
  Problem looped = open;
  looped.directions = 1;
  Problem custom = looped;
  custom.placement = PlacementKind::Custom;
  custom.stage_to_rank = {{0, 1, 2, 3, 4, 5, 6, 7}};
  CHECK(solver::same_shape(looped, custom));
  custom.stage_to_rank = {{1, 0, 2, 3, 4, 5, 6, 7}};
  CHECK_FALSE(solver::same_shape(looped, custom, &why));
  CHECK(why.rfind("placement", 0) == 0);
}
