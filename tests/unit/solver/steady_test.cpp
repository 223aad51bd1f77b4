// Steady-state decomposition (solver/synth/steady.h): relabeling microbatches in order keeps a
// schedule valid and no slower, and repeating the middle block of a steady schedule reaches more
// microbatches with the same per-microbatch rate.

#include <doctest/doctest.h>

#include <map>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/steady.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

double makespan(const Schedule& s) { return simulate(s).timeline->metrics.makespan; }

Schedule family(const char* name, const Problem& p) {
  Diagnostics d;
  auto s = solver::generate_family(name, p, {}, SourceLoc{}, d);
  REQUIRE(s.has_value());
  return *s;
}

}  // namespace

TEST_CASE("relabeling microbatches in order keeps a schedule valid and no slower") {
  test::Rng rng(404);
  int relabeled = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    if (p.directions != 1 || p.backward == BackwardMode::Mixed) continue;
    Schedule s = test::random_valid(p, rng);
    Schedule t = solver::in_microbatch_order(s);
    INFO("trial " << trial);
    REQUIRE(verify(t).empty());
    CHECK(makespan(t) <= makespan(s) + 1e-9);
    relabeled += t.ranks != s.ranks;
    // In order on every stage: the k-th action of a kind on a stage is microbatch k.
    for (const auto& order : t.ranks) {
      std::map<std::pair<int, int>, int> next;
      for (const Action& a : order) CHECK(a.mb.value == next[{static_cast<int>(a.kind), a.stage.value}]++);
    }
  }
  CHECK(relabeled > 50);  // random orders are rarely in order already
}

TEST_CASE("repeating the steady block of a family reaches the family at more microbatches") {
  // 1F1B and ZB-H1 repeat every microbatch, interleaved 1F1B every pp microbatches (its steady
  // state needs more than two groups of pp); the extension must be valid and as fast as the
  // family's own at 24 or 32 microbatches.
  struct Case {
    const char* family;
    int vpp, period, m;
  };
  for (Case c : {Case{"1f1b", 1, 1, 8}, Case{"zb-h1", 1, 1, 8}, Case{"interleaved-1f1b", 2, 4, 16}}) {
    Problem small = test::problem(4, c.m, std::string(c.family) == "zb-h1" ? BackwardMode::Split : BackwardMode::Fused);
    small.stages_per_rank = c.vpp;
    small.cost.comm = 0.1;
    Problem big = small;
    big.microbatches = c.m + 16;
    INFO(std::string(c.family));
    auto ext = solver::extend_periodic(family(c.family, small), big, c.period);
    REQUIRE(ext.has_value());
    REQUIRE(verify(*ext).empty());
    CHECK(makespan(*ext) == doctest::Approx(makespan(family(c.family, big))));
    // Counts that do not divide into whole blocks are refused.
    big.microbatches = c.m + 15;
    if (c.period > 1) CHECK_FALSE(solver::extend_periodic(family(c.family, small), big, c.period).has_value());
  }
}
