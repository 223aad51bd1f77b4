// Lowering: hand-checked programs, and properties (verify_program accepts, FIFO channels, no
// same-rank messages, buffers only add memory) on random valid schedules and on every family.

#include <doctest/doctest.h>

#include <set>

#include "codegen/lower.h"
#include "codegen/verify_program.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

Schedule make(const Problem& p, std::vector<std::vector<Action>> ranks) {
  Schedule s;
  s.problem = p;
  s.ranks = std::move(ranks);
  return s;
}

std::string issues_text(const std::vector<codegen::ProgramIssue>& issues) {
  std::string out;
  for (const auto& i : issues) out += i.message + "\n";
  return out;
}

// Properties every lowered program has, checked here independently of verify_program.
void check_properties(const Schedule& s, const Program& p) {
  const Problem& pb = s.problem;
  std::set<std::pair<int, int>> edges;
  for (const Message& m : p.messages) {
    CHECK(m.src != m.dst);
    CHECK(rank_of(pb, m.producer) == m.src);
    CHECK(rank_of(pb, m.consumer) == m.dst);
    CHECK(edges.insert({action_id(pb, m.producer).value, action_id(pb, m.consumer).value}).second);
  }
  // FIFO: per channel, the k-th send posted by src and the k-th receive posted by dst match.
  size_t R = static_cast<size_t>(pb.ranks);
  std::vector<std::vector<Action>> sent(R * R), received(R * R);
  for (size_t r = 0; r < R; ++r)
    for (const Op& op : p.ranks[r].ops)
      if (op.kind == OpKind::Post)
        for (MessageId id : p.ranks[r].groups[static_cast<size_t>(op.group)].transfers) {
          const Message& m = p.message(id);
          size_t ch = m.src.index() * R + m.dst.index();
          (m.src.index() == r ? sent : received)[ch].push_back(m.producer);
        }
  for (size_t ch = 0; ch < R * R; ++ch) CHECK(sent[ch] == received[ch]);
  // Buffers only add memory.
  std::vector<double> schedule_peak = peak_memory(s);
  for (size_t r = 0; r < R; ++r) CHECK(p.ranks[r].peak_memory >= schedule_peak[r] - 1e-9);
}

// The random problems of the property tests: up to 5 ranks and 6 microbatches.
constexpr test::RandomProblemOptions kProblems{5, 6, true};

// A random valid schedule of `p`; with `with_overlap`, its orders are drawn with many forward and
// backward neighbours and some of those become overlapped F&B units.
Schedule random_schedule(const Problem& p, test::Rng& rng, bool with_overlap) {
  if (!with_overlap) return test::random_valid(p, rng);
  Schedule s = test::random_valid_paired(p, rng);
  test::add_random_overlap(s, rng);
  return s;
}

}  // namespace

TEST_CASE("1F1B on two ranks: grouped send/recv pairs, FIFO channels, deadlock-free") {
  Problem p = test::problem(2, 3, BackwardMode::Fused);
  Schedule s = make(p, {{F(0, 0), F(1, 0), BW(0, 0), F(2, 0), BW(1, 0), BW(2, 0)},
                        {F(0, 1), BW(0, 1), F(1, 1), BW(1, 1), F(2, 1), BW(2, 1)}});
  REQUIRE(verify(s).empty());
  Program prog = codegen::lower(s);
  CHECK(prog.messages.size() == 6);
  CHECK(issues_text(codegen::verify_program(s, prog)) == "");
  check_properties(s, prog);
  std::string text = format_program(prog);
  // Rank 0 sends F1.s0 and receives BW0.s1 in one group (Megatron's send_forward_recv_backward).
  CHECK(text.find("post g1 {send F1.s0 -> r1 #1}") != std::string::npos);
  CHECK(text.find("{recv BW0.s1 <- r1 #0") != std::string::npos);
  CHECK(text.find("wait all") != std::string::npos);
}

TEST_CASE("the naive lowering of 1F1B deadlocks under rendezvous, and the cycle is printed") {
  Problem p = test::problem(2, 2, BackwardMode::Fused);
  // Rank 1 receives F1.s0 only after sending BW0.s1, while rank 0 sends F1.s0 before receiving
  // BW0.s1: blocking send then receive on both sides.
  Schedule s = make(p, {{F(0, 0), F(1, 0), BW(0, 0), BW(1, 0)}, {F(0, 1), BW(0, 1), F(1, 1), BW(1, 1)}});
  REQUIRE(verify(s).empty());
  Program naive = codegen::lower(s, {codegen::LowerStrategy::Naive});
  auto issues = codegen::verify_program(s, naive);
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].is_bug);
  CHECK(issues[0].message.find("deadlocks") != std::string::npos);
  CHECK(issues[0].message.find("rank 0 is stuck at op 5 (`wait g1 (F1.s0)`) until `send F1.s0 -> r1 #1` completes") !=
        std::string::npos);
  CHECK(issues[0].message.find("a cycle back to rank 0") != std::string::npos);
  Program good = codegen::lower(s);
  CHECK(issues_text(codegen::verify_program(s, good)) == "");
}

