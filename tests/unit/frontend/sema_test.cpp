// Valid specs: every key, every value form, defaults, `given`, backward inference.

#include <doctest/doctest.h>

#include "tests/unit/frontend/test_util.h"

using namespace schedc;
using namespace schedc::frontend;
using schedc::frontend::test::kHead;
using schedc::frontend::test::run;

namespace {

std::string with_head(std::string_view rest) { return std::string(kHead) + std::string(rest); }

}  // namespace

TEST_CASE("sema: the smallest spec takes every default") {
  Spec s = SPEC_OF("ranks = 4\nmicrobatches = 8\n");
  const ir::Problem& p = s.problem;
  CHECK(p.ranks == 4);
  CHECK(p.microbatches == 8);
  CHECK(p.stages_per_rank == 1);
  CHECK(p.directions == 1);
  CHECK(p.placement == ir::PlacementKind::Looped);
  CHECK(p.backward == ir::BackwardMode::Split);
  CHECK(p.objective == ir::Objective::Makespan);
  CHECK(p.cost == ir::CostModel{});
  CHECK(p.memory == ir::MemoryModel{});
  CHECK(!p.memory.cap);
  CHECK(s.schedule.kind == SourceKind::None);
  CHECK(s.expect.empty());
  CHECK(s.runtime.empty());
  CHECK(s.given.size() == 2);
  CHECK(s.given.at(ir::Field::Ranks).line == 1);
  CHECK(s.given.at(ir::Field::Ranks).col == 9);
  CHECK(s.given.at(ir::Field::Microbatches).line == 2);
  CHECK(!s.is_given(ir::Field::Backward));
}

TEST_CASE("sema: `directions = k` sets any number of pipelines; with `direction` it is given twice") {
  Spec s = SPEC_OF("ranks = 4\nmicrobatches = 8\ndirections = 4\n");
  CHECK(s.problem.directions == 4);
  CHECK(s.given.at(ir::Field::Direction).line == 3);
  CHECK(s.given.at(ir::Field::Direction).col == 14);
  Spec stated = SPEC_OF("ranks = 4\nmicrobatches = 8\ndirections = [5, 3]\n");
  CHECK(stated.problem.directions == 2);
  CHECK(stated.problem.direction_microbatches == std::vector<int32_t>{5, 3});
  CHECK(stated.problem.direction_of(ir::MbId(5)) == 1);
  Spec one = SPEC_OF("ranks = 4\nmicrobatches = 8\ndirections = 1\n");
  CHECK(one.problem.directions == 1);
  auto r = run("ranks = 4\nmicrobatches = 8\ndirection = bidirectional\ndirections = 4\n");
  REQUIRE(!r.diags.empty());
  CHECK(r.diags[0].kind == DiagKind::DuplicateKey);
  CHECK(r.diags[0].message == "the number of directions (`direction` or `directions`) is given twice");
  CHECK(r.diags[0].loc.line == 4);
}

TEST_CASE("sema: every problem key") {
  Spec s = SPEC_OF(
      "ranks = 2\nstages_per_rank = 2\nmicrobatches = 4\ndirection = bidirectional\nplacement = custom\n"
      "stage_to_rank = [[0, 1, 1, 0], [1, 0, 0, 1]]\nbackward = mixed\nobjective = max-span\nrecompute = all\n"
      "cost { F = [1, 2, 3, 4.5]  B = 2  W = 0.5  comm = 0.25  FB = 3  action_overhead = 0.02  message_overhead = 0.5 "
      "R = [1, 1, 2, 2] }\n"
      "memory { F = 2  B = [-1, -1, -1, -1]  W = -1  cap = [8, 6]  input = 0.5 }\n");
  const ir::Problem& p = s.problem;
  CHECK(p.ranks == 2);
  CHECK(p.stages_per_rank == 2);
  CHECK(p.microbatches == 4);
  CHECK(p.directions == 2);
  CHECK(p.placement == ir::PlacementKind::Custom);
  CHECK(p.stage_to_rank == std::vector<std::vector<int32_t>>{{0, 1, 1, 0}, {1, 0, 0, 1}});
  CHECK(p.backward == ir::BackwardMode::Mixed);
  CHECK(p.objective == ir::Objective::MaxSpan);
  CHECK(p.recompute == ir::Recompute::All);
  REQUIRE(p.cost.R);
  CHECK(*p.cost.R == ir::PerStage::list({1, 1, 2, 2}));
  REQUIRE(p.memory.input);
  CHECK(*p.memory.input == ir::PerStage::of(0.5));
  CHECK(p.cost.F == ir::PerStage::list({1, 2, 3, 4.5}));
  CHECK(p.cost.B == ir::PerStage::of(2));
  CHECK(p.cost.W == ir::PerStage::of(0.5));
  CHECK(p.cost.comm == 0.25);
  REQUIRE(p.cost.FB);
  CHECK(*p.cost.FB == ir::PerStage::of(3));
  CHECK(p.cost.action_overhead == 0.02);
  CHECK(p.cost.message_overhead == 0.5);
  CHECK(p.memory.F == ir::PerStage::of(2));
  CHECK(p.memory.B == ir::PerStage::list({-1, -1, -1, -1}));
  REQUIRE(p.memory.cap);
  CHECK(*p.memory.cap == ir::PerStage::list({8, 6}));
  for (ir::Field f : ir::kProblemFields) {
    if (f == ir::Field::MemoryStatic) continue;  // the spec has no `static`
    INFO(ir::to_string(f));
    CHECK(s.is_given(f));
  }
  CHECK(s.given.size() == 22);
  // Each location is of the value.
  CHECK(s.given.at(ir::Field::CostComm).line == 10);
  CHECK(s.given.at(ir::Field::CostComm).col == 51);
  CHECK(s.given.at(ir::Field::StageToRank).col == 17);
}

