// k directions (issue 14, part 1): the placement of every direction (pairs, the second mirrored,
// pair j rotated by j*pp/ceil(k/2) ranks), the even split of microbatches, validation, and the
// schedule JSON's version 4. The verifier, the simulator and the bound meet k = 3 and 4 in the
// random problems of tests/common/random_schedule.h.

#include <doctest/doctest.h>

#include <set>

#include "ir/json_io.h"
#include "ir/problem.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/explain.h"
#include "solver/synth/synthesize.h"
#include "support/diagnostics.h"
#include "tests/common/builders.h"
#include "tests/common/json_versions.h"
#include "tests/common/solve.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

Problem directions_problem(int pp, int m, int k) {
  Problem p;
  p.ranks = pp;
  p.microbatches = m;
  p.directions = k;
  p.backward = BackwardMode::Fused;
  return p;
}

// Chimera's setting: a forward as long as the whole backward (F = 1, B + W = 2).
void chimera_costs(Problem& p) {
  p.cost.F = PerStage::of(1);
  p.cost.B = PerStage::of(2);
  p.cost.W = PerStage::of(0);
}

}  // namespace

TEST_CASE("k directions: pairs of mirrored pipelines, each pair rotated; two are Chimera's mirror") {
  Problem p = directions_problem(4, 8, 4);
  // Direction 0: stage s on rank s; 1 mirrors it; 2 rotates by pp/2; 3 mirrors 2.
  const int expected[4][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 3, 0, 1}, {1, 0, 3, 2}};
  for (int d = 0; d < 4; ++d)
    for (int s = 0; s < 4; ++s) {
      CAPTURE(d);
      CAPTURE(s);
      CHECK(p.rank_of(d, StageId(s)).value == expected[d][s]);
    }
  // Every rank holds one stage of each of the four pipelines, a different one each.
  for (int r = 0; r < 4; ++r) {
    std::set<int> held;
    for (int d = 0; d < 4; ++d)
      for (int s = 0; s < 4; ++s)
        if (p.rank_of(d, StageId(s)).value == r) held.insert(s);
    CHECK(held.size() == 4);
  }
  Problem two = directions_problem(4, 8, 2);
  for (int s = 0; s < 4; ++s) CHECK(two.rank_of(1, StageId(s)).value == 3 - s);
}

TEST_CASE("k directions: base_rank inverts direction_rank for every placement, k and direction") {
  for (int pp : {1, 2, 3, 4, 5, 8})
    for (int k = 1; k <= 8; ++k) {
      Problem p = directions_problem(pp, 8 * k, k);
      for (int d = 0; d < k; ++d)
        for (int r = 0; r < pp; ++r) {
          CAPTURE(pp);
          CAPTURE(k);
          CAPTURE(d);
          const int to = p.direction_rank(d, r);
          CHECK(to >= 0);
          CHECK(to < pp);
          CHECK(p.base_rank(d, to) == r);
        }
    }
}

TEST_CASE("k directions: an equal share of microbatches each, in order") {
  Problem p = directions_problem(4, 12, 3);
  for (int mb = 0; mb < 12; ++mb) CHECK(p.direction_of(MbId(mb)) == mb / 4);
  for (int d = 0; d < 3; ++d) CHECK(p.first_microbatch(d) == 4 * d);
  CHECK(validate(p).empty());
  p.microbatches = 10;
  auto errors = validate(p);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == Field::Microbatches);
  CHECK(errors[0].message.find("`directions` = 3 needs a number of microbatches divisible by 3") != std::string::npos);
  p.directions = 0;
  errors = validate(p);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].kind == DiagKind::OutOfRange);
  CHECK(errors[0].message == "`directions` must be in 1..64, got `0`");
  p.directions = 2;
  p.microbatches = 7;
  errors = validate(p);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("direction `bidirectional` needs an even number") != std::string::npos);
}

TEST_CASE("k directions: a replica per direction, its static memory counted on its rank") {
  Problem p = directions_problem(4, 8, 4);
  p.memory.static_memory = PerStage::list({1, 2, 3, 4});
  // Every rank holds each stage once (the four pipelines place it on four ranks).
  for (int r = 0; r < 4; ++r) CHECK(p.static_of(RankId(r)) == 10);
  Problem eight = directions_problem(4, 8, 8);
  eight.memory.static_memory = PerStage::of(1);
  for (int r = 0; r < 4; ++r) CHECK(eight.static_of(RankId(r)) == 8);
}

TEST_CASE("k directions: the sequential schedule verifies and simulates; an action off its direction's rank does not") {
  for (int k : {3, 4}) {
    CAPTURE(k);
    Problem p = directions_problem(4, 4 * k, k);
    p.backward = BackwardMode::Split;
    Schedule s = solver::sequential_schedule(p);
    CHECK(verify(s).empty());
    auto sim = simulate(s);
    REQUIRE(sim.timeline);
    // Move one action of direction 2 to the next rank: the verifier names the rank its direction needs.
    Schedule bad = s;
    auto& r0 = bad.ranks[0];
    auto it = std::find_if(r0.begin(), r0.end(), [&](Action a) { return p.direction_of(a.mb) == 2; });
    REQUIRE(it != r0.end());
    Action moved = *it;
    REQUIRE(p.rank_of(moved.mb, moved.stage).value == 0);
    r0.erase(it);
    bad.ranks[1].push_back(moved);
    auto errors = verify(bad);
    REQUIRE_FALSE(errors.empty());
    const std::string expected = " is on rank 1, but stage " + std::to_string(moved.stage.value) +
                                 " (direction 2) belongs to rank 0";
    CHECK(std::any_of(errors.begin(), errors.end(),
                      [&](const auto& e) { return e.message.find(expected) != std::string::npos; }));
  }
}

