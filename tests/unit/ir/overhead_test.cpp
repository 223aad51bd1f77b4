// Action and message overheads (cost.action_overhead, cost.message_overhead): which messages an
// action exchanges on each placement, the durations the simulator gives, fused against split
// backwards and overlapped units, the JSON version they need, and their validation.

#include <doctest/doctest.h>

#include "ir/json_io.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "tests/common/builders.h"
#include "tests/common/json_versions.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

int32_t messages(const Problem& p, ActionKind k, int32_t mb, int32_t s) {
  return messages_of(p, Action{k, MbId(mb), StageId(s)});
}

}  // namespace

TEST_CASE("an action's messages are its inputs and outputs that cross ranks") {
  Problem p = test::problem(4, 4, BackwardMode::Split);
  // One stage per rank: the ends exchange one message, the middle stages two; W none.
  CHECK(messages(p, ActionKind::F, 0, 0) == 1);
  CHECK(messages(p, ActionKind::F, 0, 1) == 2);
  CHECK(messages(p, ActionKind::F, 0, 3) == 1);
  CHECK(messages(p, ActionKind::B, 0, 3) == 1);
  CHECK(messages(p, ActionKind::B, 0, 2) == 2);
  CHECK(messages(p, ActionKind::W, 0, 2) == 0);
  // Looped, two stages per rank: every boundary crosses ranks (stage 3 on rank 3, 4 on rank 0).
  p.stages_per_rank = 2;
  CHECK(messages(p, ActionKind::F, 0, 3) == 2);
  CHECK(messages(p, ActionKind::F, 0, 4) == 2);
  CHECK(messages(p, ActionKind::F, 0, 7) == 1);
  // V-shape: stages 3 and 4 share rank 3, so the turn costs no message.
  p.placement = PlacementKind::VShape;
  CHECK(messages(p, ActionKind::F, 0, 3) == 1);
  CHECK(messages(p, ActionKind::B, 0, 4) == 1);
  CHECK(messages(p, ActionKind::B, 0, 0) == 1);
  // One rank: nothing crosses.
  Problem one = test::problem(1, 2, BackwardMode::Split);
  one.stages_per_rank = 3;
  for (int32_t s = 0; s < 3; ++s) CHECK(messages(one, ActionKind::F, 1, s) == 0);
  // Two directions: direction 1 runs the mirrored map; its stage 0 is on rank 3 and still sends.
  Problem two = test::two_directions(4, 4);
  CHECK(messages(two, ActionKind::F, 2, 0) == 1);
  CHECK(messages(two, ActionKind::BW, 3, 1) == 2);
}

TEST_CASE("durations: work plus the action overhead plus one message overhead per message") {
  Problem p = test::problem(2, 1, BackwardMode::Split);
  p.cost.action_overhead = 0.5;
  p.cost.message_overhead = 0.25;
  p.cost.comm = 0.125;
  CHECK(cost_of(p, F(0, 0)) == 1.75);
  CHECK(cost_of(p, B(0, 1)) == 1.75);
  CHECK(cost_of(p, W(0, 1)) == 1.5);
  // F0.s0 [0, 1.75], comm, F0.s1 [1.875, 3.625], B0.s1 [3.625, 5.375], comm, B0.s0 [5.5, 7.25],
  // W0.s0 [7.25, 8.75]; W0.s1 [5.375, 6.875].
  Schedule s = test::schedule(p, {"F0.s0 B0.s0 W0.s0", "F0.s1 B0.s1 W0.s1"});
  SimResult r = simulate(s);
  REQUIRE(r.timeline);
  CHECK(r.timeline->metrics.makespan == 8.75);
  CHECK(r.timeline->metrics.busy == std::vector<double>{5, 5});
  // Without overheads the same order takes 1 + 0.125 + 1 + 1 + 0.125 + 1 + 1.
  p.cost.action_overhead = p.cost.message_overhead = 0;
  s.problem = p;
  CHECK(simulate(s).timeline->metrics.makespan == 5.25);
}