TEST_CASE("sema: single-direction custom placement takes a flat list") {
  Spec s = SPEC_OF("ranks = 2\nmicrobatches = 2\nplacement = custom\nstage_to_rank = [1, 0]\n");
  CHECK(s.problem.stage_to_rank == std::vector<std::vector<int32_t>>{{1, 0}});
}

TEST_CASE("sema: memory cap forms") {
  CHECK(!SPEC_OF(with_head("memory { cap = none }")).problem.memory.cap);
  CHECK(SPEC_OF(with_head("memory { cap = none }")).is_given(ir::Field::MemoryCap));
  CHECK(*SPEC_OF(with_head("memory { cap = 4.5 }")).problem.memory.cap == ir::PerStage::of(4.5));
  CHECK(*SPEC_OF(with_head("memory { cap = [4, 3, 2, 1] }")).problem.memory.cap == ir::PerStage::list({4, 3, 2, 1}));
}

TEST_CASE("sema: enum spellings") {
  CHECK(SPEC_OF(with_head("objective = max_span")).problem.objective == ir::Objective::MaxSpan);
  CHECK(SPEC_OF(with_head("objective = makespan")).problem.objective == ir::Objective::Makespan);
  CHECK(SPEC_OF(with_head("placement = wave\nstages_per_rank = 2")).problem.placement == ir::PlacementKind::Wave);
  CHECK(SPEC_OF(with_head("placement = vshape\nstages_per_rank = 2")).problem.placement == ir::PlacementKind::VShape);
  CHECK(SPEC_OF(with_head("backward = fused")).problem.backward == ir::BackwardMode::Fused);
}

TEST_CASE("sema: numbers in every notation") {
  Spec s = SPEC_OF(
      with_head("cost { F = 1.5e0  B = +2  W = .5  comm = 1e-3 }\nmemory { F = 5e-1  B = -0.25  W = -25e-2 }"));
  CHECK(s.problem.cost.F.uniform == 1.5);
  CHECK(s.problem.cost.B.uniform == 2);
  CHECK(s.problem.cost.W.uniform == 0.5);
  CHECK(s.problem.cost.comm == 0.001);
  CHECK(s.problem.memory.B.uniform == -0.25);
  CHECK(s.problem.memory.W.uniform == -0.25);
  CHECK(SPEC_OF("ranks = 4.0\nmicrobatches = 8e0").problem.ranks == 4);
}

TEST_CASE("sema: separators: newlines, semicolons, commas in blocks, several entries on a line") {
  Spec s = SPEC_OF("ranks = 4; microbatches = 8 stages_per_rank = 1\ncost { F = 2, B = 3; W = 4 }\n");
  CHECK(s.problem.microbatches == 8);
  CHECK(s.problem.cost.F.uniform == 2);
  CHECK(s.problem.cost.B.uniform == 3);
  CHECK(s.problem.cost.W.uniform == 4);
}

TEST_CASE("sema: family source with parameters") {
  Spec s = SPEC_OF(with_head("schedule = family interleaved-1f1b { group_size = 4  mode = fast  note = \"x y\"  "
                             "weights = [1, 2] }"));
  CHECK(s.schedule.kind == SourceKind::Family);
  CHECK(s.schedule.family == "interleaved-1f1b");
  CHECK(s.schedule.loc.line == 3);
  CHECK(s.schedule.loc.col == 12);
  REQUIRE(s.schedule.params.items.size() == 4);
  CHECK(s.schedule.params.find("group_size")->number() == 4);
  CHECK(s.schedule.params.find("mode")->string() == "fast");
  CHECK(s.schedule.params.find("note")->string() == "x y");
  CHECK(s.schedule.params.find("weights")->list() == std::vector<double>{1, 2});
  CHECK(s.schedule.params.find("group_size")->value_loc.col == 51);
  // A family leaves `backward` open: it is neither set nor given.
  CHECK(!s.is_given(ir::Field::Backward));
  CHECK(s.problem.backward == ir::BackwardMode::Split);
  CHECK(SPEC_OF(with_head("schedule = family 1f1b")).schedule.params.empty());
}

