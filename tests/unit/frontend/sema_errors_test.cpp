// Sema errors: one case per situation, with its kind, exact message and location; and the rule
// that a broken problem does not cascade into the schedule and expect checks.

#include <doctest/doctest.h>

#include "tests/unit/frontend/test_util.h"

using namespace schedc;
using namespace schedc::frontend;
using schedc::frontend::test::run;

namespace {

struct Case {
  const char* source;
  DiagKind kind;
  const char* message;
  int32_t line;
  int32_t col;
};

void check_single_error(const Case& c) {
  auto r = run(c.source);
  INFO("source:\n" << c.source << "\ndiagnostics:\n" << r.text);
  CHECK(!r.spec);
  REQUIRE(r.errors() == 1);
  CHECK(r.first().kind == c.kind);
  CHECK(r.first().message == c.message);
  CHECK(r.first().loc.line == c.line);
  CHECK(r.first().loc.col == c.col);
}

#define HEAD "ranks = 4\nmicrobatches = 8\n"

}  // namespace

TEST_CASE("sema errors: keys") {
  const Case cases[] = {
      {"pp = 4\nmicrobatches = 8\nranks = 4", DiagKind::UnknownKey, "unknown key `pp`; did you mean `ranks`?", 1, 1},
      {HEAD "vpp = 2", DiagKind::UnknownKey, "unknown key `vpp`; did you mean `stages_per_rank`?", 3, 1},
      {HEAD "num_microbatches = 8", DiagKind::UnknownKey,
       "unknown key `num_microbatches`; did you mean `microbatches`?", 3, 1},
      {HEAD "stage_per_rank = 2", DiagKind::UnknownKey, "unknown key `stage_per_rank`; did you mean `stages_per_rank`?",
       3, 1},
      {HEAD "Placement = looped", DiagKind::UnknownKey, "unknown key `Placement`; did you mean `placement`?", 3, 1},
      {HEAD "cap = 4", DiagKind::UnknownKey, "unknown key `cap`; did you mean `memory { cap = ... }`?", 3, 1},
      {HEAD "colour = red", DiagKind::UnknownKey,
       "unknown key `colour`, expected one of `ranks`, `stages_per_rank`, `microbatches`, `direction`, `directions`, "
       "`placement`, "
       "`stage_to_rank`, `backward`, `objective`, `recompute`, `cost`, `memory`, `model`, `layer`, `embedding`, `head`, "
       "`schedule`, `expect` or `runtime`",
       3, 1},
      {HEAD "cost { f = 1 }", DiagKind::UnknownKey, "unknown key `f` in `cost`; did you mean `F`?", 3, 8},
      {HEAD "cost { X = 1 }", DiagKind::UnknownKey,
       "unknown key `X` in `cost`, expected one of `F`, `B`, `W`, `comm`, `FB`, `action_overhead`, `message_overhead` or "
       "`R`",
       3, 8},
      {HEAD "memory { cpa = 1 }", DiagKind::UnknownKey, "unknown key `cpa` in `memory`; did you mean `cap`?", 3, 10},
      {HEAD "ranks = 5", DiagKind::DuplicateKey, "`ranks` is given twice", 3, 1},
      {HEAD "cost { F = 1\n F = 2 }", DiagKind::DuplicateKey, "`cost.F` is given twice", 4, 2},
      {HEAD "runtime { seed = 1  seed = 2 }", DiagKind::DuplicateKey, "`seed` in `runtime` is given twice", 3, 21},
      {HEAD "schedule = solve { time_limit = 1  time_limit = 2 }", DiagKind::DuplicateKey,
       "`time_limit` in `solve` is given twice", 3, 36},
      {"microbatches = 8", DiagKind::MissingKey,
       "missing key `ranks`, every spec sets the number of pipeline ranks, e.g. `ranks = 4`", 0, 0},
  };
  for (const Case& c : cases) check_single_error(c);
}

TEST_CASE("sema errors: a duplicate key has a note at the first one") {
  auto r = run(HEAD "microbatches = 4");
  REQUIRE(r.diags.size() == 2);
  CHECK(r.diags[1].severity == Severity::Note);
  CHECK(r.diags[1].message == "first given here");
  CHECK(r.diags[1].loc.line == 2);
}