TEST_CASE("k directions: written as version 4 (`directions`), read back; older versions refuse the key") {
  Problem p = directions_problem(2, 8, 4);
  p.backward = BackwardMode::Split;
  Schedule s = solver::sequential_schedule(p);
  std::string text = test::check_version_gate(
      s, 4, "`directions` needs version 4 of the format, the document says version 3");
  CHECK(text.find("\"directions\": 4") != std::string::npos);
  CHECK(text.find("\"direction\":") == std::string::npos);
  // Up to two directions keep the names, in the lowest version.
  Problem two = directions_problem(2, 4, 2);
  two.backward = BackwardMode::Split;
  std::string bi = write_schedule_json(solver::sequential_schedule(two), nullptr);
  CHECK(bi.find("\"version\": 1,") != std::string::npos);
  CHECK(bi.find("\"direction\": \"bidirectional\"") != std::string::npos);
}

TEST_CASE("k directions: Chimera generalised (family `chimera`), and the solver at or below it") {
  for (int k : {3, 4}) {
    CAPTURE(k);
    Problem p = directions_problem(4, 4 * k, k);
    chimera_costs(p);
    Diagnostics diags;
    auto chimera = solver::generate_family("chimera", p, {}, SourceLoc{}, diags);
    REQUIRE_MESSAGE(chimera, diags.str());
    CHECK(verify(*chimera).empty());
    // Each rank runs one stage of each of the k pipelines: k m/k = m forwards per rank.
    for (const auto& order : chimera->ranks) CHECK(order.size() == 2 * static_cast<size_t>(p.microbatches));
    const double family = simulate(*chimera).timeline->metrics.makespan;
    // At most the sequential time of one rank's work plus the fill of one pipeline: far below
    // running the k pipelines one after the other.
    const double per_rank = 3.0 * p.microbatches;
    CHECK(family < per_rank + 3.0 * (p.ranks - 1) + 1e-9);
    solver::SolveResult r = solver::synthesize(p, test::deterministic(2));
    REQUIRE(r.schedule);
    CHECK(verify(*r.schedule).empty());
    CHECK(r.objective <= family + 1e-9);
    CHECK(r.lower_bound <= r.objective + 1e-9);
    CHECK(r.lower_bound >= per_rank - 1e-9);  // every rank's own work
    CHECK(r.bound_error.empty());
  }
  // A number of microbatches the directions do not divide is the family's constraint.
  Problem odd = directions_problem(4, 10, 4);
  Diagnostics diags;
  CHECK_FALSE(solver::generate_family("chimera", odd, {}, SourceLoc{}, diags));
  CHECK(diags.str().find("divisible by the 4 directions") != std::string::npos);
}

TEST_CASE("k directions: a stated split of the microbatches (`directions = [6, 2]`)") {
  Problem p = directions_problem(4, 8, 2);
  p.direction_microbatches = {6, 2};
  CHECK(validate(p).empty());
  for (int mb = 0; mb < 8; ++mb) CHECK(p.direction_of(MbId(mb)) == (mb < 6 ? 0 : 1));
  CHECK(p.first_microbatch(0) == 0);
  CHECK(p.first_microbatch(1) == 6);
  CHECK(p.microbatches_of(0) == 6);
  CHECK(p.microbatches_of(1) == 2);
  // The even rule's constraint (m even for two) gives way to the stated counts.
  Problem odd = directions_problem(4, 7, 3);
  odd.direction_microbatches = {3, 2, 2};
  CHECK(validate(odd).empty());
  CHECK(odd.direction_of(MbId(4)) == 1);
  CHECK(odd.direction_of(MbId(5)) == 2);
  // One count per direction, each at least 1, summing to m.
  Problem wrong = odd;
  wrong.direction_microbatches = {3, 4};
  auto errors = validate(wrong);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == Field::Direction);
  wrong.direction_microbatches = {3, 4, 1};
  errors = validate(wrong);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("sum to `microbatches` = 7, got a sum of 8") != std::string::npos);
  wrong.direction_microbatches = {7, 0, 0};
  CHECK(validate(wrong).size() == 1);

  // Chimera takes it (each direction's own 1F1B over its own microbatches); the solver too.
  chimera_costs(p);
  Diagnostics diags;
  auto chimera = solver::generate_family("chimera", odd, {}, SourceLoc{}, diags);
  REQUIRE_MESSAGE(chimera, diags.str());
  CHECK(verify(*chimera).empty());
  auto two = solver::generate_family("chimera", p, {}, SourceLoc{}, diags);
  REQUIRE_MESSAGE(two, diags.str());
  CHECK(verify(*two).empty());
  solver::SolveResult r = solver::synthesize(p, test::deterministic(2));
  REQUIRE(r.schedule);
  CHECK(verify(*r.schedule).empty());
  CHECK(r.objective <= simulate(*two).timeline->metrics.makespan + 1e-9);
  CHECK(r.lower_bound <= r.objective + 1e-9);
  // A family built for the even split says so.
  Problem dual = directions_problem(4, 8, 2);
  dual.backward = BackwardMode::Mixed;
  dual.direction_microbatches = {6, 2};
  Diagnostics dd;
  CHECK_FALSE(solver::generate_family("dualpipe", dual, {}, SourceLoc{}, dd));
  CHECK(dd.str().find("the even split of microbatches between its directions") != std::string::npos);

  // Written as version 4 with the counts, read back.
  Schedule s = solver::sequential_schedule(p);
  std::string text = test::check_version_gate(
      s, 4, "`direction_microbatches` needs version 4 of the format, the document says version 3");
  CHECK(text.find("\"direction\": \"bidirectional\", \"direction_microbatches\": [6, 2]") != std::string::npos);
}