TEST_CASE("sema: solve source with options") {
  Spec s = SPEC_OF(with_head("schedule = solve { time_limit = 10  deterministic = true }"));
  CHECK(s.schedule.kind == SourceKind::Solve);
  CHECK(s.schedule.params.find("time_limit")->number() == 10);
  CHECK(s.schedule.params.find("deterministic")->string() == "true");
  CHECK(SPEC_OF(with_head("schedule = solve")).schedule.kind == SourceKind::Solve);
}

TEST_CASE("sema: explicit orders, token locations and overlapped units") {
  Spec s = SPEC_OF("ranks = 2\nmicrobatches = 2\nschedule = explicit {\n"
                   "  rank 1: F0.s1 BW0.s1 F1.s1 BW1.s1\n"
                   "  rank 0: F0.s0 (F1.s0 BW0.s0) BW1.s0\n}\n");
  const ScheduleSource& src = s.schedule;
  CHECK(src.kind == SourceKind::Explicit);
  REQUIRE(src.ranks.size() == 2);
  CHECK(src.ranks[0] == std::vector<ir::Action>{ir::F(0, 0), ir::F(1, 0), ir::BW(0, 0), ir::BW(1, 0)});
  CHECK(src.ranks[1] == std::vector<ir::Action>{ir::F(0, 1), ir::BW(0, 1), ir::F(1, 1), ir::BW(1, 1)});
  CHECK(src.overlap == std::vector<std::vector<int32_t>>{{1}, {}});
  REQUIRE(src.token_locs.size() == 2);
  CHECK(src.token_locs[0][2].line == 5);
  CHECK(src.token_locs[0][2].col == 24);
  CHECK(src.token_locs[1][0].line == 4);
}

TEST_CASE("sema: an explicit rank may be empty") {
  // Custom placement can leave a rank without stages; it still writes its (empty) order.
  Spec s = SPEC_OF("ranks = 3\nmicrobatches = 1\nplacement = custom\nstage_to_rank = [0, 1, 1]\n"
                   "schedule = explicit { rank 0: F0.s0 B0.s0 W0.s0\n rank 1: F0.s1 F0.s2 B0.s2 W0.s2 B0.s1 W0.s1\n"
                   " rank 2: }");
  CHECK(s.schedule.ranks.size() == 3);
  CHECK(s.schedule.ranks[2].empty());
}

TEST_CASE("sema: backward inferred from explicit tokens when not written") {
  auto backward_of = [](const char* orders) {
    return SPEC_OF(std::string("ranks = 1\nmicrobatches = 2\nschedule = explicit { rank 0: ") + orders + " }")
        .problem.backward;
  };
  CHECK(backward_of("F0.s0 BW0.s0 F1.s0 BW1.s0") == ir::BackwardMode::Fused);
  CHECK(backward_of("F0.s0 B0.s0 W0.s0 F1.s0 B1.s0 W1.s0") == ir::BackwardMode::Split);
  CHECK(backward_of("F0.s0 BW0.s0 F1.s0 B1.s0 W1.s0") == ir::BackwardMode::Mixed);
  CHECK(backward_of("F0.s0 F1.s0") == ir::BackwardMode::Split);
  Spec inferred = SPEC_OF("ranks = 1\nmicrobatches = 1\nschedule = explicit { rank 0: F0.s0 BW0.s0 }");
  CHECK(!inferred.is_given(ir::Field::Backward));
  // Written wins, and is given.
  Spec written = SPEC_OF("ranks = 1\nmicrobatches = 1\nbackward = split\nschedule = explicit { rank 0: F0.s0 BW0.s0 }");
  CHECK(written.problem.backward == ir::BackwardMode::Split);
  CHECK(written.is_given(ir::Field::Backward));
}

