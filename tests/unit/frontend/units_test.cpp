// Units (`12.5ms`, `1.2GiB`), the memory defaults that follow memory.F, and the balance check:
// what a spec in real units becomes, and every way of getting units wrong.

#include <doctest/doctest.h>

#include "support/units.h"
#include "tests/unit/frontend/test_util.h"

using namespace schedc;
using namespace schedc::frontend;
using schedc::frontend::test::run;

namespace {

#define HEAD "ranks = 2\nmicrobatches = 4\n"

void check_error(const std::string& source, DiagKind kind, const std::string& message, int32_t line, int32_t col) {
  auto r = run(source);
  INFO("source:\n" << source << "\ndiagnostics:\n" << r.text);
  CHECK(!r.spec);
  REQUIRE(r.errors() >= 1);
  CHECK(r.first().kind == kind);
  CHECK(r.first().message == message);
  CHECK(r.first().loc.line == line);
  CHECK(r.first().loc.col == col);
}

}  // namespace

TEST_CASE("units: parsing and exact conversion") {
  auto q = parse_quantity("12.5ms");
  REQUIRE(q);
  CHECK(q->value == 12.5);
  REQUIRE(q->unit);
  CHECK(q->unit->name == "ms");
  CHECK(parse_quantity("1e3us")->value == 1000);
  CHECK(parse_quantity("-0.5GiB")->unit->name == "GiB");
  CHECK(parse_quantity("4")->unit == nullptr);
  CHECK(!parse_quantity("4mss"));
  CHECK(!parse_quantity("ms"));
  CHECK(!parse_quantity("1f1b"));
  CHECK(!parse_quantity("4 ms"));
  CHECK(convert(12.5, *find_unit("ms"), *find_unit("us")) == 12500);
  CHECK(convert(15, *find_unit("us"), *find_unit("ms")) == 0.015);
  CHECK(convert(1.5, *find_unit("GiB"), *find_unit("MiB")) == 1536);
  CHECK(convert(1, *find_unit("KiB"), *find_unit("B")) == 1024);
  CHECK(finer_unit(find_unit("ms"), find_unit("us"))->name == "us");
  CHECK(finer_unit(find_unit("GiB"), find_unit("MiB"))->name == "MiB");
  CHECK(finer_unit(find_unit("GB"), find_unit("GiB"))->name == "B");  // decimal beside binary
  CHECK(finer_unit(nullptr, find_unit("s"))->name == "s");
  CHECK(find_unit("mb") == nullptr);  // case-sensitive
}

TEST_CASE("units: a spec in ms and GiB is expressed in its finest units") {
  Spec s = SPEC_OF(HEAD "cost { F = 12.5ms  B = [25ms, 30ms]  W = 10ms  comm = 15us }\n"
                        "memory { F = 1.5GiB  B = -512MiB  cap = [60GiB, 50GiB] }\n"
                        "expect { makespan <= 1s  peak_memory <= 60GiB }\n");
  const ir::Problem& p = s.problem;
  CHECK(p.time_unit == "us");
  CHECK(p.memory_unit == "MiB");
  CHECK(p.cost.F == ir::PerStage::of(12500));
  CHECK(p.cost.B == ir::PerStage::list({25000, 30000}));
  CHECK(p.cost.W == ir::PerStage::of(10000));
  CHECK(p.cost.comm == 15);
  CHECK(p.memory.F == ir::PerStage::of(1536));
  CHECK(p.memory.B == ir::PerStage::of(-512));
  CHECK(p.memory.W == ir::PerStage::of(-1024));  // balances F and B
  CHECK(*p.memory.cap == ir::PerStage::list({61440, 51200}));
  REQUIRE(s.expect.size() == 2);
  CHECK(s.expect[0].value == 1e6);
  CHECK(s.expect[1].value == 61440);
  CHECK(s.units.at(ir::Field::CostComm) == "us");
}

TEST_CASE("units: zero needs none, plain specs keep their meaning") {
  Spec s = SPEC_OF(HEAD "cost { F = 2ms  B = 2ms  W = 1ms  comm = 0 }\n");
  CHECK(s.problem.time_unit == "ms");
  CHECK(s.problem.memory_unit.empty());
  CHECK(s.problem.cost.comm == 0);
  Spec plain = SPEC_OF(HEAD "cost { F = 2  B = 2  W = 1  comm = 0.1 }\n");
  CHECK(plain.problem.time_unit.empty());
  CHECK(plain.problem.cost.F == ir::PerStage::of(2));
  CHECK(plain.units.empty());
}

