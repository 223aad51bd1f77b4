// The solver with recomputation: under a cap that leaves room for one full microbatch and the
// kept inputs of others, checkpointing wins over any schedule without it; `all` recomputes every
// forward; the bound is the problem's own and never above the result; nothing is checkpointed
// that need not be when the cap is loose; deterministic mode repeats itself.

#include <doctest/doctest.h>

#include <algorithm>

#include "ir/json_io.h"
#include "ir/lower_bound.h"
#include "ir/verify.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/solve.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// pp 4, m 8, split, F = B = W = 1, R = 1; a forward adds 1, of which a checkpointed one keeps
// 0.25; B and W free half each.
Problem problem(Recompute mode, double cap) {
  Problem p = test::problem(4, 8, BackwardMode::Split);
  test::set_memory(p, 1, -0.5, -0.5);
  p.recompute = mode;
  if (mode != Recompute::Off) p.memory.input = PerStage::of(0.25);
  if (cap > 0) p.memory.cap = PerStage::of(cap);
  return p;
}

int count_r(const Schedule& s) {
  int n = 0;
  for (const auto& order : s.ranks)
    n += static_cast<int>(std::count_if(order.begin(), order.end(), [](Action a) { return a.kind == ActionKind::R; }));
  return n;
}

}  // namespace

TEST_CASE("under a cap of one forward and three kept inputs, recomputation beats every schedule without it") {
  // 1.75 holds one whole forward (1) and never two: without recomputation a rank runs one
  // microbatch at a time; with it, three more wait as kept inputs (0.25 each).
  auto off = solver::synthesize(problem(Recompute::Off, 1.75), test::deterministic(2));
  auto on = solver::synthesize(problem(Recompute::Allowed, 1.75), test::deterministic(2));
  REQUIRE(off.schedule);
  REQUIRE(on.schedule);
  CHECK(verify(*on.schedule).empty());
  CHECK(on.bound_error.empty());
  CHECK(count_r(*on.schedule) > 0);
  INFO("without " << off.objective << ", with " << on.objective);
  CHECK(on.objective < 0.8 * off.objective);
  // The claim is about this problem: its own bound, never above the schedule.
  CHECK(on.lower_bound <= on.objective);
  CHECK(on.lower_bound == doctest::Approx(lower_bound(problem(Recompute::Allowed, 1.75)).value));
  REQUIRE(on.schedule->provenance);
  REQUIRE(on.schedule->provenance->solve);
  CHECK(on.schedule->provenance->solve->found_by.find("checkpointed") != std::string::npos);
}

TEST_CASE("`all` recomputes every forward, and its bound counts the recomputations") {
  Problem p = problem(Recompute::All, 0);
  auto r = solver::synthesize(p, test::deterministic(2));
  REQUIRE(r.schedule);
  CHECK(verify(*r.schedule).empty());
  CHECK(count_r(*r.schedule) == p.microbatches * p.num_stages());
  // Each rank runs 8 x (F + B + W + R) = 32: the bound says at least that.
  CHECK(r.lower_bound >= 32);
  CHECK(r.lower_bound <= r.objective);
  CHECK(r.lower_bound > lower_bound(problem(Recompute::Off, 0)).value);
}

TEST_CASE("with a loose cap nothing is checkpointed, and the result is the solve without recomputation") {
  auto off = solver::synthesize(problem(Recompute::Off, 0), test::deterministic(1));
  auto on = solver::synthesize(problem(Recompute::Allowed, 0), test::deterministic(1));
  REQUIRE(on.schedule);
  CHECK(count_r(*on.schedule) == 0);
  CHECK(on.objective == off.objective);
  CHECK(on.status == solver::SolveStatus::Optimal);
}

TEST_CASE("deterministic mode gives the same schedule twice") {
  Problem p = problem(Recompute::Allowed, 1.5);
  auto a = solver::synthesize(p, test::deterministic(1));
  auto b = solver::synthesize(p, test::deterministic(1));
  REQUIRE(a.schedule);
  REQUIRE(b.schedule);
  CHECK(write_schedule_json(*a.schedule, nullptr) == write_schedule_json(*b.schedule, nullptr));
}

TEST_CASE("a cap below one whole forward: no schedule, and no false claim of infeasibility") {
  auto r = solver::synthesize(problem(Recompute::Allowed, 0.9), test::deterministic(1));
  CHECK_FALSE(r.schedule);
  CHECK(r.status == solver::SolveStatus::Infeasible);
  REQUIRE(r.infeasible);
  CHECK(r.infeasible->explanation.find("not provably infeasible") != std::string::npos);
}