TEST_CASE("sema: expect clauses of every form") {
  Spec s = SPEC_OF(with_head("expect {\n  makespan == 44\n  max_rank_span <= 40.5\n  bubble_ratio < 0.25\n"
                             "  span_bubble_rate >= 0\n  busy > 1\n  peak_memory[3] <= 4\n"
                             "  peak_memory = [4, 3, 2, 1]\n  busy == [1, 1, 1, 1]\n  optimal\n  same_as zb-h1\n"
                             "  max-rank-span = 7\n}"));
  using E = ir::Expectation;
  REQUIRE(s.expect.size() == 11);
  CHECK(s.expect[0].kind == E::Kind::MetricBound);
  CHECK(s.expect[0].metric == ir::Metric::Makespan);
  CHECK(s.expect[0].cmp == ir::Cmp::Eq);
  CHECK(s.expect[0].value == 44);
  CHECK(s.expect[0].rank == -1);
  CHECK(s.expect[0].loc.line == 4);
  CHECK(s.expect[0].loc.col == 3);
  CHECK(s.expect[1].cmp == ir::Cmp::Le);
  CHECK(s.expect[1].value == 40.5);
  CHECK(s.expect[2].cmp == ir::Cmp::Lt);
  CHECK(s.expect[3].cmp == ir::Cmp::Ge);
  CHECK(s.expect[4].cmp == ir::Cmp::Gt);
  CHECK(s.expect[4].metric == ir::Metric::Busy);
  CHECK(s.expect[5].metric == ir::Metric::PeakMemory);
  CHECK(s.expect[5].rank == 3);
  CHECK(s.expect[6].kind == E::Kind::PerRank);
  CHECK(s.expect[6].values == std::vector<double>{4, 3, 2, 1});
  CHECK(s.expect[7].kind == E::Kind::PerRank);
  CHECK(s.expect[7].metric == ir::Metric::Busy);
  CHECK(s.expect[8].kind == E::Kind::Optimal);
  CHECK(s.expect[9].kind == E::Kind::SameAs);
  CHECK(s.expect[9].family == "zb-h1");
  CHECK(s.expect[10].metric == ir::Metric::MaxRankSpan);
  CHECK(s.expect[10].cmp == ir::Cmp::Eq);
}

TEST_CASE("sema: runtime block keeps its pairs in order") {
  Spec s = SPEC_OF(with_head("runtime { stage = mlp  hidden = 64  layers = 2  dtype = fp64  seed = 1  "
                             "out = \"trace.json\"  dims = [64, 128] }"));
  REQUIRE(s.runtime.items.size() == 7);
  CHECK(s.runtime.items[0].key == "stage");
  CHECK(s.runtime.items[0].string() == "mlp");
  CHECK(s.runtime.items[1].number() == 64);
  CHECK(s.runtime.items[5].string() == "trace.json");
  CHECK(s.runtime.items[6].list() == std::vector<double>{64, 128});
  CHECK(s.runtime_loc.line == 3);
  CHECK(s.runtime.items[0].loc.col == 11);
}

TEST_CASE("sema: keys may come in any order and blocks may be empty") {
  Spec s = SPEC_OF("cost { }\nmemory {}\nexpect { }\nruntime { }\nmicrobatches = 2\nranks = 2\n");
  CHECK(s.problem.ranks == 2);
  CHECK(s.problem.cost == ir::CostModel{});
}

TEST_CASE("sema: the empty file and a comment-only file lack the required keys") {
  for (const char* src : {"", "# nothing\n\n"}) {
    auto r = run(src);
    CHECK(!r.spec);
    CHECK(r.kinds() == std::vector<DiagKind>{DiagKind::MissingKey, DiagKind::MissingKey});
  }
}

TEST_CASE("sema: `stages_per_rank = auto` states one stage per rank and marks the spec") {
  Spec s = SPEC_OF("ranks = 4\nmicrobatches = 8\nstages_per_rank = auto\ncost { F = [4, 4, 4, 6] }\n");
  CHECK(s.stages_per_rank_auto);
  CHECK(s.problem.stages_per_rank == 1);
  CHECK(s.given.at(ir::Field::StagesPerRank).col == 19);
  CHECK_FALSE(SPEC_OF("ranks = 4\nmicrobatches = 8\nstages_per_rank = 2\n").stages_per_rank_auto);
  // Another word is still an error.
  auto r = run("ranks = 4\nmicrobatches = 8\nstages_per_rank = many\n");
  CHECK(!r.spec);
}

TEST_CASE("sema: overheads take time units like comm, and one number each") {
  Spec s = SPEC_OF("ranks = 2\nmicrobatches = 4\ncost { F = 2ms  B = 2ms  W = 1ms  action_overhead = 20us  "
                   "message_overhead = 15us }\n");
  CHECK(s.problem.time_unit == "us");
  CHECK(s.problem.cost.F == ir::PerStage::of(2000));
  CHECK(s.problem.cost.action_overhead == 20);
  CHECK(s.problem.cost.message_overhead == 15);
  auto r = run("ranks = 2\nmicrobatches = 4\ncost { action_overhead = [1, 2] }\n");
  CHECK(!r.spec);
  REQUIRE(r.errors() >= 1);
  CHECK(r.first().kind == DiagKind::WrongType);
  CHECK(r.first().message == "`cost.action_overhead` needs a number (one overhead for every action), got a list");
}
