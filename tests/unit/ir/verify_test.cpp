// The verifier's verdicts and messages on hand-made broken schedules.

#include <doctest/doctest.h>

#include "ir/verify.h"
#include "tests/common/builders.h"

using namespace schedc;
using namespace schedc::ir;
using schedc::test::problem;
using schedc::test::schedule;

namespace {

const char* kOk0 = "F0.s0 F1.s0 BW0.s0 BW1.s0";
const char* kOk1 = "F0.s1 BW0.s1 F1.s1 BW1.s1";

VerifyIssue only_issue(const Schedule& s) {
  auto issues = verify(s);
  REQUIRE(issues.size() == 1);
  return issues[0];
}

}  // namespace

TEST_CASE("a valid schedule has no issues") {
  CHECK(verify(schedule(problem(2, 2, BackwardMode::Fused), {kOk0, kOk1})).empty());
}

TEST_CASE("missing, duplicate, wrong rank, wrong kind") {
  Problem p = problem(2, 2, BackwardMode::Fused);
  auto miss = only_issue(schedule(p, {"F0.s0 F1.s0 BW0.s0", kOk1}));
  CHECK(miss.kind == DiagKind::MissingAction);
  CHECK(miss.message == "`BW1.s0` is missing from rank 0");

  auto dup = only_issue(schedule(p, {"F0.s0 F1.s0 BW0.s0 BW1.s0 F1.s0", kOk1}));
  CHECK(dup.kind == DiagKind::DuplicateAction);
  CHECK(dup.rank == 0);
  CHECK(dup.position == 4);

  auto wrong = verify(schedule(p, {"F0.s0 F1.s0 BW0.s0 BW1.s0 F0.s1", "BW0.s1 F1.s1 BW1.s1"}));
  REQUIRE(!wrong.empty());
  CHECK(wrong[0].kind == DiagKind::WrongRank);
  CHECK(wrong[0].message == "`F0.s1` is on rank 0, but stage 1 belongs to rank 1");

  auto kind = only_issue(schedule(p, {"F0.s0 F1.s0 B0.s0 BW1.s0", kOk1}));
  CHECK(kind.kind == DiagKind::BackwardMode);
}

TEST_CASE("split and mixed completeness") {
  Problem split = problem(1, 1, BackwardMode::Split);
  auto w = only_issue(schedule(split, {"F0.s0 B0.s0"}));
  CHECK(w.kind == DiagKind::MissingAction);
  CHECK(w.message == "`W0.s0` is missing from rank 0 (its `B0.s0` is present)");

  Problem mixed = problem(1, 2, BackwardMode::Mixed);
  CHECK(verify(schedule(mixed, {"F0.s0 BW0.s0 F1.s0 B1.s0 W1.s0"})).empty());
  auto both = only_issue(schedule(mixed, {"F0.s0 BW0.s0 B0.s0 F1.s0 BW1.s0"}));
  CHECK(both.kind == DiagKind::DuplicateAction);
}

TEST_CASE("same-rank dependency order") {
  Problem p = problem(2, 2, BackwardMode::Fused);
  auto order = only_issue(schedule(p, {"F0.s0 BW0.s0 BW1.s0 F1.s0", kOk1}));
  CHECK(order.kind == DiagKind::DependencyOrder);
  CHECK(order.rank == 0);
  CHECK(order.position == 2);
  CHECK(order.message == "`BW1.s0` runs before `F1.s0` (position 3), which it depends on");
}

TEST_CASE("cross-rank deadlock names the cycle") {
  Problem p = problem(2, 2, BackwardMode::Fused);
  auto dl = only_issue(schedule(p, {"F0.s0 BW0.s0 F1.s0 BW1.s0", "F1.s1 F0.s1 BW0.s1 BW1.s1"}));
  CHECK(dl.kind == DiagKind::Deadlock);
  CHECK(dl.message ==
        "deadlock: rank 0 waits at position 1 (`BW0.s0`) for `BW0.s1` on rank 1, which rank 1 waits at position 0 "
        "(`F1.s1`) for `F1.s0` on rank 0");
}

TEST_CASE("memory cap names the first position above the cap") {
  Problem p = problem(2, 3, BackwardMode::Fused);
  p.memory.cap = PerStage::of(2);
  auto mem = only_issue(
      schedule(p, {"F0.s0 F1.s0 F2.s0 BW0.s0 BW1.s0 BW2.s0", "F0.s1 BW0.s1 F1.s1 BW1.s1 F2.s1 BW2.s1"}));
  CHECK(mem.kind == DiagKind::MemoryCap);
  CHECK(mem.position == 2);
  CHECK(mem.message == "rank 0 holds 3 after `F2.s0` (position 2), above its cap of 2");
  p.memory.cap = PerStage::list({3, 1});
  CHECK(verify(schedule(p, {"F0.s0 F1.s0 F2.s0 BW0.s0 BW1.s0 BW2.s0", "F0.s1 BW0.s1 F1.s1 BW1.s1 F2.s1 BW2.s1"}))
            .empty());
}

TEST_CASE("overlapped units must be one forward and one backward, disjoint") {
  Problem p = problem(2, 2, BackwardMode::Fused);
  Schedule s = schedule(p, {kOk0, kOk1});
  s.overlap = {{0}, {}};  // (F0.s0, F1.s0): two forwards
  CHECK(only_issue(s).kind == DiagKind::BadOverlap);
  s.overlap = {{}, {1}};  // (BW0.s1, F1.s1): fine, independent
  CHECK(verify(s).empty());
  s.overlap = {{}, {0}};  // (F0.s1, BW0.s1): BW0.s1 depends on its partner
  auto self = only_issue(s);
  CHECK(self.kind == DiagKind::BadOverlap);
  CHECK(self.message == "`BW0.s1` depends on `F0.s1` in the same overlapped unit, so the unit can never start");
}

TEST_CASE("render_order marks the spot") {
  Schedule s = schedule(problem(2, 2, BackwardMode::Fused), {kOk0, kOk1});
  s.overlap = {{}, {1}};
  CHECK(render_order(s, 1, 2) == "rank 1: F0.s1 (BW0.s1 >>F1.s1<<) BW1.s1\n");
}

TEST_CASE("render_order of a long order shows the actions around the mark") {
  Problem p = problem(1, 400, BackwardMode::Fused);
  std::string order;
  for (int mb = 0; mb < 400; ++mb) order += "F" + std::to_string(mb) + ".s0 ";
  for (int mb = 0; mb < 400; ++mb) order += "BW" + std::to_string(mb) + ".s0 ";
  Schedule s = schedule(p, {order});
  std::string r = render_order(s, 0, 300);
  CHECK(r.find("rank 0: [288 earlier] F288.s0") == 0);
  CHECK(r.find(">>F300.s0<<") != std::string::npos);
  CHECK(r.find("F312.s0 [487 more]\n") != std::string::npos);
  CHECK(r.size() < 400);
  CHECK(render_order(s, 0, 0).find("rank 0: >>F0.s0<< F1.s0") == 0);
  CHECK(render_order(s, 0, 799).find("[787 earlier] BW387.s0") != std::string::npos);
}
