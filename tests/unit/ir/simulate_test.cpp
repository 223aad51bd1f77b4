// The simulator against timelines computed by hand (docs/design.md section 3 semantics).

#include <doctest/doctest.h>

#include "ir/simulate.h"
#include "tests/common/builders.h"

using namespace schedc;
using namespace schedc::ir;
using schedc::test::problem;
using schedc::test::schedule;

namespace {

Timeline run(const Schedule& s) {
  SimResult r = simulate(s);
  REQUIRE(r.timeline.has_value());
  return *r.timeline;
}

// start/end of rank r's i-th action, in time units.
std::pair<double, double> at(const Timeline& t, size_t r, size_t i) {
  return {t.time(t.start[r][i]), t.time(t.end[r][i])};
}

}  // namespace

TEST_CASE("fused 1F1B on 2 ranks, 2 microbatches") {
  // rank 0: F0 [0,1] F1 [1,2] BW0 [4,6] BW1 [7,9]; rank 1: F0 [1,2] BW0 [2,4] F1 [4,5] BW1 [5,7]
  Schedule s = schedule(problem(2, 2, BackwardMode::Fused), {"F0.s0 F1.s0 BW0.s0 BW1.s0", "F0.s1 BW0.s1 F1.s1 BW1.s1"});
  Timeline t = run(s);
  CHECK(at(t, 0, 2) == std::pair{4.0, 6.0});
  CHECK(at(t, 0, 3) == std::pair{7.0, 9.0});
  CHECK(at(t, 1, 2) == std::pair{4.0, 5.0});
  CHECK(at(t, 1, 3) == std::pair{5.0, 7.0});
  const Metrics& m = t.metrics;
  CHECK(m.makespan == 9);
  CHECK(m.busy == std::vector<double>{6, 6});
  CHECK(m.bubble_ratio == doctest::Approx(1.0 / 3));
  CHECK(m.max_rank_span == 9);  // rank 1 spans [1, 7] = 6
  CHECK(m.span_bubble_rate == doctest::Approx(3.0 / 9));
  CHECK(m.peak_memory == std::vector<double>{2, 1});
}

TEST_CASE("comm latency applies to cross-rank dependencies only") {
  Problem p = problem(2, 2, BackwardMode::Fused);
  p.cost.comm = 0.5;
  Schedule s = schedule(p, {"F0.s0 F1.s0 BW0.s0 BW1.s0", "F0.s1 BW0.s1 F1.s1 BW1.s1"});
  Timeline t = run(s);
  // rank 1: F0 [1.5,2.5] BW0 [2.5,4.5] F1 [4.5,5.5] BW1 [5.5,7.5]; rank 0: BW0 [5,7] BW1 [8,10]
  CHECK(at(t, 1, 0) == std::pair{1.5, 2.5});
  CHECK(at(t, 1, 2) == std::pair{4.5, 5.5});
  CHECK(at(t, 0, 2) == std::pair{5.0, 7.0});
  CHECK(at(t, 0, 3) == std::pair{8.0, 10.0});
  CHECK(t.metrics.makespan == 10);
}

TEST_CASE("split backward with per-stage costs") {
  Problem p = problem(2, 1, BackwardMode::Split);
  p.cost.F = PerStage::list({1, 2});
  p.cost.W = PerStage::list({2, 1});
  Schedule s = schedule(p, {"F0.s0 B0.s0 W0.s0", "F0.s1 B0.s1 W0.s1"});
  Timeline t = run(s);
  // rank 0: F [0,1] B [4,5] W [5,7]; rank 1: F [1,3] B [3,4] W [4,5]
  CHECK(at(t, 1, 0) == std::pair{1.0, 3.0});
  CHECK(at(t, 0, 1) == std::pair{4.0, 5.0});
  CHECK(at(t, 0, 2) == std::pair{5.0, 7.0});
  CHECK(t.metrics.makespan == 7);
  CHECK(t.metrics.busy == std::vector<double>{4, 4});
  CHECK(t.metrics.peak_memory == std::vector<double>{1, 1});
}

TEST_CASE("overlapped F&B unit starts when both inputs arrived and lasts FB") {
  Problem p = problem(2, 2, BackwardMode::Mixed);
  p.cost.FB = PerStage::of(2);
  Schedule s = schedule(p, {"F0.s0 F1.s0 BW0.s0 BW1.s0", "F0.s1 F1.s1 BW0.s1 BW1.s1"});
  s.overlap = {{}, {1}};  // rank 1 runs (F1.s1, BW0.s1) as one unit
  Timeline t = run(s);
  CHECK(at(t, 1, 1) == std::pair{2.0, 4.0});
  CHECK(at(t, 1, 2) == std::pair{2.0, 4.0});
  CHECK(at(t, 1, 3) == std::pair{4.0, 6.0});
  CHECK(at(t, 0, 2) == std::pair{4.0, 6.0});
  CHECK(at(t, 0, 3) == std::pair{6.0, 8.0});
  CHECK(t.metrics.makespan == 8);
  CHECK(t.metrics.busy == std::vector<double>{6, 5});

  p.cost.FB.reset();  // default: the sum of the two actions (F 1 + BW 2)
  s.problem = p;
  Timeline t2 = run(s);
  CHECK(at(t2, 1, 1) == std::pair{2.0, 5.0});
}

