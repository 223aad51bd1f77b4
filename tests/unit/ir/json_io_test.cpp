// Schedule JSON: write → read → write is the identity; malformed documents name the JSON path.

#include <doctest/doctest.h>

#include "ir/json_io.h"
#include "tests/common/builders.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

std::optional<Schedule> read(const std::string& text, Diagnostics* out = nullptr) {
  SourceManager sm;
  int32_t f = sm.add("t.json", text);
  Diagnostics d(&sm);
  auto s = read_schedule_json(sm, f, d);
  if (out) *out = d;
  if (!s && !out) MESSAGE(d.str());
  return s;
}

std::string errors_of(const std::string& text) {
  SourceManager sm;
  int32_t f = sm.add("t.json", text);
  Diagnostics d(&sm);
  CHECK_FALSE(read_schedule_json(sm, f, d).has_value());
  return d.str();
}

}  // namespace

TEST_CASE("round trip with every problem feature") {
  Problem p = test::problem(2, 2, BackwardMode::Mixed, 1.5, 2, 0.25);
  p.stages_per_rank = 2;
  p.placement = PlacementKind::Custom;
  p.directions = 2;
  p.stage_to_rank = {{0, 1, 1, 0}, {1, 0, 0, 1}};
  p.cost.F = PerStage::list({1, 2, 3, 4.5});
  p.cost.comm = 0.1;
  p.cost.FB = PerStage::of(3);
  p.memory.cap = PerStage::list({4, 3.5});
  p.objective = Objective::MaxSpan;
  Schedule s;
  s.problem = p;
  s.ranks = {test::order("F0.s0 F0.s3 BW0.s3"), test::order("F1.s0 B1.s0")};
  s.overlap = {{1}, {}};
  s.provenance = Provenance::of("test");
  std::string first = write_schedule_json(s, nullptr);
  auto back = read(first);
  REQUIRE(back.has_value());
  CHECK(back->problem == p);
  CHECK(back->ranks == s.ranks);
  CHECK(back->overlap == s.overlap);
  CHECK(write_schedule_json(*back, nullptr) == first);
}

TEST_CASE("units make a version 2 document; without them it stays version 1") {
  Problem p = test::problem(1, 1, BackwardMode::Split, 1, 1, 0);
  Schedule s;
  s.problem = p;
  s.ranks = {test::order("F0.s0 B0.s0 W0.s0")};
  CHECK(write_schedule_json(s, nullptr).find("\"version\": 1,") != std::string::npos);
  s.problem.time_unit = "us";
  s.problem.memory_unit = "MiB";
  std::string text = write_schedule_json(s, nullptr);
  CHECK(text.find("\"version\": 2,") != std::string::npos);
  CHECK(text.find("\"units\": {\"time\": \"us\", \"memory\": \"MiB\"}") != std::string::npos);
  auto back = read(text);
  REQUIRE(back.has_value());
  CHECK(back->problem == s.problem);
  CHECK(write_schedule_json(*back, nullptr) == text);
}

