// verify_program rejects malformed programs with a message that names the problem.

#include <doctest/doctest.h>

#include <algorithm>

#include "codegen/lower.h"
#include "codegen/verify_program.h"
#include "ir/verify.h"
#include "tests/common/builders.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

Schedule two_rank_gpipe() {
  return test::schedule(test::problem(2, 2, BackwardMode::Fused),
                        {"F0.s0 F1.s0 BW0.s0 BW1.s0", "F0.s1 F1.s1 BW0.s1 BW1.s1"});
}

std::string first_issue(const Schedule& s, const Program& p) {
  auto issues = codegen::verify_program(s, p);
  return issues.empty() ? "" : issues.front().message;
}

std::string all_issues(const Schedule& s, const Program& p) {
  std::string out;
  for (const auto& i : codegen::verify_program(s, p)) out += i.message + "\n";
  return out;
}

Op* find_op(RankProgram& rp, OpKind kind, int nth = 0) {
  for (Op& op : rp.ops)
    if (op.kind == kind && nth-- == 0) return &op;
  return nullptr;
}

}  // namespace

TEST_CASE("a well-formed lowering is accepted") {
  Schedule s = two_rank_gpipe();
  REQUIRE(verify(s).empty());
  CHECK(first_issue(s, codegen::lower(s)) == "");
}

TEST_CASE("receives posted out of channel order break first-in first-out matching") {
  Schedule s = two_rank_gpipe();
  Program p = codegen::lower(s);
  // Rank 1 posts its two activation receives in one group each; swap the groups' contents.
  RankProgram& r1 = p.ranks[1];
  std::vector<size_t> recv_groups;
  for (size_t g = 0; g < r1.groups.size(); ++g)
    if (p.message(r1.groups[g].transfers.front()).dst == RankId(1) &&
        p.message(r1.groups[g].transfers.front()).kind == MessageKind::Activation)
      recv_groups.push_back(g);
  REQUIRE(recv_groups.size() == 2);
  std::swap(r1.groups[recv_groups[0]], r1.groups[recv_groups[1]]);
  for (Op& op : r1.ops)
    if (op.kind == OpKind::Wait && op.group == static_cast<int32_t>(recv_groups[0]))
      op.group = static_cast<int32_t>(recv_groups[1]);
    else if (op.kind == OpKind::Wait && op.group == static_cast<int32_t>(recv_groups[1]))
      op.group = static_cast<int32_t>(recv_groups[0]);
  std::string msg = all_issues(s, p);
  INFO(msg);
  CHECK(msg.find("channel 0->1: send #0 carries `F0.s0` but receive #0 expects `F1.s0` (first in, first out)") !=
        std::string::npos);
}

TEST_CASE("a compute that reads a receive it never waited for is rejected") {
  Schedule s = two_rank_gpipe();
  Program p = codegen::lower(s);
  auto& ops = p.ranks[1].ops;
  ops.erase(std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::Wait; }));
  CHECK(first_issue(s, p).find("rank 1 runs `F0.s1` at op 1 without waiting for `recv F0.s0 <- r0 #0`") !=
        std::string::npos);
}

TEST_CASE("a send posted before its producer is rejected") {
  Schedule s = two_rank_gpipe();
  Program p = codegen::lower(s);
  auto& ops = p.ranks[0].ops;
  REQUIRE(ops[0].kind == OpKind::Compute);
  REQUIRE(ops[1].kind == OpKind::Post);
  std::swap(ops[0], ops[1]);
  CHECK(first_issue(s, p).find("posts `send F0.s0 -> r1 #0` at op 0, before its producer at op 1") !=
        std::string::npos);
}

TEST_CASE("a missing message and a program that computes the wrong unit are rejected") {
  Schedule s = two_rank_gpipe();
  Program p = codegen::lower(s);
  Op* c = find_op(p.ranks[0], OpKind::Compute, 1);
  REQUIRE(c);
  c->action = F(0, 0);
  CHECK(first_issue(s, p).find("is not the schedule's unit at position 1") != std::string::npos);
}

TEST_CASE("non-blocking sends still deadlock when groups complete in posting order") {
  Schedule s = test::schedule(test::problem(2, 2, BackwardMode::Fused),
                              {"F0.s0 F1.s0 BW0.s0 BW1.s0", "F0.s1 BW0.s1 F1.s1 BW1.s1"});
  REQUIRE(verify(s).empty());
  // The naive lowering without its send waits: sends are asynchronous, but rank 0's receive of
  // BW0.s1 sits behind its send of F1.s0, which rank 1 receives only after its send of BW0.s1.
  Program p = codegen::lower(s, {codegen::LowerStrategy::Naive});
  for (size_t r = 0; r < 2; ++r) {
    auto& ops = p.ranks[r].ops;
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [&](const Op& op) {
                               return op.kind == OpKind::Wait &&
                                      p.message(op.needs.front()).src == RankId(static_cast<int32_t>(r));
                             }),
              ops.end());
  }
  auto issues = codegen::verify_program(s, p);
  REQUIRE(issues.size() == 1);
  INFO(issues.front().message);
  CHECK(issues.front().message.find("posted its side in g") != std::string::npos);
  CHECK(issues.front().message.find("behind unfinished g") != std::string::npos);
  CHECK(issues.front().message.find("a cycle back to rank") != std::string::npos);
}