TEST_CASE("the V-turn stays on its rank: no message between stages of one rank") {
  Problem p = test::problem(2, 1, BackwardMode::Split);
  p.stages_per_rank = 2;
  p.placement = PlacementKind::VShape;
  // Stages 0,3 on rank 0 and 1,2 on rank 1: F1->F2 and B2->B1 stay on rank 1.
  Schedule s = make(p, {{F(0, 0), F(0, 3), B(0, 3), W(0, 3), B(0, 0), W(0, 0)},
                        {F(0, 1), F(0, 2), B(0, 2), B(0, 1), W(0, 2), W(0, 1)}});
  REQUIRE(verify(s).empty());
  Program prog = codegen::lower(s);
  CHECK(issues_text(codegen::verify_program(s, prog)) == "");
  CHECK(prog.messages.size() == 4);  // F0.s0->r1, F0.s2->r0, B0.s3->r1, B0.s1->r0
  for (const Message& m : prog.messages) CHECK(m.src != m.dst);
}

TEST_CASE("receives posted ahead of their consumer count as memory, and a tight cap is reported") {
  Problem p = test::problem(2, 2, BackwardMode::Fused);
  // Rank 1 receives F1.s0 while it still has BW0.s1 to run: the buffer is held across BW0.s1.
  Schedule s = make(p, {{F(0, 0), F(1, 0), BW(0, 0), BW(1, 0)}, {F(0, 1), BW(0, 1), F(1, 1), BW(1, 1)}});
  Program prog = codegen::lower(s);
  CHECK(prog.ranks[1].peak_memory == 1);  // F0.s1's activations, then BW0.s1 frees them
  // Lowered so that rank 1 posts the receive of F1.s0 together with the send of BW0.s1, after it.
  CHECK(format_program(prog).find("post g1 {recv F1.s0 <- r0 #1, send BW0.s1 -> r0 #0}") != std::string::npos);
}

TEST_CASE("property: random valid schedules lower to verified programs, with both strategies") {
  test::Rng rng(20240611);
  int checked = 0, with_overlap = 0;
  for (int iter = 0; iter < 600; ++iter) {
    Problem p = test::random_problem(rng, kProblems);
    REQUIRE(validate(p).empty());
    Schedule s = random_schedule(p, rng, iter % 2 == 1);
    auto vi = verify(s);
    REQUIRE_MESSAGE(vi.empty(), vi.front().message);
    with_overlap += s.has_overlap();
    for (auto strategy : {codegen::LowerStrategy::Prefetch, codegen::LowerStrategy::JustInTime}) {
      Program prog = codegen::lower(s, {strategy});
      auto issues = codegen::verify_program(s, prog);
      INFO("iteration ", iter, "\n", format_program(prog));
      CHECK(issues_text(issues) == "");
      check_properties(s, prog);
    }
    ++checked;
  }
  CHECK(checked == 600);
  CHECK(with_overlap > 50);
}

TEST_CASE("property: lowering is deterministic") {
  test::Rng rng(7);
  for (int iter = 0; iter < 50; ++iter) {
    Problem p = test::random_problem(rng, kProblems);
    Schedule s = random_schedule(p, rng, true);
    CHECK(format_program(codegen::lower(s)) == format_program(codegen::lower(s)));
  }
}

TEST_CASE("property: every family on a grid lowers to a verified program; just-in-time adds no memory") {
  REQUIRE(!solver::families().empty());
  int lowered = 0, fell_back = 0;
  for (const solver::FamilyInfo& fam : solver::families())
    for (int pp : {2, 3, 4, 6})
      for (int vpp : {1, 2, 3})
        for (int m : {1, 2, 4, 6, 8, 12}) {
          Problem p = test::problem(pp, m, BackwardMode::Split);
          p.stages_per_rank = vpp;
          solver::apply_family_defaults(fam, {ir::Field::Ranks, ir::Field::Microbatches, ir::Field::StagesPerRank}, p);
          if (fam.stages_per_rank != 0 && vpp != fam.stages_per_rank) continue;
          if (!validate(p).empty()) continue;
          SourceManager sm;
          Diagnostics diags(&sm);
          auto s = solver::generate_family(fam.name, p, {}, SourceLoc{}, diags);
          if (!s) continue;  // the family's constraints exclude this point
          INFO(fam.name, " pp=", pp, " vpp=", vpp, " m=", m);
          std::vector<double> peaks = peak_memory(*s);
          for (auto strategy : {codegen::LowerStrategy::Prefetch, codegen::LowerStrategy::JustInTime}) {
            Program prog = codegen::lower(*s, {strategy});
            CHECK(issues_text(codegen::verify_program(*s, prog)) == "");
            check_properties(*s, prog);
            if (strategy == codegen::LowerStrategy::JustInTime)
              for (size_t r = 0; r < peaks.size(); ++r) CHECK(prog.ranks[r].peak_memory == peaks[r]);
          }
          // With every rank's cap at the schedule's own peak, Auto still fits.
          Schedule capped = *s;
          capped.problem.memory.cap = PerStage::list(peaks);
          Program prog = codegen::lower(capped);
          CHECK(issues_text(codegen::verify_program(capped, prog)) == "");
          fell_back += prog.strategy == "just-in-time";
          ++lowered;
        }
  MESSAGE("lowered ", lowered, " family schedules; ", fell_back, " needed just-in-time receives to fit their cap");
  CHECK(lowered >= 10 * static_cast<int>(solver::families().size()) / 2);
  CHECK(fell_back > 0);
}
