// The lower bound is never above any valid schedule (random problems, costs, caps, placements,
// directions, backward modes, both objectives), and it is tight where the literature says so.

#include <doctest/doctest.h>

#include <algorithm>

#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

TEST_CASE("no valid schedule beats the lower bound") {
  test::Rng rng(2024);
  int with_cap = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    if (test::uniform(rng, 0, 3) == 0) p.objective = Objective::MaxSpan;
    Schedule s = test::random_valid(p, rng);
    // A cap at the schedule's own peak (or above) keeps it valid and makes the memory terms bind.
    if (test::uniform(rng, 0, 1)) {
      auto peaks = peak_memory(s);
      s.problem.memory.cap = PerStage::of(*std::max_element(peaks.begin(), peaks.end()) + 0.5 * test::uniform(rng, 0, 1));
      ++with_cap;
    }
    REQUIRE(verify(s).empty());
    Metrics m = simulate(s).timeline->metrics;
    LowerBound lb = lower_bound(s.problem);
    INFO("trial " << trial << ": bound " << lb.value << " from " << lb.reason);
    CHECK(lb.value <= m.objective_value(s.problem.objective) + 1e-9);
  }
  CHECK(with_cap > 500);
}

TEST_CASE("the bound proves ZB-H1 optimal under a cap of pp (Zero Bubble appendix B)") {
  for (int pp : {4, 8, 16})
    for (int m : {2 * pp, 4 * pp}) {
      Problem p;
      p.ranks = pp;
      p.microbatches = m;
      p.backward = BackwardMode::Split;
      p.memory.cap = PerStage::of(pp);
      p.cost.F = PerStage::of(2);
      p.cost.B = PerStage::of(2);
      p.cost.W = PerStage::of(1);
      // ZB-H1: m (F + B + W) + (p - 1)(F + B - W).
      double zb_h1 = m * 5.0 + (pp - 1) * 3.0;
      CAPTURE(pp);
      CAPTURE(m);
      CHECK(lower_bound(p).value == zb_h1);
    }
}
