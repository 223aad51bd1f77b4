// Re-deriving optimality claims (`schedc verify --optimal`): by the bound, by an exact Z3 probe one
// grid step below the objective, and never "holds" for a schedule that can be beaten.

#include <doctest/doctest.h>

#include "ir/problem.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/prove.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"

using namespace schedc;
using namespace schedc::ir;
using solver::ProofArgument;
using solver::ProofVerdict;

namespace {

// 3 ranks, 6 microbatches, F = B = 2, W = 1, comm 0.5, cap 4: the bound says 35, the optimum is
// 36, and only the exact model shows it.
Problem gap_problem() {
  Problem p = test::problem(3, 6, BackwardMode::Split, 2, 2, 1);
  p.cost.comm = 0.5;
  p.memory.cap = PerStage::of(4);
  return p;
}

Schedule family(const char* name, const Problem& p) {
  Diagnostics diags;
  auto s = solver::generate_family(name, p, {}, SourceLoc{}, diags);
  REQUIRE(s);
  REQUIRE(verify(*s).empty());
  return *s;
}

}  // namespace

TEST_CASE("ZB-H1 under a cap of pp holds by the bound") {
  Problem p = test::problem(4, 8, BackwardMode::Split, 2, 2, 1);
  p.memory.cap = PerStage::of(4);
  solver::ProofCheck r = solver::prove_optimal(family("zb-h1", p), {});
  CHECK(r.verdict == ProofVerdict::Holds);
  CHECK(r.argument == ProofArgument::Bound);
  CHECK(r.objective == 49);
  CHECK(r.message.find("equals the makespan 49") != std::string::npos);
}

TEST_CASE("an optimum above the bound holds by the exact model, and only by it") {
  Problem p = gap_problem();
  solver::SolveOptions so;
  so.deterministic = true;
  so.threads = 1;
  so.time_limit_s = 10;
  solver::SolveResult solved = solver::synthesize(p, so);
  REQUIRE(solved.status == solver::SolveStatus::Optimal);
  REQUIRE(solved.objective == 36);
  solver::ProofCheck r = solver::prove_optimal(*solved.schedule, {});
  CHECK(r.verdict == ProofVerdict::Holds);
  CHECK(r.argument == ProofArgument::ExactModel);
  CHECK(r.bound < 36);
  CHECK(r.message == "Z3 shows no schedule finishes by 35.5 (exact grid 0.5)");

  solver::ProveOptions bound_only;
  bound_only.use_z3 = false;
  CHECK(solver::prove_optimal(*solved.schedule, bound_only).verdict == ProofVerdict::Unknown);
}

TEST_CASE("a schedule that can be beaten is refuted with a better one") {
  Problem p = gap_problem();
  Schedule s = family("1f1b", p);
  double makespan = simulate(s).timeline->metrics.makespan;
  solver::ProofCheck r = solver::prove_optimal(s, {});
  CHECK(r.verdict == ProofVerdict::Refuted);
  CHECK(r.argument == ProofArgument::ExactModel);
  CHECK(r.objective == makespan);
  CHECK(r.message.find("Z3 found a valid schedule with makespan") != std::string::npos);
}

TEST_CASE("an invalid schedule is refuted") {
  Problem p = gap_problem();
  Schedule s = family("1f1b", p);
  std::swap(s.ranks[0][0], s.ranks[0].back());
  CHECK(solver::prove_optimal(s, {}).verdict == ProofVerdict::Refuted);
}

TEST_CASE("the exact model covers only what it models") {
  std::string why;
  Problem p = gap_problem();
  CHECK(solver::exact_model_complete(p, &why));

  Problem fb = p;
  fb.cost.FB = PerStage::of(3);
  CHECK_FALSE(solver::exact_model_complete(fb, &why));

  Problem span = p;
  span.objective = Objective::MaxSpan;
  CHECK_FALSE(solver::exact_model_complete(span, &why));

  Problem mixed = p;
  mixed.backward = BackwardMode::Mixed;
  CHECK(solver::exact_model_complete(mixed, &why));
  mixed.memory.B = PerStage::of(0.5);
  mixed.memory.W = PerStage::of(-1.5);
  CHECK_FALSE(solver::exact_model_complete(mixed, &why));

  // A cost no tick holds (validate() refuses it) is timed at the finest tick rounded: F + B could
  // be a tick less than F's and B's ticks, and an overlapped unit beat the model. (1.0000006, the
  // case that once did at a finest tick of 1e-6, is exact at 1e-7 now.)
  Problem subtick = p;
  subtick.cost.F = PerStage::of(1.0000006);
  subtick.cost.B = PerStage::of(1.0000006);
  CHECK(solver::exact_model_complete(subtick, &why));
  subtick.cost.F = PerStage::of(0.12345678901234567);
  subtick.cost.B = PerStage::of(0.12345678901234567);
  CHECK_FALSE(validate(subtick).empty());
  CHECK_FALSE(solver::exact_model_complete(subtick, &why));
  CHECK(why.find("whole number of ticks") != std::string::npos);

  // Without the exact model, a schedule above the bound cannot be re-derived.
  Schedule s = family("1f1b", fb);
  CHECK(solver::prove_optimal(s, {}).verdict == ProofVerdict::Unknown);
}
