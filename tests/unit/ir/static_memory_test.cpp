// `memory.static`: what each stage holds for the whole step counts against the cap of every rank
// that holds the stage; schedules see the cap less it, reports show the device's total.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "ir/json_io.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "support/diagnostics.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

Problem base(int pp, int vpp, int32_t dir) {
  Problem p;
  p.ranks = pp;
  p.stages_per_rank = vpp;
  p.microbatches = 8;
  p.directions = dir;
  p.backward = BackwardMode::Split;
  return p;
}

}  // namespace

TEST_CASE("static memory: per rank, every stage it holds, once per direction") {
  Problem p = base(4, 2, 1);
  p.memory.static_memory = PerStage::list({1, 2, 3, 4, 10, 20, 30, 40});  // looped: rank r holds r and r + 4
  CHECK(p.static_of(RankId(0)) == 11);
  CHECK(p.static_of(RankId(3)) == 44);
  CHECK(!p.cap_of(RankId(0)));
  p.memory.cap = PerStage::of(50);
  CHECK(*p.cap_of(RankId(0)) == 39);
  CHECK(*p.stated_cap_of(RankId(0)) == 50);
  CHECK(*p.cap_of(RankId(3)) == 6);

  Problem bi = base(4, 1, 2);
  bi.memory.static_memory = PerStage::list({1, 2, 3, 4});  // rank r holds stage r and its mirror 3 - r
  CHECK(bi.static_of(RankId(0)) == 5);
  CHECK(bi.static_of(RankId(1)) == 5);

  Problem none = base(4, 1, 1);
  CHECK(!none.has_static_memory());
  CHECK(none.static_of(RankId(2)) == 0);
}

TEST_CASE("static memory: validated, reported beside the activations, checked against the stated cap") {
  Problem p = base(4, 1, 1);
  p.memory.static_memory = PerStage::of(2.5);
  p.memory.cap = PerStage::of(2);
  auto errors = validate(p);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == ir::Field::MemoryStatic);
  CHECK(errors[0].kind == DiagKind::CapInfeasible);
  p.memory.static_memory = PerStage::of(-1);
  REQUIRE(!validate(p).empty());
  CHECK(validate(p)[0].kind == DiagKind::OutOfRange);
  p.memory.static_memory = PerStage::list({1, 1});
  REQUIRE(!validate(p).empty());
  CHECK(validate(p)[0].kind == DiagKind::BadValue);

  // Random valid orders: the reported peak is the activations' plus the static memory.
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    Problem q = base(4, 1, 1);
    q.memory.static_memory = PerStage::of(0.5 * static_cast<double>(round % 5));
    Schedule s = test::random_valid(q, rng);
    std::vector<double> activations = peak_memory(s);
    SimResult sim = simulate(s);
    REQUIRE(sim.timeline);
    for (size_t r = 0; r < activations.size(); ++r)
      CHECK(sim.timeline->metrics.peak_memory[r] == activations[r] + q.static_of(RankId(static_cast<int32_t>(r))));
    // The cap holds exactly when the device total fits the stated cap.
    double top = *std::max_element(sim.timeline->metrics.peak_memory.begin(), sim.timeline->metrics.peak_memory.end());
    q.memory.cap = PerStage::of(top);
    s.problem = q;
    CHECK(verify(s).empty());
    q.memory.cap = PerStage::of(top - 0.25);
    s.problem = q;
    if (q.static_of(RankId(0)) > top - 0.25) continue;  // validate() refuses that problem
    auto issues = verify(s);
    REQUIRE(!issues.empty());
    CHECK(issues[0].kind == DiagKind::MemoryCap);
  }
}

TEST_CASE("static memory: schedule JSON version 2, round trip") {
  Problem p = base(2, 1, 1);
  p.memory.static_memory = PerStage::list({3, 4.5});
  p.memory.cap = PerStage::of(10);
  Schedule s;
  s.problem = p;
  s.ranks = {{}, {}};
  std::string text = write_schedule_json(s, nullptr);
  CHECK(text.find("\"version\": 2,") != std::string::npos);
  CHECK(text.find("\"static\": [3, 4.5]") != std::string::npos);
  SourceManager sm;
  int32_t f = sm.add("t.json", text);
  Diagnostics d(&sm);
  auto back = read_schedule_json(sm, f, d);
  REQUIRE(back.has_value());
  CHECK(back->problem == p);
  // Without static memory nothing changes: version 1, no key.
  s.problem.memory.static_memory = PerStage::of(0);
  CHECK(write_schedule_json(s, nullptr).find("\"static\"") == std::string::npos);
}
