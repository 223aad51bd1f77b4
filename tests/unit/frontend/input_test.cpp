// frontend::read_input: the three formats read into one Input, with a source map that locates the
// input's own orders; json_locate_elements agrees with json_locate.

#include <doctest/doctest.h>

#include <string>

#include "frontend/input.h"
#include "ir/json_io.h"
#include "support/json_locate.h"

using namespace schedc;
using namespace schedc::frontend;

namespace {

struct Read {
  SourceManager sources;
  Diagnostics diags{&sources};
  std::optional<Input> in;
};

// Reads `text` as the file `path`, its format as schedc decides it.
void read(Read& r, const std::string& path, const std::string& text, const Spec& command_line = {}) {
  int32_t file = r.sources.add(path, text);
  r.in = read_input(r.sources, file, input_format(r.sources, file, path), command_line, r.diags);
}

// The text at `loc` (to the end of its line).
std::string at(const Read& r, SourceLoc loc) {
  std::string_view line = r.sources.line_text(loc.file, loc.line);
  return std::string(line.substr(static_cast<size_t>(loc.col - 1)));
}

}  // namespace

TEST_CASE("input_format: by suffix, else schedule JSON by its content, else a spec") {
  SourceManager sm;
  int32_t spec = sm.add("a.sched", "ranks = 2\n");
  int32_t json = sm.add("copy.txt", "\n  {\"format\": \"schedc.schedule\"}");
  CHECK(input_format(sm, spec, "a.sched") == InputFormat::Spec);
  CHECK(input_format(sm, spec, "a.json") == InputFormat::ScheduleJson);
  CHECK(input_format(sm, spec, "a.csv") == InputFormat::TorchCsv);
  CHECK(input_format(sm, json, "copy.txt") == InputFormat::ScheduleJson);
  CHECK(input_format(sm, json, "copy.csv") == InputFormat::TorchCsv);
}

TEST_CASE("read_input: a spec's explicit orders become the input's schedule, located at their tokens") {
  Read r;
  read(
      r, "a.sched",
      "ranks = 2\nmicrobatches = 1\nschedule = explicit {\n  rank 0: F0.s0 B0.s0 W0.s0\n  rank 1: F0.s1 B0.s1 W0.s1\n}\n");
  REQUIRE(r.in);
  const Input& in = *r.in;
  CHECK(in.format == InputFormat::Spec);
  CHECK(in.spec.schedule.kind == SourceKind::Explicit);
  CHECK(in.spec.schedule.ranks.empty());  // the orders are held once, in `schedule`
  REQUIRE(in.schedule);
  CHECK(in.schedule->ranks.size() == 2);
  CHECK(in.schedule->provenance->source == "explicit");
  CHECK(at(r, in.map.action(1, 2)) == "W0.s1");
  CHECK(at(r, in.map.schedule()).starts_with("explicit"));
  CHECK(!in.map.action(1, 3).has_file());
  CHECK(!in.map.action(2, 0).has_file());
  CHECK(in.writes(*in.schedule));
  ir::Schedule other = *in.schedule;
  std::swap(other.ranks[1][1], other.ranks[1][2]);
  CHECK(!in.writes(other));
}

TEST_CASE("read_input: a spec without orders has no schedule and locates no action") {
  Read r;
  read(r, "a.sched", "ranks = 2\nmicrobatches = 4\nschedule = family 1f1b\n");
  REQUIRE(r.in);
  CHECK(!r.in->schedule);
  CHECK(!r.in->map.action(0, 0).has_file());
  CHECK(r.in->map.schedule().line == 3);
}

TEST_CASE("read_input: schedule JSON keeps its provenance, gives every field, and locates its strings") {
  ir::Schedule s;
  s.problem.ranks = 2;
  s.ranks = {{ir::Action{ir::ActionKind::F, ir::MbId(0), ir::StageId(0)},
              ir::Action{ir::ActionKind::BW, ir::MbId(0), ir::StageId(0)}},
             {ir::Action{ir::ActionKind::F, ir::MbId(0), ir::StageId(1)},
              ir::Action{ir::ActionKind::BW, ir::MbId(0), ir::StageId(1)}}};
  s.problem.backward = ir::BackwardMode::Fused;
  s.provenance = ir::Provenance::of("family");
  Read r;
  read(r, "s.json", ir::write_schedule_json(s, nullptr));
  REQUIRE(r.in);
  const Input& in = *r.in;
  CHECK(in.format == InputFormat::ScheduleJson);
  REQUIRE(in.schedule);
  CHECK(in.schedule->provenance->source == "family");
  for (ir::Field f : ir::kProblemFields) CHECK(in.spec.given.at(f).file == in.file);
  CHECK(at(r, in.map.action(1, 1)).starts_with("\"BW0.s1\""));
  CHECK(at(r, in.map.json("/provenance/source")).starts_with("\"family\""));
}

TEST_CASE("read_input: a torch-csv file's actions are located at their cells") {
  Read r;
  read(r, "t.csv", "0F0,0B0\n1F0,1B0\n");
  REQUIRE(r.in);
  CHECK(r.in->format == InputFormat::TorchCsv);
  REQUIRE(r.in->schedule);
  CHECK(r.in->spec.schedule.kind == SourceKind::Explicit);
  SourceLoc loc = r.in->map.action(1, 1);
  CHECK(loc.line == 2);
  CHECK(at(r, loc).starts_with("1B0"));
  CHECK(r.in->map.json("/ranks").line == 0);  // not JSON: the file
}

TEST_CASE("json_locate_elements: the offsets json_locate finds, in one pass") {
  const std::string text = "{\"ranks\" :[ [\"a\",  \"b,]\" ] ,\n[],[ {\"x\": [1, 2]} ,\"c\\\"\", 3 ]\n], \"z\": 1}";
  auto rows = json_locate_elements(text, "/ranks");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].size() == 2);
  CHECK(rows[1].empty());
  CHECK(rows[2].size() == 3);
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t i = 0; i < rows[r].size(); ++i)
      CHECK(rows[r][i] == json_locate(text, "/ranks/" + std::to_string(r) + "/" + std::to_string(i)));
  CHECK(json_locate_elements(text, "/z").empty());
  CHECK(json_locate_elements("not json", "/ranks").empty());
}