TEST_CASE("vshape placement: the V-turn stays on the last rank without comm") {
  Problem p = problem(2, 1, BackwardMode::Fused);
  p.stages_per_rank = 2;
  p.placement = PlacementKind::VShape;
  p.cost.comm = 1;
  CHECK(p.rank_of(0, StageId(0)).value == 0);
  CHECK(p.rank_of(0, StageId(1)).value == 1);
  CHECK(p.rank_of(0, StageId(2)).value == 1);
  CHECK(p.rank_of(0, StageId(3)).value == 0);
  Schedule s = schedule(p, {"F0.s0 F0.s3 BW0.s3 BW0.s0", "F0.s1 F0.s2 BW0.s2 BW0.s1"});
  Timeline t = run(s);
  // F.s0 [0,1] | F.s1 [2,3] F.s2 [3,4] | F.s3 [5,6] BW.s3 [6,8] | BW.s2 [9,11] BW.s1 [11,13] | BW.s0 [14,16]
  CHECK(at(t, 1, 1) == std::pair{3.0, 4.0});
  CHECK(at(t, 0, 1) == std::pair{5.0, 6.0});
  CHECK(at(t, 1, 3) == std::pair{11.0, 13.0});
  CHECK(t.metrics.makespan == 16);
}

TEST_CASE("wave placement alternates direction each round") {
  Problem p = problem(3, 1, BackwardMode::Fused);
  p.stages_per_rank = 3;
  p.placement = PlacementKind::Wave;
  std::vector<int> ranks;
  for (int s = 0; s < 9; ++s) ranks.push_back(p.rank_of(0, StageId(s)).value);
  CHECK(ranks == std::vector<int>{0, 1, 2, 2, 1, 0, 0, 1, 2});
}

TEST_CASE("bidirectional: direction 1 uses the mirrored placement") {
  Problem p = problem(2, 2, BackwardMode::Fused);
  p.directions = 2;
  CHECK(p.rank_of(MbId(1), StageId(0)).value == 1);
  Schedule s = schedule(p, {"F0.s0 F1.s1 BW1.s1 BW0.s0", "F1.s0 F0.s1 BW0.s1 BW1.s0"});
  Timeline t = run(s);
  CHECK(t.metrics.makespan == 6);
  CHECK(t.metrics.bubble_ratio == 0);
  CHECK(at(t, 1, 3) == std::pair{4.0, 6.0});
}

TEST_CASE("decimal costs are exact") {
  Problem p = problem(2, 3, BackwardMode::Fused, 0.1, 0.2, 0.1);
  p.cost.comm = 0.05;
  Schedule s = schedule(p, {"F0.s0 F1.s0 BW0.s0 F2.s0 BW1.s0 BW2.s0", "F0.s1 BW0.s1 F1.s1 BW1.s1 F2.s1 BW2.s1"});
  Timeline t = run(s);
  CHECK(t.scale == 100);
  // By hand: rank 1 ends BW2.s1 at 1.45, so rank 0's BW2.s0 runs [1.5, 1.8].
  CHECK(at(t, 1, 5) == std::pair{1.15, 1.45});
  CHECK(at(t, 0, 5) == std::pair{1.5, 1.8});
  CHECK(t.metrics.makespan == 1.8);
}

TEST_CASE("a cross-rank cycle stalls and names who waits for what") {
  Schedule s = schedule(problem(2, 2, BackwardMode::Fused), {"F0.s0 BW0.s0 F1.s0 BW1.s0", "F1.s1 F0.s1 BW0.s1 BW1.s1"});
  SimResult r = simulate(s);
  CHECK_FALSE(r.timeline.has_value());
  REQUIRE(r.stalls.size() == 2);
  CHECK(format_action(r.stalls[0].action) == "BW0.s0");
  CHECK(format_action(r.stalls[0].waits_for) == "BW0.s1");
  CHECK(format_action(r.stalls[1].action) == "F1.s1");
  CHECK(format_action(r.stalls[1].waits_for) == "F1.s0");
}

TEST_CASE("exact_scale picks the smallest power of ten") {
  CHECK(exact_scale({1, 2, 3}) == 1);
  CHECK(exact_scale({1, 0.5}) == 10);
  CHECK(exact_scale({0.25, 1}) == 100);
  CHECK(exact_scale({1.4e-6, 4.3e-6}) == 10'000'000);
  CHECK(exact_scale({1.5e-6, 1}) == 10'000'000);
  CHECK(exact_scale({1e-15}) == kMaxScale);
  // Twelve significant digits at 1e-9 are exact; seventeen, or a tick below 1e-15, have no scale.
  CHECK(exact_scale_of({123.456789012}) == 1'000'000'000);
  CHECK_FALSE(exact_scale_of({0.12345678901234567}).has_value());
  CHECK_FALSE(exact_scale_of({1e-16}).has_value());
}