TEST_CASE("reader errors carry the JSON path and the location") {
  const std::string base =
      R"({"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "microbatches": 1}, "ranks": [["F0.s0", "B0.s0", "W0.s0"]]})";
  CHECK(read(base).has_value());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK(errors_of(with("\"ranks\": 1", "\"ranks\": 0"))
            .find("t.json:1:66: error: at /problem/ranks: `ranks` must be in 1..1024, got `0` [out-of-range]") !=
        std::string::npos);
  CHECK(errors_of(with("\"B0.s0\"", "\"X0.s0\"")).find("at /ranks/0/1: bad action token `X0.s0`") != std::string::npos);
  CHECK(errors_of(with("\"version\": 1", "\"version\": 7")).find("[bad-format]") != std::string::npos);
  // `units` came with version 2: a version 1 document with them is not one earlier readers read.
  CHECK(errors_of(with("\"microbatches\": 1", "\"microbatches\": 1, \"units\": {\"time\": \"ms\"}"))
            .find("`units` needs version 2 of the format") != std::string::npos);
  std::string v2 = with("\"version\": 1", "\"version\": 2");
  CHECK(read(v2).has_value());
  auto with_units = [&](const std::string& units) {
    std::string t = v2;
    t.replace(t.find("\"microbatches\": 1"), 17, "\"microbatches\": 1, \"units\": " + units);
    return t;
  };
  auto s = read(with_units(R"({"time": "ms", "memory": "GiB"})"));
  REQUIRE(s.has_value());
  CHECK(s->problem.time_unit == "ms");
  CHECK(s->problem.memory_unit == "GiB");
  CHECK(errors_of(with_units(R"({"time": "GiB"})"))
            .find("unknown time unit `GiB`, expected one of ns, us, ms, s [bad-unit]") != std::string::npos);
  CHECK(errors_of(with_units(R"({"length": "m"})")).find("unknown key `length`") != std::string::npos);
  CHECK(errors_of(with("\"microbatches\": 1", "\"microbatches\": 1, \"pp\": 4"))
            .find("at /problem/pp: unknown key `pp`") != std::string::npos);
  CHECK(errors_of(with("\"microbatches\": 1", "\"microbatches\": 1, \"microbatches\": 2"))
            .find("duplicate key `microbatches` [duplicate-key]") != std::string::npos);
  CHECK(errors_of(base.substr(0, 40)).find("[bad-json]") != std::string::npos);
}

TEST_CASE("a deeply nested document is refused at the level past the limit, not parsed") {
  // 100000 levels under a key the reader ignores: a recursive walk of it would overflow the stack.
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string text = R"({"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "microbatches": 1},
"ranks": [["F0.s0", "B0.s0", "W0.s0"]], "provenance": )" +
                     deep + "}";
  std::string out = errors_of(text);
  CHECK(out.find("t.json:2:" + std::to_string(54 + kMaxJsonDepth) +
                 ": error: arrays and objects nest deeper than 512 levels (a schedule document needs 4) [too-large]") ==
        0);
  CHECK(out.size() < 600);
  // At the limit it is read (the provenance is ignored).
  std::string ok = std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']');
  CHECK(read(R"({"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "microbatches": 1},
"ranks": [["F0.s0", "B0.s0", "W0.s0"]], "provenance": )" +
             ok + "}")
            .has_value());
}

TEST_CASE("the reader stops after kMaxJsonErrors errors with a note") {
  std::string keys;
  for (int i = 0; i < 30; ++i) keys += ", \"k" + std::to_string(i) + "\": 1";
  std::string out = errors_of(
      R"({"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "microbatches": 1)" + keys +
      R"(}, "ranks": [["F0.s0"]]})");
  size_t errors = 0;
  for (size_t at = out.find("[unknown-key]"); at != std::string::npos; at = out.find("[unknown-key]", at + 1)) ++errors;
  CHECK(errors == kMaxJsonErrors);
  CHECK(out.find("t.json: note: too many errors, stopped after 20; fix these and run again\n") != std::string::npos);
  // Bad tokens likewise; and a rank longer than the problem's actions is one error, not millions.
  std::string tokens;
  for (int i = 0; i < 25; ++i) tokens += std::string(i ? ", " : "") + "\"X" + std::to_string(i) + "\"";
  out = errors_of(
      R"({"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "microbatches": 9}, "ranks": [[)" +
      tokens + "]]}");
  CHECK(out.find("at /ranks/0/19: bad action token `X19`") != std::string::npos);
  CHECK(out.find("token `X20`") == std::string::npos);
  CHECK(out.find("note: too many errors, stopped after 20") != std::string::npos);
  out = errors_of(
      R"({"format": "schedc.schedule", "version": 1, "problem": {"ranks": 1, "microbatches": 1}, "ranks": [[)" +
      tokens + "]]}");
  CHECK(out.find("at /ranks/0: rank 0 lists 25 actions, more than the problem has (3) [bad-value]") !=
        std::string::npos);
}
