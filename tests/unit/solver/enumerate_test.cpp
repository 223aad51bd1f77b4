// Small problems solved by exhaustive enumeration of every combination of per-rank orders: the
// synthesizer must prove exactly the enumerated optimum (which also checks that symmetry breaking,
// memory edges and the lower bound never cut off the optimum).

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/enumerate.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

Problem base(int pp, int m, BackwardMode b) {
  Problem p = test::problem(pp, m, b);
  return p;
}

void check_against_enumeration(const Problem& p) {
  double expected = test::brute_force(p);
  solver::SolveOptions o;
  o.time_limit_s = 20;
  o.deterministic = true;
  if (!std::isfinite(expected)) {  // no order meets the cap: the solver must say so
    CHECK(solver::synthesize(p, o).status == solver::SolveStatus::Infeasible);
    return;
  }
  double lb = lower_bound(p).value;
  CHECK(lb <= expected + 1e-9);
  solver::SolveResult r = solver::synthesize(p, o);
  REQUIRE(r.schedule.has_value());
  CHECK(r.objective == doctest::Approx(expected));
  if (p.objective == Objective::Makespan) CHECK(r.status == solver::SolveStatus::Optimal);
  CHECK(r.lower_bound <= expected + 1e-9);
}

}  // namespace

TEST_CASE("enumeration: split, one stage per rank, caps and comm") {
  for (int pp : {2, 3})
    for (double comm : {0.0, 1.0, 0.5})
      for (double cap : {0.0, 1.0, 1.5, 2.0}) {
        Problem p = base(pp, 2, BackwardMode::Split);
        p.cost.F = PerStage::of(2);
        p.cost.B = PerStage::of(2);
        p.cost.W = PerStage::of(1);
        p.cost.comm = comm;
        if (cap > 0) p.memory.cap = PerStage::of(cap);
        CAPTURE(pp);
        CAPTURE(comm);
        CAPTURE(cap);
        check_against_enumeration(p);
      }
}

TEST_CASE("enumeration: fused, uneven stages") {
  Problem p = base(2, 3, BackwardMode::Fused);
  p.cost.F = PerStage::list({1, 2});
  p.cost.B = PerStage::list({2, 3});
  p.cost.W = PerStage::of(0.5);
  check_against_enumeration(p);
  p.memory.cap = PerStage::of(2);
  check_against_enumeration(p);
}

TEST_CASE("enumeration: vshape and bidirectional") {
  Problem v = base(2, 1, BackwardMode::Split);
  v.stages_per_rank = 2;
  v.placement = PlacementKind::VShape;
  v.cost.comm = 1;
  check_against_enumeration(v);
  v.memory.cap = PerStage::of(1.5);  // one microbatch needs 2 on each rank: infeasible
  check_against_enumeration(v);
  v.memory.cap = PerStage::of(2);
  check_against_enumeration(v);

  Problem b = base(2, 2, BackwardMode::Split);
  b.directions = 2;
  b.cost.W = PerStage::of(2);
  check_against_enumeration(b);
  b.memory.cap = PerStage::of(1.5);
  check_against_enumeration(b);
}

TEST_CASE("enumeration: the max-span objective") {
  Problem p = base(3, 2, BackwardMode::Split);
  p.objective = Objective::MaxSpan;
  p.cost.comm = 1;
  check_against_enumeration(p);
}

TEST_CASE("enumeration: action and message overheads") {
  for (BackwardMode b : {BackwardMode::Split, BackwardMode::Fused})
    for (double cap : {0.0, 1.5}) {
      Problem p = base(3, 2, b);
      p.cost.F = PerStage::of(2);
      p.cost.B = PerStage::of(2);
      p.cost.comm = 0.5;
      p.cost.action_overhead = 0.5;
      p.cost.message_overhead = 0.25;
      if (cap > 0) p.memory.cap = PerStage::of(cap);
      CAPTURE(static_cast<int>(b));
      CAPTURE(cap);
      check_against_enumeration(p);
    }
  // Two stages per rank: every boundary crosses ranks, and each action pays for it.
  Problem v = base(2, 1, BackwardMode::Split);
  v.stages_per_rank = 2;
  v.cost.action_overhead = 1;
  v.cost.message_overhead = 0.5;
  check_against_enumeration(v);
}
