// Recomputation (`recompute = off | allowed | all`, docs/design.md section 3): the R action's token, cost
// and memory, the checkpointed forward's smaller delta, what the verifier accepts and refuses, the
// simulator's timing, the dependency graph's edges, the JSON version it needs, and validation.

#include <doctest/doctest.h>

#include <algorithm>

#include "ir/dep_graph.h"
#include "ir/json_io.h"
#include "ir/order_sim.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "tests/common/builders.h"
#include "tests/common/json_versions.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// Two ranks, two microbatches, split backward, F = B = W = 1, R = 2; memory F = 4 of which a
// checkpointed forward keeps 1, B and W free half each.
Problem two_ranks(Recompute mode) {
  Problem p = test::problem(2, 2, BackwardMode::Split);
  test::set_memory(p, 4, -2, -2);
  p.recompute = mode;
  p.memory.input = PerStage::of(1);
  p.cost.R = PerStage::of(2);
  return p;
}

// GPipe order on two ranks; `recompute` puts R(mb, s) right before each B.
Schedule gpipe(const Problem& p, bool recompute) {
  std::string r0 = "F0.s0 F1.s0 ", r1 = "F0.s1 F1.s1 ";
  for (int mb = 0; mb < 2; ++mb) {
    std::string m = std::to_string(mb);
    r1 += (recompute ? "R" + m + ".s1 " : "") + "B" + m + ".s1 W" + m + ".s1 ";
    r0 += (recompute ? "R" + m + ".s0 " : "") + "B" + m + ".s0 W" + m + ".s0 ";
  }
  return test::schedule(p, {r0, r1});
}