TEST_CASE("a fused BW pays the action overhead once, a B and its W twice; a unit pays both members'") {
  Problem p = test::problem(2, 2, BackwardMode::Mixed);
  p.cost.action_overhead = 1;
  p.cost.message_overhead = 0.5;
  CHECK(cost_of(p, BW(0, 0)) == 1 + 1 + 1 + 0.5);
  CHECK(cost_of(p, B(0, 0)) + cost_of(p, W(0, 0)) == 1 + 1 + 2 + 0.5);
  // No FB: a unit lasts its members' costs; with FB, FB and both overheads.
  CHECK(overlap_cost(p, F(1, 0), BW(0, 0)) == cost_of(p, F(1, 0)) + cost_of(p, BW(0, 0)));
  p.cost.FB = PerStage::of(1.5);
  CHECK(overlap_cost(p, F(1, 0), B(0, 0)) == 1.5 + 1.5 + 1.5);
  // The simulator uses the same rule: on one rank, F1.s0 runs as a unit with BW0.s0.
  Problem one = test::problem(1, 2, BackwardMode::Fused);
  one.cost.action_overhead = 0.5;
  one.cost.FB = PerStage::of(1.5);
  Schedule s = test::schedule(one, {"F0.s0 F1.s0 BW0.s0 BW1.s0"});
  s.overlap = {{1}};
  REQUIRE(verify(s).empty());
  // F0 1.5, unit 1.5 + 0.5 + 0.5, BW1 2 + 0.5.
  CHECK(simulate(s).timeline->metrics.makespan == 1.5 + 2.5 + 2.5);
}

TEST_CASE("overheads are written as version 3 of the schedule JSON and read back") {
  Problem p = test::problem(2, 2, BackwardMode::Split);
  Schedule s = test::schedule(p, {"F0.s0 F1.s0 B0.s0 W0.s0 B1.s0 W1.s0", "F0.s1 B0.s1 F1.s1 B1.s1 W0.s1 W1.s1"});
  std::string plain = write_schedule_json(s, nullptr);
  CHECK(plain.find("\"version\": 1,") != std::string::npos);
  CHECK(plain.find("overhead") == std::string::npos);
  s.problem.cost.action_overhead = 0.02;
  s.problem.cost.message_overhead = 0.015;
  std::string text = test::check_version_gate(
      s, 3, "`action_overhead` needs version 3 of the format, the document says version 2");
  CHECK(text.find("\"action_overhead\": 0.02, \"message_overhead\": 0.015") != std::string::npos);
}

TEST_CASE("overheads are validated as comm is") {
  Problem p = test::problem(2, 2, BackwardMode::Split);
  p.cost.action_overhead = -1;
  p.cost.message_overhead = 2e15;
  auto errors = validate(p);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].field == Field::CostActionOverhead);
  CHECK(errors[0].message == "`cost.action_overhead` must be a number in 0..1e15, got `-1`");
  CHECK(errors[1].field == Field::CostMessageOverhead);
  CHECK(errors[1].kind == DiagKind::OutOfRange);
}

TEST_CASE("with_stages_per_rank cuts every stage's costs and memory evenly, and keeps the rest") {
  Problem base = test::problem(2, 4, BackwardMode::Split, 4, 4, 2);
  base.cost.F = PerStage::list({4, 6});
  base.cost.FB = PerStage::of(7);
  base.cost.comm = 0.1;
  base.cost.action_overhead = 0.5;
  base.cost.message_overhead = 0.25;
  base.memory.F = PerStage::of(2);
  base.memory.B = PerStage::of(-1);
  base.memory.W = PerStage::of(-1);
  base.memory.cap = PerStage::of(8);
  Problem p = with_stages_per_rank(base, 2);
  CHECK(p.stages_per_rank == 2);
  CHECK(p.cost.F == PerStage::list({2, 2, 3, 3}));
  CHECK(p.cost.B == PerStage::of(2));
  CHECK(p.cost.W == PerStage::of(1));
  CHECK(*p.cost.FB == PerStage::of(3.5));
  CHECK(p.memory.F == PerStage::of(1));
  CHECK(p.memory.W == PerStage::of(-0.5));
  CHECK(*p.memory.cap == PerStage::of(8));
  CHECK(p.cost.comm == 0.1);
  CHECK(p.cost.action_overhead == 0.5);
  CHECK(p.cost.message_overhead == 0.25);
  CHECK(validate(p).empty());
  // The work a rank does per microbatch is the same; what it pays in overheads grows.
  Problem one = with_stages_per_rank(base, 1);
  CHECK(one == base);
  double work1 = 0, work4 = 0;
  Problem four = with_stages_per_rank(base, 4);
  for (int32_t s = 0; s < 2; ++s) work1 += base.cost.F.at(static_cast<size_t>(s));
  for (int32_t s = 0; s < 8; ++s) work4 += four.cost.F.at(static_cast<size_t>(s));
  CHECK(work1 == work4);
  CHECK(cost_of(four, F(0, 3)) - four.cost.F.at(3) == 0.5 + 2 * 0.25);
  CHECK(cost_of(base, F(0, 1)) - base.cost.F.at(1) == 0.5 + 0.25);
}