TEST_CASE("sema errors: types") {
  const Case cases[] = {
      {"ranks = four\nmicrobatches = 8", DiagKind::WrongType, "`ranks` needs an integer, got name `four`", 1, 9},
      {"ranks = 4.5\nmicrobatches = 8", DiagKind::WrongType, "`ranks` needs an integer, got number `4.5`", 1, 9},
      {"ranks = [4]\nmicrobatches = 8", DiagKind::WrongType, "`ranks` needs an integer, got a list", 1, 9},
      {"ranks { }\nmicrobatches = 8", DiagKind::WrongType, "`ranks` needs an integer, got a block: write `ranks = ...`",
       1, 1},
      {HEAD "direction = 2", DiagKind::WrongType,
       "`direction` needs one of `single` or `bidirectional`, got number `2` (for any number of pipelines write "
       "`directions = 2`)",
       3, 13},
      {HEAD "directions = bidirectional", DiagKind::WrongType,
       "`directions` needs an integer, got name `bidirectional`", 3, 14},
      {HEAD "placement = \"looped\"", DiagKind::WrongType,
       "`placement` needs one of `looped`, `vshape`, `wave`, `custom` or `auto`, got string `\"looped\"`", 3, 13},
      {HEAD "cost = 1", DiagKind::WrongType,
       "`cost` is a block, write `cost { F = 1  B = 1  W = 1  comm = 0 }`, got number `1`", 3, 8},
      {HEAD "memory = none", DiagKind::WrongType,
       "`memory` is a block, write `memory { F = 1  B = -0.5  W = -0.5  cap = none }`, got name `none`", 3, 10},
      {HEAD "expect = 3", DiagKind::WrongType, "`expect` is a block, write `expect { makespan <= 40 }`, got number `3`",
       3, 10},
      {HEAD "runtime = mlp", DiagKind::WrongType,
       "`runtime` is a block, write `runtime { stage = mlp  seed = 1 }`, got name `mlp`", 3, 11},
      {HEAD "schedule { }", DiagKind::WrongType,
       "`schedule` needs a value, write `schedule = explicit { ... }`, `schedule = family NAME` or "
       "`schedule = solve`",
       3, 1},
      {HEAD "schedule = 3", DiagKind::WrongType,
       "`schedule` needs `explicit { ... }`, `family NAME` or `solve`, got number `3`", 3, 12},
      {HEAD "cost { F = one }", DiagKind::WrongType,
       "`cost.F` needs a number or a list of numbers (one per stage), got name `one`", 3, 12},
      {HEAD "cost { B = [1, x, 1, 1] }", DiagKind::WrongType,
       "`cost.B` lists hold numbers (one per stage), got name `x`", 3, 16},
      {HEAD "memory { cap = nothing }", DiagKind::WrongType,
       "`memory.cap` needs a number, a list (one per rank) or `none`, got name `nothing`", 3, 16},
      {HEAD "memory { cap = nnoe }", DiagKind::WrongType,
       "`memory.cap` needs a number, a list (one per rank) or `none`, got name `nnoe`; did you mean `none`?", 3, 16},
      {HEAD "placement = custom\nstage_to_rank = 0", DiagKind::WrongType,
       "`stage_to_rank` needs a list of ranks (one per stage), or one such list per direction, got number `0`", 4, 17},
      {HEAD "placement = custom\nstage_to_rank = [[0, 1, 2, 3], 1]", DiagKind::WrongType,
       "`stage_to_rank` holds either ranks or lists of ranks, not both, got number `1` after a list", 4, 32},
      {HEAD "placement = custom\nstage_to_rank = [0, 1, 2, x]", DiagKind::WrongType,
       "`stage_to_rank` entry needs an integer, got name `x`", 4, 27},
      {HEAD "runtime { dims = [1, [2]] }", DiagKind::WrongType,
       "`dims` in `runtime` can be a list of numbers only, got a list in the list", 3, 22},
  };
  for (const Case& c : cases) check_single_error(c);
}

