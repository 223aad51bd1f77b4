// The same problem stated in other units solves to the same verdict and proportional figures:
// every value sits exactly on the problem's tick, so no rounding moves a peak under a cap or a cost
// to zero (issue 29, item 1: memory 1.4e-6 under a cap of 4.3e-6 was solved at a tick of 1e-6,
// claiming a peak of 4e-6 and an optimal 33 where the problem stated in whole units needs 39).

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "ir/problem.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/solve.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// pp 4, 8 microbatches, fused backward, F = 1 and BW = 2, each forward keeping 1.4 until its BW,
// a cap of 4.3 (three forwards in flight): the problem in whole units.
Problem capped() {
  Problem p = test::problem(4, 8, BackwardMode::Fused);
  p.memory.F = PerStage::of(1.4);
  p.memory.cap = PerStage::of(4.3);
  return p;
}

}  // namespace

TEST_CASE("a capped problem stated in micro-units solves as in whole units") {
  const Problem base = capped();
  const solver::SolveResult ref = solver::synthesize(base, test::deterministic(2));
  REQUIRE(ref.schedule.has_value());
  for (const auto& units : {std::pair{1.0, 1e-6}, std::pair{1e-6, 1e-6}, std::pair{1e3, 1e-9}, std::pair{1e-7, 1e5}}) {
    // Plain copies: clang 14 cannot capture a structured binding in CAPTURE's lambda.
    const double tk = units.first, mk = units.second;
    CAPTURE(tk);
    CAPTURE(mk);
    const Problem p = test::scaled(base, tk, mk);
    REQUIRE(validate(p).empty());
    const solver::SolveResult r = solver::synthesize(p, test::deterministic(2));
    REQUIRE(r.schedule.has_value());
    CHECK(r.status == ref.status);
    CHECK(close(r.objective, ref.objective * tk));
    CHECK(close(r.lower_bound, ref.lower_bound * tk));
    // The schedule fits the stated cap, counted exactly, and its peak is the reference's scaled.
    CHECK(verify(*r.schedule).empty());
    const std::vector<double> peaks = peak_memory(*r.schedule);
    for (double peak : peaks) CHECK(peak <= 4.3 * mk);
    // The reference's own orders, restated in these units, keep their makespan and peaks.
    Schedule restated = *ref.schedule;
    restated.problem = p;
    const SimResult sim = simulate(restated);
    REQUIRE(sim.timeline.has_value());
    CHECK(close(sim.timeline->metrics.makespan, ref.objective * tk));
    CHECK(verify(restated).empty());
  }
}

TEST_CASE("a cap a rounded peak would meet stays infeasible in any unit") {
  // A forward of 1.4 under a cap of 1.3 fits in no unit (at a tick of 1e-6 both were one tick in
  // micro-units, and the cap was met).
  Problem p = capped();
  p.memory.cap = PerStage::of(1.3);
  for (double mk : {1.0, 1e-6}) {
    CAPTURE(mk);
    const solver::SolveResult r = solver::synthesize(test::scaled(p, 1, mk), test::deterministic(1));
    CHECK(r.status == solver::SolveStatus::Infeasible);
    CHECK_FALSE(r.schedule.has_value());
  }
}
