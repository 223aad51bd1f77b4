// Perfetto trace of a simulated timeline: valid JSON, one compute event per action or overlapped
// unit at its simulated time (in the problem's time unit; plain numbers 1 unit = 1000 us), transfers
// on the comm thread, metrics attached.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/emit.h"
#include "tests/unit/formats/generate.h"

namespace schedc {
namespace {

using nlohmann::json;

std::vector<json> events_of(const json& trace, int tid) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["tid"] == tid) out.push_back(e);
  return out;
}

TEST_CASE("perfetto: compute events follow the timeline") {
  ir::Problem p = test::problem(2, 1, 2, ir::PlacementKind::Looped, ir::BackwardMode::Fused);
  ir::Schedule s;
  s.problem = p;
  s.ranks = {{ir::F(0, 0), ir::F(1, 0), ir::BW(0, 0), ir::BW(1, 0)},
             {ir::F(0, 1), ir::BW(0, 1), ir::F(1, 1), ir::BW(1, 1)}};
  ir::Timeline t = test::timeline(s);
  json trace = json::parse(codegen::emit_perfetto(s, t));
  std::vector<json> compute = events_of(trace, 0);
  REQUIRE(compute.size() == 8);
  CHECK(events_of(trace, 1).empty());  // comm = 0: no transfers
  // Rank 1's BW0.s1 runs from 2 to 4 time units.
  const json& bw = compute[5];
  CHECK(bw["name"] == "BW0.s1");
  CHECK(bw["pid"] == 1);
  CHECK(bw["ts"] == 2000);
  CHECK(bw["dur"] == 2000);
  CHECK(bw["args"]["kind"] == "BW");
  CHECK(bw["args"]["microbatch"] == 0);
  CHECK(bw["args"]["stage"] == 1);
  CHECK(trace["otherData"]["metrics"]["makespan"] == 9);
  CHECK(trace["otherData"]["problem"]["ranks"] == 2);
  CHECK(trace["otherData"]["time_unit_us"] == 1000);
  int names = 0;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") ++names;
  CHECK(names == 4);  // compute and comm on each rank
}

TEST_CASE("perfetto: a problem stated in a time unit keeps it (a profiled spec is in us)") {
  ir::Problem p = test::problem(2, 1, 2, ir::PlacementKind::Looped, ir::BackwardMode::Fused);
  ir::Schedule s;
  s.problem = p;
  s.ranks = {{ir::F(0, 0), ir::F(1, 0), ir::BW(0, 0), ir::BW(1, 0)},
             {ir::F(0, 1), ir::BW(0, 1), ir::F(1, 1), ir::BW(1, 1)}};
  for (auto [unit_name, us] : {std::pair{"us", 1.0}, {"ms", 1000.0}, {"ns", 0.001}, {"s", 1e6}}) {
    const std::string unit = unit_name;  // a copy: clang 14 cannot capture a structured binding (INFO)
    s.problem.time_unit = unit;
    json trace = json::parse(codegen::emit_perfetto(s, test::timeline(s)));
    INFO(unit);
    std::vector<json> compute = events_of(trace, 0);
    REQUIRE(compute.size() == 8);
    const json& bw = compute[5];  // rank 1's BW0.s1, from 2 to 4 units
    CHECK(bw["name"] == "BW0.s1");
    CHECK(bw["ts"].get<double>() == doctest::Approx(2 * us));
    CHECK(bw["dur"].get<double>() == doctest::Approx(2 * us));
    CHECK(trace["otherData"]["time_unit_us"].get<double>() == doctest::Approx(us));
  }
}

TEST_CASE("perfetto: every cross-rank dependency is a transfer on the sender's comm thread") {
  ir::Problem p = test::problem(4, 2, 8, ir::PlacementKind::VShape, ir::BackwardMode::Split);
  p.cost.comm = 0.25;
  ir::Schedule s = test::greedy_schedule(p);
  ir::Timeline t = test::timeline(s);
  json trace = json::parse(codegen::emit_perfetto(s, t));
  CHECK(events_of(trace, 0).size() == s.num_actions());
  // V shape on 4 ranks: stage pairs (s, s+1) cross ranks except (3, 4). Forward and backward
  // each cross 6 boundaries per microbatch.
  std::vector<json> sends = events_of(trace, 1);
  CHECK(sends.size() == 8 * 6 * 2);
  for (const json& e : sends) {
    CHECK(e["dur"] == 250);
    CHECK(e["args"]["kind"] == "send");
  }
  // The transfer of F0.s0 to rank 1 starts when F0.s0 ends.
  CHECK(sends.front()["name"] == "send F0.s0 -> 1");
  CHECK(sends.front()["ts"] == t.time(t.end[0][0]) * 1000);
}

TEST_CASE("perfetto: an overlapped unit is one FB event") {
  ir::Schedule s = test::greedy_schedule(test::problem(4, 2, 8, ir::PlacementKind::VShape, ir::BackwardMode::Mixed),
                                         true);
  size_t units = 0;
  for (const auto& o : s.overlap) units += o.size();
  REQUIRE(units > 0);
  json trace = json::parse(codegen::emit_perfetto(s, test::timeline(s)));
  std::vector<json> compute = events_of(trace, 0);
  CHECK(compute.size() == s.num_actions() - units);
  size_t fb = 0;
  for (const json& e : compute)
    if (e["cat"] == "FB") {
      ++fb;
      CHECK(std::string(e["name"]).starts_with("("));
      CHECK_FALSE(e["args"].contains("microbatch"));
    }
  CHECK(fb == units);
}

TEST_CASE("perfetto: output is deterministic") {
  ir::Problem p = test::problem(3, 1, 6, ir::PlacementKind::Looped, ir::BackwardMode::Mixed, 2);
  p.cost.comm = 1;
  ir::Schedule s = test::greedy_schedule(p);
  ir::Timeline t = test::timeline(s);
  CHECK(codegen::emit_perfetto(s, t) == codegen::emit_perfetto(s, t));
}

}  // namespace
}  // namespace schedc