TEST_CASE("sema errors: values and ranges (ir::validate mapped to the value)") {
  const Case cases[] = {
      {"ranks = 0\nmicrobatches = 8", DiagKind::OutOfRange, "`ranks` must be in 1..1024, got `0`", 1, 9},
      {"ranks = 1e12\nmicrobatches = 8", DiagKind::OutOfRange, "`ranks` must be in 1..1024, got `1e12`", 1, 9},
      {HEAD "stages_per_rank = 65", DiagKind::OutOfRange, "`stages_per_rank` must be in 1..64, got `65`", 3, 19},
      {"ranks = 1024\nmicrobatches = 65536", DiagKind::OutOfRange,
       "the problem has 201326592 actions, more than the limit of 4000000", 2, 16},
      {HEAD "placement = vshape\nstages_per_rank = 3", DiagKind::BadValue,
       "placement `vshape` needs `stages_per_rank` = 2, got `3`", 4, 19},
      {HEAD "placement = vshape", DiagKind::BadValue, "placement `vshape` needs `stages_per_rank` = 2, got `1`", 3, 13},
      {HEAD "placement = wave", DiagKind::BadValue, "placement `wave` needs `stages_per_rank` >= 2, got `1`", 3, 13},
      {"ranks = 4\nmicrobatches = 7\ndirection = bidirectional", DiagKind::BadValue,
       "direction `bidirectional` needs an even number of microbatches, got `7`", 2, 16},
      {"ranks = 4\nmicrobatches = 10\ndirections = 4", DiagKind::BadValue,
       "`directions` = 4 needs a number of microbatches divisible by 4 (an equal share per direction), got `10`", 2,
       16},
      {HEAD "directions = 65", DiagKind::OutOfRange, "`directions` must be in 1..64, got `65`", 3, 14},
      {HEAD "directions = [5, 2]", DiagKind::BadValue,
       "the stated microbatches per direction must be at least 1 each and sum to `microbatches` = 8, got a sum of 7", 2,
       16},
      {HEAD "directions = [8, 0]", DiagKind::BadValue,
       "the stated microbatches per direction must be at least 1 each and sum to `microbatches` = 8, got a sum of 8", 2,
       16},
      {HEAD "placement = vshap", DiagKind::BadValue,
       "unknown placement `vshap`, expected `looped`, `vshape`, `wave`, `custom` or `auto`; did you mean `vshape`?", 3,
       13},
      {HEAD "direction = both", DiagKind::BadValue, "unknown direction `both`, expected `single` or `bidirectional`", 3,
       13},
      {HEAD "backward = fuse", DiagKind::BadValue,
       "unknown backward `fuse`, expected `fused`, `split` or `mixed`; did you mean `fused`?", 3, 12},
      {HEAD "objective = min-makespan", DiagKind::BadValue,
       "unknown objective `min-makespan`, expected `makespan` or `max-span`", 3, 13},
      {HEAD "placement = custom", DiagKind::BadValue, "placement `custom` needs `stage_to_rank` with 1 list, got 0", 3,
       13},
      {HEAD "stage_to_rank = [0, 1, 2, 3]", DiagKind::BadValue,
       "`stage_to_rank` is only allowed with placement `custom`, got placement `looped`", 3, 17},
      {HEAD "placement = custom\nstage_to_rank = [0, 1, 2]", DiagKind::BadValue,
       "`stage_to_rank` needs one rank per stage (4), got 3", 4, 17},
      {HEAD "placement = custom\nstage_to_rank = [0, 1, 2, 4]", DiagKind::OutOfRange,
       "`stage_to_rank` entries must be ranks in 0..3, got `4`", 4, 17},
      {HEAD "cost { F = -1 }", DiagKind::OutOfRange, "`cost.F` must be a number in 0..1e15, got `-1`", 3, 12},
      {HEAD "cost { W = [1, 1, 1] }", DiagKind::BadValue, "`cost.W` needs one value per stage (4), got 3", 3, 12},
      {HEAD "memory { cap = [4, 4] }", DiagKind::BadValue, "`memory.cap` needs one value per rank (4), got 2", 3, 16},
      {HEAD "cost { comm = 2e16 }", DiagKind::OutOfRange, "`cost.comm` must be a number in 0..1e15, got `2e+16`", 3,
       15},
      // Values of real magnitude are accepted, unless the simulator's fixed-point sums could overflow.
      {HEAD "cost { F = 1e15  comm = 0.25 }", DiagKind::OutOfRange,
       "the costs are too large for exact timing: all durations and comm lags add up to 32000000000000088 time "
       "units at a resolution of 0.01, more than 11529215046068470; use a coarser unit or fewer decimals",
       3, 12},
      {HEAD "schedule = explicitly { }", DiagKind::BadValue,
       "unknown schedule source `explicitly`, expected `explicit { ... }`, `family NAME` or `solve`; did you mean "
       "`explicit`?",
       3, 12},
  };
  for (const Case& c : cases) check_single_error(c);
}

