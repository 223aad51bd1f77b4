// The lower bound is a proof: never above the objective of any valid schedule, over problems drawn
// from the whole model (every placement, vpp up to 4, both directions, fused / split / mixed
// backward, per-stage costs from 1e-6 to 1e6, comm 0 or not, FB below and above the sums, per-rank
// caps, both objectives), against random orders with random overlapped F&B units and against every
// family (dualpipe and dualpipev emit overlapped units). Values compare exactly: the bound and the
// metrics are both fixed-point ticks divided by the same scale.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

std::string describe(const Schedule& s) {
  const Problem& p = s.problem;
  std::string out = "pp " + std::to_string(p.ranks) + ", vpp " + std::to_string(p.stages_per_rank) + ", m " +
                    std::to_string(p.microbatches) + ", " + std::string(to_string(p.placement)) + ", " +
                    std::string(direction_name(p.directions)) + ", " + std::string(to_string(p.backward)) + ", " +
                    std::string(to_string(p.objective)) + ", F " + std::to_string(p.cost.F.at(0)) + " B " +
                    std::to_string(p.cost.B.at(0)) + " W " + std::to_string(p.cost.W.at(0)) + " comm " +
                    std::to_string(p.cost.comm);
  if (p.cost.FB) out += " FB " + std::to_string(p.cost.FB->at(0));
  if (p.cost.has_overheads())
    out += " overheads " + std::to_string(p.cost.action_overhead) + " " + std::to_string(p.cost.message_overhead);
  size_t units = 0;
  for (const auto& u : s.overlap) units += u.size();
  return out + ", " + std::to_string(units) + " overlapped units";
}

}  // namespace

namespace {

// Random valid orders with random overlapped units on random problems of the whole model (with
// random action and message overheads when `overheads`), capped at their peaks two times in three:
// none beats the bound.
void check_random_orders(uint32_t seed, int trials, bool overheads, bool recompute = false) {
  test::Rng rng(seed);
  int units = 0, capped = 0, with_fb = 0;
  for (int trial = 0; trial < trials; ++trial) {
    Problem p = test::random_wide_problem(rng, {trial % 3 == 0 ? 1 : 3, 6, 4});
    if (overheads) test::add_random_overheads(p, rng);
    if (recompute) test::add_random_recompute(p, rng);
    REQUIRE(validate(p).empty());
    Schedule s = test::random_valid_paired(p, rng);
    int marked = test::add_random_overlap(s, rng, 80);
    units += marked;
    if (marked > 0 && p.cost.FB) ++with_fb;
    if (test::uniform(rng, 0, 2) != 0) {
      test::cap_at_peaks(s, rng);
      ++capped;
    }
    REQUIRE(validate(s.problem).empty());
    REQUIRE(verify(s).empty());
    double obj = test::objective_of(s);
    LowerBound lb = lower_bound(s.problem);
    INFO("trial " << trial << " (" << describe(s) << "): bound " << lb.value << " from " << lb.reason << ", schedule "
                  << obj);
    CHECK(lb.value <= obj);
  }
  CHECK(units > 2 * trials);
  CHECK(capped > trials / 2);
  CHECK(with_fb > trials / 2);
}

}  // namespace

TEST_CASE("no valid schedule with overlapped units beats the lower bound (whole model)") {
  check_random_orders(1010, 2000, false);
}

TEST_CASE("no valid schedule beats the lower bound under action and message overheads") {
  check_random_orders(2026, 1000, true);
}

TEST_CASE("no valid schedule with recomputation beats the lower bound (`allowed` and `all`)") {
  check_random_orders(1414, 1000, false, true);
}

TEST_CASE("no family schedule beats the lower bound (whole model)") {
  test::Rng rng(77);
  int generated = 0;
  for (const solver::FamilyInfo& f : solver::families()) {
    int made = 0;
    for (int trial = 0; trial < 24; ++trial) {
      Problem p;
      p.ranks = 2 * test::uniform(rng, 1, 3);
      p.microbatches = 2 * p.ranks + 2 * test::uniform(rng, 0, 2);
      solver::apply_family_defaults(f, {}, p);
      if (f.stages_per_rank == 0) p.stages_per_rank = test::uniform(rng, 2, 4);
      if (f.backward != BackwardMode::Fused)
        p.backward = test::uniform(rng, 0, 1) ? BackwardMode::Split : BackwardMode::Mixed;
      // Costs, FB and memory from a wide problem of the same size.
      Problem q = test::random_wide_problem(rng, {1, 1, 1});
      auto fit = [&](const PerStage& v) {
        if (v.is_uniform()) return v;
        std::vector<double> out;
        for (int s = 0; s < p.num_stages(); ++s) out.push_back(v.values[static_cast<size_t>(s) % v.values.size()]);
        return PerStage::list(out);
      };
      p.cost.F = fit(q.cost.F);
      p.cost.B = fit(q.cost.B);
      p.cost.W = fit(q.cost.W);
      p.cost.comm = q.cost.comm;
      if (q.cost.FB) p.cost.FB = fit(*q.cost.FB);
      if (trial % 4 == 3) test::add_random_overheads(p, rng);
      if (test::uniform(rng, 0, 2) == 0) {
        // The published DualPipe setting: F = B = W, FB a little above F + B.
        p.cost.F = p.cost.B = p.cost.W = PerStage::of(1);
        static const double fbs[] = {1.5, 2.2, 2.6};
        p.cost.FB = PerStage::of(fbs[test::uniform(rng, 0, 2)]);
      }
      p.objective = test::uniform(rng, 0, 3) == 0 ? Objective::MaxSpan : Objective::Makespan;
      REQUIRE(validate(p).empty());
      Diagnostics diags;
      auto s = solver::generate_family(f.name, p, {}, SourceLoc{}, diags);
      if (!s) continue;
      ++made;
      REQUIRE(verify(*s).empty());
      for (int capped = 0; capped < 2; ++capped) {
        if (capped) test::cap_at_peaks(*s, rng);
        double obj = test::objective_of(*s);
        LowerBound lb = lower_bound(s->problem);
        INFO(f.name << " trial " << trial << " (" << describe(*s) << std::string(capped ? ", capped" : "")
                    << "): bound " << lb.value << " from " << lb.reason << ", schedule " << obj);
        CHECK(lb.value <= obj);
      }
    }
    INFO(f.name);
    CHECK(made > 0);
    generated += made;
  }
  CHECK(generated > 150);
}
