// Schedule JSON: writing, reading back and writing again gives the same bytes, for every problem
// feature the format has (overlap, custom placement, per-stage costs, caps, bidirectional).

#include <doctest/doctest.h>

#include "ir/json_io.h"
#include "ir/verify.h"
#include "tests/unit/formats/generate.h"

namespace schedc {
namespace {

using ir::BackwardMode;
using ir::PlacementKind;

// Writes `s`, reads it back and writes again; both texts and the schedules must be equal.
void check_round_trip(const ir::Schedule& s) {
  ir::Timeline t = test::timeline(s);
  for (const ir::Metrics* metrics : std::initializer_list<const ir::Metrics*>{nullptr, &t.metrics}) {
    std::string first = ir::write_schedule_json(s, metrics);
    SourceManager sm;
    Diagnostics diags(&sm);
    int32_t file = sm.add("round_trip.json", first);
    auto back = ir::read_schedule_json(sm, file, diags);
    INFO(diags.str());
    REQUIRE(back.has_value());
    CHECK(back->problem == s.problem);
    CHECK(back->ranks == s.ranks);
    CHECK(back->has_overlap() == s.has_overlap());
    if (s.has_overlap()) CHECK(back->overlap == s.overlap);
    CHECK(ir::verify(*back).empty());
    CHECK(ir::write_schedule_json(*back, metrics) == first);
  }
}

TEST_CASE("json round trip: uniform problems of each backward mode") {
  for (BackwardMode b : {BackwardMode::Fused, BackwardMode::Split, BackwardMode::Mixed}) {
    CAPTURE(ir::to_string(b));
    check_round_trip(test::greedy_schedule(test::problem(4, 1, 8, PlacementKind::Looped, b)));
  }
}

TEST_CASE("json round trip: overlapped units") {
  ir::Schedule s = test::greedy_schedule(test::problem(4, 2, 8, PlacementKind::VShape, BackwardMode::Mixed), true);
  REQUIRE(s.has_overlap());
  check_round_trip(s);
  s.problem.cost.FB = ir::PerStage::of(1.5);
  check_round_trip(s);
}

TEST_CASE("json round trip: custom placement, single and bidirectional") {
  ir::Problem p = test::problem(2, 2, 4, PlacementKind::Custom);
  p.stage_to_rank = {{1, 0, 0, 1}};
  check_round_trip(test::greedy_schedule(p));
  p.directions = 2;
  p.stage_to_rank = {{1, 0, 0, 1}, {0, 1, 1, 0}};
  check_round_trip(test::greedy_schedule(p));
}

TEST_CASE("json round trip: per-stage costs, comm, per-rank cap, max-span objective") {
  ir::Problem p = test::problem(3, 2, 6, PlacementKind::Wave, BackwardMode::Split);
  p.cost.F = ir::PerStage::list({1, 1.5, 2, 1, 0.25, 3});
  p.cost.B = ir::PerStage::list({2, 2, 2, 2, 2, 2.5});
  p.cost.W = ir::PerStage::of(0.5);
  p.cost.comm = 0.1;
  p.memory.F = ir::PerStage::list({1, 1, 2, 2, 1, 1});
  p.memory.cap = ir::PerStage::list({100, 90.5, 80});
  p.objective = ir::Objective::MaxSpan;
  check_round_trip(test::greedy_schedule(p));
}

TEST_CASE("json round trip: bidirectional looped and vshape") {
  check_round_trip(test::greedy_schedule(test::problem(4, 1, 8, PlacementKind::Looped, BackwardMode::Fused, 2)));
  check_round_trip(test::greedy_schedule(test::problem(2, 2, 4, PlacementKind::VShape, BackwardMode::Split, 2), true));
}

TEST_CASE("json round trip: a hand-written overlapped unit on one rank") {
  ir::Problem p = test::problem(1, 1, 2, PlacementKind::Looped, BackwardMode::Fused);
  ir::Schedule s;
  s.problem = p;
  s.ranks = {{ir::F(0, 0), ir::F(1, 0), ir::BW(0, 0), ir::BW(1, 0)}};
  s.overlap = {{1}};
  REQUIRE(ir::verify(s).empty());
  check_round_trip(s);
}

}  // namespace
}  // namespace schedc