TEST_CASE("sema errors: explicit schedules") {
  const Case cases[] = {
      {HEAD "schedule = explicit { rank 0: X0.s0 rank 1: rank 2: rank 3: }", DiagKind::BadToken,
       "`X0.s0` is not an action token, expected KIND<mb>.s<stage> with KIND `F`, `B`, `W` or `BW`, e.g. `F0.s1`", 3,
       31},
      {HEAD "schedule = explicit { rank 0: bw0.s0 rank 1: rank 2: rank 3: }", DiagKind::BadToken,
       "`bw0.s0` is not an action token, expected KIND<mb>.s<stage> with KIND `F`, `B`, `W` or `BW`, e.g. `F0.s1`; "
       "did you mean `BW0.s0`?",
       3, 31},
      {HEAD "schedule = explicit { rank 0: F0.s4 rank 1: rank 2: rank 3: }", DiagKind::NoSuchStage,
       "`F0.s4` names stage 4, the problem has 4 stages (0..3)", 3, 31},
      {HEAD "schedule = explicit { rank 0: W8.s0 rank 1: rank 2: rank 3: }", DiagKind::NoSuchMicrobatch,
       "`W8.s0` names microbatch 8, the problem has 8 microbatches (0..7)", 3, 31},
      {HEAD "schedule = explicit { rank 0: rank 1: rank 2: rank 3: rank 7: }", DiagKind::NoSuchRank,
       "rank `7` does not exist, the problem has 4 ranks (0..3)", 3, 60},
      {HEAD "schedule = explicit { rank 0: rank 1: rank 2: rank 3: rank -1: }", DiagKind::NoSuchRank,
       "rank `-1` does not exist, the problem has 4 ranks (0..3)", 3, 60},
      {HEAD "schedule = explicit { rank 0: rank 1: rank 2: rank 3: rank 1.5: }", DiagKind::WrongType,
       "`rank` needs an integer, got number `1.5`", 3, 60},
      {HEAD "schedule = explicit { rank 0: rank 1: rank 2: rank 3: rank 1: }", DiagKind::DuplicateKey,
       "the order of rank `1` is given twice", 3, 55},
      {HEAD "schedule = explicit {\n rank 0:\n rank 1:\n rank 3:\n}", DiagKind::MissingKey,
       "the explicit schedule has no order for rank `2`, expected `rank 2: ...` (write `rank 2:` alone for a rank "
       "that does nothing)",
       3, 21},
      {HEAD "schedule = explicit { rank 0: }", DiagKind::MissingKey,
       "the explicit schedule has no order for ranks `1`, `2` and `3`, expected one `rank N: ...` per rank (4 ranks "
       "(0..3))",
       3, 21},
      {HEAD "schedule = explicit { rank 0: (F0.s0 B1.s0 W1.s0) rank 1: rank 2: rank 3: }", DiagKind::BadOverlap,
       "an overlapped unit `( ... )` holds two actions (one forward, one backward), got 3", 3, 31},
      {HEAD "schedule = explicit { rank 0: () rank 1: rank 2: rank 3: }", DiagKind::BadOverlap,
       "an overlapped unit `( ... )` holds two actions (one forward, one backward), got 0", 3, 31},
  };
  for (const Case& c : cases) check_single_error(c);
}

TEST_CASE("sema errors: many missing ranks are listed briefly") {
  auto r = run("ranks = 20\nmicrobatches = 1\nschedule = explicit { rank 5: }");
  REQUIRE(r.errors() == 1);
  CHECK(r.first().message ==
        "the explicit schedule has no order for ranks `0`, `1`, `2`, `3`, `4`, `6`, `7`, `8` and 11 more, expected one "
        "`rank N: ...` per rank (20 ranks (0..19))");
}

