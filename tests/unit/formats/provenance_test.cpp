// Provenance in schedule JSON (issue 13): ir::Provenance is written and read only by ir's JSON
// code, so writing, reading back and writing again gives the same bytes for every source a
// schedule has (explicit orders, a family with and without parameters, a torch-csv import, the
// solver: proved, timed, interrupted, after a Z3 error) and for the solved documents the golden
// tests keep; reading stays as lenient as it was when the provenance was ignored.

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <sstream>

#include "codegen/emit.h"
#include "frontend/torch_csv.h"
#include "ir/json_io.h"
#include "solver/families/families.h"
#include "solver/synth/synthesize.h"
#include "tests/unit/formats/generate.h"

namespace schedc {
namespace {

std::optional<ir::Schedule> read(const std::string& text, std::string* diagnostics = nullptr) {
  SourceManager sm;
  Diagnostics diags(&sm);
  int32_t file = sm.add("provenance.json", text);
  auto s = ir::read_schedule_json(sm, file, diags);
  if (diagnostics) *diagnostics = diags.str();
  return s;
}

// Writes `s` (with its metrics), reads it back, writes again: the same bytes, provenance included.
void check_round_trip(const ir::Schedule& s) {
  REQUIRE(s.provenance.has_value());
  ir::Timeline t = test::timeline(s);
  std::string first = ir::write_schedule_json(s, &t.metrics);
  CHECK(first.find("\"provenance\": {\"source\": \"" + s.provenance->source + "\"") != std::string::npos);
  std::string diagnostics;
  auto back = read(first, &diagnostics);
  INFO(diagnostics);
  REQUIRE(back.has_value());
  REQUIRE(back->provenance.has_value());
  CHECK(back->provenance->source == s.provenance->source);
  CHECK(ir::write_schedule_json(*back, &t.metrics) == first);
}

ir::Problem z3_problem() {  // the golden ok_verify_optimal_z3's: Z3 beats every incumbent
  ir::Problem p = test::problem(3, 1, 6);
  p.cost.F = ir::PerStage::of(2);
  p.cost.B = ir::PerStage::of(2);
  p.cost.W = ir::PerStage::of(1);
  p.cost.comm = 0.5;
  p.memory.cap = ir::PerStage::of(4);
  return p;
}

solver::SolveResult solve(const ir::Problem& p, solver::SolveOptions o) {
  solver::SolveResult r = solver::synthesize(p, o);
  REQUIRE(r.schedule.has_value());
  return r;
}

TEST_CASE("provenance round trip: explicit orders") {
  ir::Schedule s = test::greedy_schedule(test::problem(4, 1, 8));
  s.provenance = ir::Provenance::of("explicit");
  check_round_trip(s);
}

TEST_CASE("provenance round trip: a family, with and without parameters") {
  Diagnostics diags;
  auto plain = solver::generate_family(
      "1f1b", test::problem(4, 1, 8, ir::PlacementKind::Looped, ir::BackwardMode::Fused), {}, SourceLoc{}, diags);
  REQUIRE(plain.has_value());
  check_round_trip(*plain);
  ir::Params params;
  params.items.push_back(ir::Param{"group_size", 4.0, {}, {}});
  auto grouped = solver::generate_family("interleaved-1f1b",
                                         test::problem(4, 2, 8, ir::PlacementKind::Looped, ir::BackwardMode::Fused),
                                         params, SourceLoc{}, diags);
  INFO(diags.str());
  REQUIRE(grouped.has_value());
  CHECK(ir::provenance_json(*grouped->provenance) ==
        R"({"source": "family", "family": "interleaved-1f1b", "params": {"group_size": 4}})");
  check_round_trip(*grouped);
}

TEST_CASE("provenance round trip: a torch-csv import") {
  SourceManager sm;
  Diagnostics diags(&sm);
  const ir::Problem p = test::problem(4, 1, 8);
  int32_t file = sm.add("in.csv", codegen::emit_torch_csv(test::greedy_schedule(p)));
  auto s = frontend::read_torch_csv(sm, file, p, {}, diags);
  INFO(diags.str());
  REQUIRE(s.has_value());
  s->provenance = ir::Provenance::of("torch-csv");  // as `schedc import torch-csv` states it
  check_round_trip(*s);
}

TEST_CASE("provenance round trip: solved schedules") {
  solver::SolveOptions o;
  o.deterministic = true;
  o.time_limit_s = 5;
  SUBCASE("proved by Z3, with Z3's statistics") {
    solver::SolveResult r = solve(z3_problem(), o);
    REQUIRE(r.schedule->provenance->solve.has_value());
    CHECK(r.schedule->provenance->solve->found_by == "z3");
    CHECK_FALSE(r.schedule->provenance->solve->z3.statistics.empty());
    check_round_trip(*r.schedule);
  }
  SUBCASE("a gap, the local search's counters") {
    o.use_z3 = false;
    check_round_trip(*solve(test::problem(4, 2, 16), o).schedule);
  }
  SUBCASE("timed: `seconds` is a number") {
    o.deterministic = false;
    o.time_limit_s = 0.5;
    solver::SolveResult r = solve(test::problem(4, 1, 8), o);
    CHECK(r.schedule->provenance->solve->seconds.has_value());
    check_round_trip(*r.schedule);
  }
  SUBCASE("interrupted") {
    std::atomic<bool> stop{true};
    o.stop = &stop;
    solver::SolveResult r = solve(z3_problem(), o);
    CHECK(r.schedule->provenance->solve->interrupted);
    check_round_trip(*r.schedule);
  }
  SUBCASE("after a Z3 error") {
    o.z3_fault = solver::SolveOptions::Z3Fault::Error;
    solver::SolveResult r = solve(z3_problem(), o);
    CHECK_FALSE(r.schedule->provenance->solve->z3.error.empty());
    check_round_trip(*r.schedule);
  }
}

// The documents the golden tests keep were written by `schedc schedule --format json`: reading
// one and writing it again gives it back byte for byte.
TEST_CASE("provenance round trip: the golden tests' solved documents") {
  for (const char* name : {"ok_verify_optimal_z3.json", "ok_verify_optimal_bound.json",
                           "fail_verify_optimal_feasible.json", "fail_verify_optimal_bound_only.json"}) {
    CAPTURE(name);
    std::ifstream in(std::string(SCHEDC_GOLDEN_DIR) + "/" + name);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    auto s = read(text.str());
    REQUIRE(s.has_value());
    REQUIRE(s->provenance.has_value());
    ir::Timeline t = test::timeline(*s);
    CHECK(ir::write_schedule_json(*s, &t.metrics) == text.str());
  }
}

TEST_CASE("provenance reading is lenient: it never makes a document an error") {
  const std::string head = R"({"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "stages_per_rank": 1,
"microbatches": 1, "direction": "single", "placement": "looped", "backward": "split"},
"ranks": [["F0.s0", "B0.s0", "W0.s0"]], "provenance": )";
  SUBCASE("not an object: no provenance") {
    for (const char* value : {"5", "null", "\"solve\"", "[1, 2]"}) {
      CAPTURE(value);
      std::string diagnostics;
      auto s = read(head + value + "}", &diagnostics);
      CHECK(diagnostics.empty());
      REQUIRE(s.has_value());
      CHECK_FALSE(s->provenance.has_value());
    }
  }
  SUBCASE("unknown members and wrong types are skipped") {
    std::string diagnostics;
    auto s = read(head + R"({"source": "solve", "status": "optimal", "objective": "many", "extra": {"a": [1]},
"z3": {"probes": -1, "statistics": {"x": 1.5, "y": "text"}}, "local_search": 3})" +
                      "}",
                  &diagnostics);
    CHECK(diagnostics.empty());
    REQUIRE(s.has_value());
    REQUIRE(s->provenance.has_value());
    REQUIRE(s->provenance->solve.has_value());
    CHECK(s->provenance->solve->status == "optimal");
    CHECK_FALSE(s->provenance->solve->objective.has_value());
    CHECK(s->provenance->solve->z3.probes == -1);
    REQUIRE(s->provenance->solve->z3.statistics.size() == 1);
    CHECK(s->provenance->solve->z3.statistics[0].first == "x");
  }
  SUBCASE("a status without a source is still a claim (verify --optimal checks it)") {
    auto s = read(head + R"({"status": "optimal", "objective": 3})" + "}");
    REQUIRE(s.has_value());
    REQUIRE(s->provenance.has_value());
    CHECK(s->provenance->source.empty());
    REQUIRE(s->provenance->solve.has_value());
    CHECK(s->provenance->solve->objective == 3);
  }
}

}  // namespace
}  // namespace schedc