bool has_issue(const Schedule& s, DiagKind kind, const std::string& text) {
  auto issues = verify(s);
  return std::any_of(issues.begin(), issues.end(),
                     [&](const VerifyIssue& i) { return i.kind == kind && i.message.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("an R is a token, an id and a cost of its own; a checkpointed F keeps only its input") {
  auto a = parse_action("R3.s1");
  REQUIRE(a);
  CHECK(a->kind == ActionKind::R);
  CHECK(format_action(*a) == "R3.s1");
  Problem p = two_ranks(Recompute::Allowed);
  p.microbatches = 4;
  // Dense ids: one slot per kind, R's distinct from every other.
  std::vector<int32_t> ids;
  for (int32_t mb = 0; mb < 4; ++mb)
    for (int32_t s = 0; s < 2; ++s)
      for (Action x : {F(mb, s), B(mb, s), W(mb, s), BW(mb, s), R(mb, s)}) {
        ids.push_back(action_id(p, x).value);
        CHECK(action_at(p, action_id(p, x)) == x);
      }
  std::sort(ids.begin(), ids.end());
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  CHECK(cost_of(p, R(0, 0)) == 2);
  CHECK(messages_of(p, R(0, 1)) == 0);  // it reads the kept input on its own rank
  p.cost.R.reset();
  CHECK(cost_of(p, R(0, 0)) == cost_of(p, F(0, 0)));  // R costs F unless stated
  CHECK(memory_delta(p, F(0, 0)) == 4);
  CHECK(memory_delta(p, F(0, 0), true) == 1);
  CHECK(memory_delta(p, R(0, 0)) == 3);
}

TEST_CASE("the verifier accepts R between its F and its backward, and checkpointing lowers the peak") {
  Problem p = two_ranks(Recompute::Allowed);
  Schedule plain = gpipe(p, false), redo = gpipe(p, true);
  CHECK(verify(plain).empty());  // `allowed`: no R is fine
  CHECK(verify(redo).empty());
  // GPipe holds both microbatches' forwards: 8 plainly, 1 + 1 kept inputs then one restored (5).
  CHECK(peak_memory(plain)[0] == 8);
  CHECK(peak_memory(redo)[0] == 5);
  p.memory.cap = PerStage::of(5);
  plain.problem = redo.problem = p;
  CHECK(has_issue(plain, DiagKind::MemoryCap, "holds 8 after"));
  CHECK(verify(redo).empty());
  // R adds its cost where it runs: rank 1 recomputes while nothing waits, then B runs.
  SimResult a = simulate(gpipe(two_ranks(Recompute::Allowed), false)),
            b = simulate(gpipe(two_ranks(Recompute::Allowed), true));
  REQUIRE(a.timeline);
  REQUIRE(b.timeline);
  CHECK(b.timeline->metrics.makespan > a.timeline->metrics.makespan);
}

TEST_CASE("the verifier refuses an R the problem does not allow, out of order, or missing under `all`") {
  Schedule off = gpipe(two_ranks(Recompute::Allowed), true);
  off.problem.recompute = Recompute::Off;
  off.problem.memory.input.reset();
  off.problem.cost.R.reset();
  CHECK(has_issue(off, DiagKind::Recompute, "`R0.s0` recomputes a forward, but the problem's `recompute` is `off`"));
  // R after its backward: the backward waits for it.
  Problem p = two_ranks(Recompute::Allowed);
  Schedule late = test::schedule(p,
                                 {"F0.s0 F1.s0 B0.s0 R0.s0 W0.s0 B1.s0 W1.s0", "F0.s1 F1.s1 B0.s1 W0.s1 B1.s1 W1.s1"});
  CHECK(has_issue(late, DiagKind::DependencyOrder, "`B0.s0` runs before `R0.s0`"));
  // R before its forward.
  Schedule early = test::schedule(p,
                                  {"R0.s0 F0.s0 F1.s0 B0.s0 W0.s0 B1.s0 W1.s0", "F0.s1 F1.s1 B0.s1 W0.s1 B1.s1 W1.s1"});
  CHECK(has_issue(early, DiagKind::DependencyOrder, "`R0.s0` runs before `F0.s0`"));
  // R on another rank than its stage's.
  Schedule moved = test::schedule(p,
                                  {"F0.s0 F1.s0 B0.s0 W0.s0 B1.s0 W1.s0", "F0.s1 F1.s1 R0.s0 B0.s1 W0.s1 B1.s1 W1.s1"});
  CHECK(has_issue(moved, DiagKind::WrongRank, "`R0.s0` is on rank 1"));
  // Two R's of one forward.
  Schedule twice = test::schedule(
      p, {"F0.s0 F1.s0 R0.s0 R0.s0 B0.s0 W0.s0 B1.s0 W1.s0", "F0.s1 F1.s1 B0.s1 W0.s1 B1.s1 W1.s1"});
  CHECK(has_issue(twice, DiagKind::DuplicateAction, "`R0.s0` appears again"));
  // `all`: every forward is recomputed.
  Schedule all = gpipe(two_ranks(Recompute::All), true);
  CHECK(verify(all).empty());
  Schedule some = all;
  some.ranks[1].erase(std::find(some.ranks[1].begin(), some.ranks[1].end(), R(1, 1)));
  CHECK(has_issue(some, DiagKind::Recompute, "`R1.s1` is missing from rank 1 (`recompute = all`"));
  // An R is not half of an overlapped unit.
  Schedule unit = gpipe(p, true);
  unit.overlap = {{}, {1}};  // (F1.s1, R0.s1)
  CHECK(has_issue(unit, DiagKind::BadOverlap, "must be one forward and one `B` or `BW`"));
}

TEST_CASE("the dependency graph of a schedule with R: F -> R -> backward, and the F's smaller delta") {
  Problem p = two_ranks(Recompute::Allowed);
  Schedule s = gpipe(p, true);
  s.ranks[0].erase(std::find(s.ranks[0].begin(), s.ranks[0].end(), R(1, 0)));  // (1, 0) not checkpointed
  DepGraph g = DepGraph::of_schedule(s);
  const int32_t r = g.node_of(R(0, 0)), f = g.node_of(F(0, 0)), b = g.node_of(B(0, 0));
  REQUIRE(r >= 0);
  auto joined = [&](int32_t from, int32_t to) {
    auto succ = g.succs(from);
    return std::any_of(succ.begin(), succ.end(), [&](const DepGraph::Edge& e) { return e.node == to; });
  };
  CHECK(joined(f, r));
  CHECK(joined(r, b));
  CHECK(g.memory(f) == 1 * g.memory_scale());
  CHECK(g.memory(r) == 3 * g.memory_scale());
  CHECK(g.memory(g.node_of(F(1, 0))) == 4 * g.memory_scale());  // kept whole
  CHECK(g.node_of(R(1, 0)) == -1);
  // The canonical graph has no recomputation.
  CHECK(DepGraph::canonical_node(p, ActionKind::R, 0, 0) == -1);
}

TEST_CASE("recomputation needs what a checkpointed forward keeps, and only means something when allowed") {
  Problem p = two_ranks(Recompute::Allowed);
  CHECK(validate(p).empty());
  p.memory.input.reset();
  auto errors = validate(p);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == Field::Recompute);
  CHECK(errors[0].kind == DiagKind::MissingKey);
  p.memory.input = PerStage::of(5);  // more than F's 4
  errors = validate(p);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == Field::MemoryInput);
  CHECK(errors[0].message.find("more than the forward's own memory") != std::string::npos);
  p = two_ranks(Recompute::Off);
  errors = validate(p);
  REQUIRE(errors.size() == 2);  // cost.R and memory.input without recomputation
  CHECK(errors[0].field == Field::CostR);
  CHECK(errors[1].field == Field::MemoryInput);
  CHECK(to_string(Recompute::Allowed) == "allowed");
  CHECK(parse_recompute("all") == Recompute::All);
  CHECK_FALSE(parse_recompute("some"));
}

TEST_CASE("schedule JSON: recomputation is version 5, written only when allowed") {
  Schedule s = gpipe(two_ranks(Recompute::Allowed), true);
  std::string text = test::check_version_gate(s, 5, "`recompute` needs version 5");
  CHECK(text.find("\"R0.s0\"") != std::string::npos);
  CHECK(text.find("\"input\": 1") != std::string::npos);
  CHECK(text.find("\"R\": 2") != std::string::npos);
  // Without recomputation the document is what it was (version 1 here).
  Schedule plain = gpipe(test::problem(2, 2, BackwardMode::Split), false);
  CHECK(write_schedule_json(plain, nullptr).find("\"version\": 1,") != std::string::npos);
}

TEST_CASE("random schedules with recomputation verify, and the order simulator times them as ir::simulate does") {
  test::Rng rng(505);
  int with_r = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = test::random_problem(rng);
    test::add_random_recompute(p, rng);
    REQUIRE(validate(p).empty());
    Schedule s = test::random_valid(p, rng);
    for (const auto& order : s.ranks)
      with_r += static_cast<int>(
          std::count_if(order.begin(), order.end(), [](Action a) { return a.kind == ActionKind::R; }));
    auto issues = verify(s);
    INFO("trial " << trial << ": " << (issues.empty() ? std::string("no issue") : issues[0].message));
    REQUIRE(issues.empty());
    // The order simulator (on the schedule's dependency graph) times every action as ir::simulate.
    SimResult sim = simulate(s);
    REQUIRE(sim.timeline);
    OrderSimulator os(s);
    REQUIRE(os.run(os.initial_orders()));
    const DepGraph& g = os.graph();
    for (size_t v = 0; v < g.size(); ++v) {
      auto pos = g.position(static_cast<int32_t>(v));
      CHECK(os.start(static_cast<int32_t>(v)) ==
            sim.timeline->start[static_cast<size_t>(pos.rank)][static_cast<size_t>(pos.index)]);
      CHECK(os.end(static_cast<int32_t>(v)) ==
            sim.timeline->end[static_cast<size_t>(pos.rank)][static_cast<size_t>(pos.index)]);
    }
    // Peak memory: the graph's deltas summed in order.
    auto peaks = peak_memory(s);
    for (int32_t r = 0; r < p.ranks; ++r) {
      int64_t cur = 0, peak = 0;
      for (int32_t v : g.on_rank(r)) peak = std::max(peak, cur += g.memory(v));
      CHECK(static_cast<double>(peak) / static_cast<double>(g.memory_scale()) == doctest::Approx(peaks[r]));
    }
  }
  CHECK(with_r > 300);
}