TEST_CASE("sema errors: expect") {
  const Case cases[] = {
      {HEAD "expect { makespn <= 3 }", DiagKind::UnknownKey,
       "unknown metric `makespn` in `expect`; did you mean `makespan`?", 3, 10},
      {HEAD "expect { optmal }", DiagKind::UnknownKey, "unknown metric `optmal` in `expect`; did you mean `optimal`?",
       3, 10},
      {HEAD "expect { throughput > 3 }", DiagKind::UnknownKey,
       "unknown metric `throughput` in `expect`, expected one of `makespan`, `max_rank_span`, `bubble_ratio`, "
       "`span_bubble_rate`, `peak_memory`, `busy`, `optimal` or `same_as`",
       3, 10},
      {HEAD "expect { makespan }", DiagKind::Syntax, "`makespan` needs a comparison and a value, e.g. `makespan <= 40`",
       3, 10},
      {HEAD "expect { optimal == 1 }", DiagKind::Syntax, "`optimal` stands alone, write `optimal`", 3, 18},
      {HEAD "expect { makespan[0] <= 3 }", DiagKind::WrongType,
       "`makespan` is one number for the whole schedule, it takes no `[rank]`; `peak_memory` and `busy` do", 3, 19},
      {HEAD "expect { peak_memory[4] <= 3 }", DiagKind::NoSuchRank,
       "rank `4` does not exist, the problem has 4 ranks (0..3)", 3, 22},
      {HEAD "expect { peak_memory[x] <= 3 }", DiagKind::WrongType, "the rank in `[...]` needs an integer, got name `x`",
       3, 22},
      {HEAD "expect { makespan <= fast }", DiagKind::WrongType, "`makespan` is compared with a number, got name `fast`",
       3, 22},
      {HEAD "expect { makespan = [1, 2, 3, 4] }", DiagKind::WrongType,
       "`makespan` is one number, compare it with a number, got a list (per-rank lists are for `peak_memory` and "
       "`busy`)",
       3, 21},
      {HEAD "expect { peak_memory <= [1, 2, 3, 4] }", DiagKind::BadValue,
       "a per-rank list is compared with `=` or `==`, got `<=`", 3, 22},
      {HEAD "expect { peak_memory = [1, 2, 3] }", DiagKind::BadValue,
       "`peak_memory` lists one value per rank (4), got 3", 3, 24},
      {HEAD "expect { busy = [1, 2, a, 4] }", DiagKind::WrongType, "`busy` lists hold numbers, got name `a`", 3, 24},
  };
  for (const Case& c : cases) check_single_error(c);
}

TEST_CASE("sema errors: every error of a file is reported, in source order") {
  auto r = run("pp = 4\nranks = 4\nmicrobatches = 8\ncost { F = x }\nmemory { cap = [1] }\n"
               "placement = loop\nexpect { makespn < 3 }\nruntime { a = 1  a = 2 }\n");
  std::vector<DiagKind> want = {DiagKind::UnknownKey, DiagKind::WrongType, DiagKind::BadValue, DiagKind::UnknownKey,
                                DiagKind::DuplicateKey};
  CHECK(r.kinds() == want);
  std::vector<int32_t> lines;
  for (const auto& d : r.diags)
    if (d.severity == Severity::Error) lines.push_back(d.loc.line);
  CHECK(lines == std::vector<int32_t>{1, 4, 6, 7, 8});
}

TEST_CASE("sema errors: a broken problem does not cascade into range checks") {
  // `ranks` is wrong: its default (1) must not make rank 3, stage 3 or the per-rank list look wrong.
  auto r = run("ranks = four\nmicrobatches = 8\ncost { F = [1, 1, 1, 1] }\n"
               "schedule = explicit { rank 0: F0.s0 rank 1: rank 2: rank 3: F0.s3 }\n"
               "expect { peak_memory = [1, 1, 1, 1]  busy[3] <= 3 }\n");
  CHECK(r.kinds() == std::vector<DiagKind>{DiagKind::WrongType});
  // ... but token syntax is still checked.
  auto r2 = run("ranks = four\nmicrobatches = 8\nschedule = explicit { rank 0: G0.s0 }\n");
  CHECK(r2.kinds() == std::vector<DiagKind>{DiagKind::WrongType, DiagKind::BadToken});
}

TEST_CASE("sema errors: syntax errors stop before sema") {
  auto r = run("ranks = \nmicrobatches = 8\ncolour = red\n");
  CHECK(r.kinds() == std::vector<DiagKind>{DiagKind::Syntax});
}

TEST_CASE("sema errors: an alias of a required key does not also report it missing") {
  auto r = run("pp = 4\nnum_microbatches = 8\n");
  CHECK(r.kinds() == std::vector<DiagKind>{DiagKind::UnknownKey, DiagKind::UnknownKey});
  // A key that is merely unknown does not hide a missing one.
  auto r2 = run("colour = 4\nmicrobatches = 8\n");
  CHECK(r2.kinds() == std::vector<DiagKind>{DiagKind::UnknownKey, DiagKind::MissingKey});
}