TEST_CASE("units: errors") {
  check_error(HEAD "cost { F = 12.5ms  B = 25  W = 1ms }", DiagKind::BadUnit,
              "`cost.B` has no unit, while `cost.F` is given in `ms`: plain numbers and units do not mix, write e.g. "
              "`B = 1ms`",
              3, 24);
  check_error(HEAD "cost { F = 12.5ms  B = 25ms }", DiagKind::BadUnit,
              "`cost.W` is not given, and its default (1) has no unit, while `cost.F` is given in `ms`: give it too, "
              "e.g. `W = 1ms`",
              3, 12);
  check_error(HEAD "cost { F = 1GiB }", DiagKind::BadUnit,
              "`cost.F` is a time, got `1GiB` (a memory unit); time units are ns, us, ms, s", 3, 12);
  check_error(HEAD "memory { cap = [1GiB, 2] }", DiagKind::BadUnit,
              "`memory.cap` mixes plain numbers and units: `2` has no unit, write e.g. `2GiB`", 3, 23);
  check_error(HEAD "cost { F = 12.5mss }", DiagKind::BadUnit,
              "unknown unit `mss` in `12.5mss`, expected a time unit (ns, us, ms, s) or a memory unit (B, KB, MB, "
              "GB, TB, KiB, MiB, GiB, TiB)",
              3, 16);
  check_error("ranks = 2ms\nmicrobatches = 4\n", DiagKind::BadUnit,
              "`ranks` takes a plain number, got `2ms` (units are for the values of `cost`, `memory` and `expect`)", 1,
              9);
  check_error(HEAD "memory { cap = 4GiB }", DiagKind::BadUnit,
              "`memory.F` is not given, and its default (1) has no unit, while `memory.cap` is given in `GiB`: give "
              "it too, e.g. `F = 1GiB`",
              3, 16);
  check_error(HEAD "expect { makespan <= 4ms }", DiagKind::BadUnit,
              "`makespan` is compared with `4ms`, but the problem's time values have no unit; give them with units, "
              "or compare with a plain number",
              3, 22);
  check_error(HEAD "cost { F = 1ms  B = 1ms  W = 1ms }\nexpect { bubble_ratio <= 4ms }", DiagKind::BadUnit,
              "`bubble_ratio` is a ratio, compare it with a plain number, got `4ms`", 4, 26);
  check_error(HEAD "cost { F = 1ms  B = 1ms  W = 1ms }\nexpect { peak_memory <= 4ms }", DiagKind::BadUnit,
              "`peak_memory` is a memory, got `4ms` (a time unit)", 4, 25);
  check_error(HEAD "schedule = solve { time_limit = 10s }", DiagKind::BadUnit,
              "`time_limit` in `solve` takes a plain number, got `10s` (units are for the values of `cost`, `memory` "
              "and `expect`)",
              3, 33);
}

TEST_CASE("memory: static memory per stage, with units, counted against the cap") {
  Spec s = SPEC_OF(HEAD "memory { F = 1GiB  static = [18GiB, 20GiB]  cap = 60GiB }");
  CHECK(s.problem.memory_unit == "GiB");
  CHECK(s.problem.memory.static_memory == ir::PerStage::list({18, 20}));
  CHECK(s.is_given(ir::Field::MemoryStatic));
  CHECK(*s.problem.cap_of(ir::RankId(1)) == 40);
  check_error(HEAD "memory { static = 8  cap = 6 }", DiagKind::CapInfeasible,
              "rank 0's static memory (8, `memory.static` of the stages it holds) is above its cap of 6: no schedule "
              "fits, whatever its activations",
              3, 19);
}

TEST_CASE("memory: B and W follow F unless given, and must balance") {
  CHECK(SPEC_OF(HEAD "memory { F = 5 }").problem.memory.B == ir::PerStage::of(-2.5));
  CHECK(SPEC_OF(HEAD "memory { F = 5 }").problem.memory.W == ir::PerStage::of(-2.5));
  CHECK(SPEC_OF(HEAD "memory { F = 4  B = -1 }").problem.memory.W == ir::PerStage::of(-3));
  CHECK(SPEC_OF(HEAD "memory { F = 4  W = 0 }").problem.memory.B == ir::PerStage::of(-4));
  Spec lists = SPEC_OF(HEAD "memory { F = [2, 4]  B = 0 }");
  CHECK(lists.problem.memory.W == ir::PerStage::list({-2, -4}));
  CHECK(SPEC_OF(HEAD "memory { F = 1 B = 0 W = 0 balanced = false }").problem.memory.W == ir::PerStage::of(0));
  CHECK(SPEC_OF(HEAD "backward = fused\nmemory { F = 1 B = 0 W = 0 }").problem.memory.B == ir::PerStage::of(0));
  check_error(HEAD "memory { F = 1  B = 0  W = 0 }", DiagKind::BadValue,
              "the memory deltas do not balance: F + B + W = 1 + 0 + 0 = 1, expected 0 (a microbatch's backward frees "
              "what its forward added); write `balanced = false` in `memory` if that is what you mean",
              3, 28);
  check_error(HEAD "memory { F = [1, 2]  B = [0, 0]  W = -1 }", DiagKind::BadValue,
              "the memory deltas do not balance on stage 1: F + B + W = 2 + 0 - 1 = 1, expected 0 (a microbatch's "
              "backward frees what its forward added); write `balanced = false` in `memory` if that is what you mean",
              3, 38);
}
