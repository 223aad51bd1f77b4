// torch-csv: the real PyTorch fixture imports to a valid schedule and exports byte-identical;
// generated schedules survive csv -> schedule -> JSON -> schedule -> csv unchanged (bidirectional
// ones are imported, never exported); bad input gets located diagnostics and never crashes.

#include <doctest/doctest.h>

#include <random>

#include "codegen/emit.h"
#include "frontend/torch_csv.h"
#include "ir/json_io.h"
#include "ir/verify.h"
#include "tests/unit/formats/generate.h"

namespace schedc {
namespace {

using ir::BackwardMode;
using ir::PlacementKind;

struct Imported {
  std::optional<ir::Schedule> schedule;
  std::string diagnostics;
  std::vector<Diagnostic> all;
};

Imported import(const std::string& text, const ir::Problem& base = {}, std::vector<ir::Field> given = {}) {
  SourceManager sm;
  Diagnostics diags(&sm);
  int32_t file = sm.add("in.csv", text);
  ir::FieldLocs given_map;
  for (ir::Field g : given) given_map[g] = SourceLoc{};
  Imported out;
  out.schedule = frontend::read_torch_csv(sm, file, base, given_map, diags);
  out.diagnostics = diags.str();
  out.all = diags.all();
  CHECK(out.schedule.has_value() != diags.has_errors());
  return out;
}

// Through the schedule JSON too: schedule -> JSON -> schedule.
ir::Schedule via_json(const ir::Schedule& s) {
  SourceManager sm;
  Diagnostics diags(&sm);
  int32_t file = sm.add("via.json", ir::write_schedule_json(s, nullptr));
  auto back = ir::read_schedule_json(sm, file, diags);
  REQUIRE(back.has_value());
  return *back;
}

// The canonical torch-csv text of any schedule, written here without the emitter: it is the
// expected output for single-direction schedules, and the only way to write a bidirectional one,
// which emit_torch_csv refuses (PyTorch has one rank per stage) but the importer reads.
std::string csv_text(const ir::Schedule& s) {
  auto token = [](ir::Action a) {
    const char* letter = a.kind == ir::ActionKind::F   ? "F"
                         : a.kind == ir::ActionKind::B ? "I"
                         : a.kind == ir::ActionKind::W ? "W"
                                                       : "B";
    return std::to_string(a.stage.value) + letter + std::to_string(a.mb.value);
  };
  std::string out;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& order = s.ranks[r];
    for (size_t i = 0; i < order.size(); ++i) {
      if (i) out += ',';
      if (s.overlap_starts_at(r, static_cast<int32_t>(i))) {
        out += "(" + token(order[i]) + ";" + token(order[i + 1]) + ")OVERLAP_F_B";
        ++i;
      } else {
        out += token(order[i]);
      }
    }
    out += '\n';
  }
  return out;
}

TEST_CASE("torch-csv: the DualPipeV fixture imports, verifies and exports byte-identical") {
  std::string text = test::read_data("torch-csv/dualpipev_4rank_10mb.csv");
  Imported in = import(text);
  INFO(in.diagnostics);
  REQUIRE(in.schedule.has_value());
  const ir::Schedule& s = *in.schedule;
  CHECK(s.problem.ranks == 4);
  CHECK(s.problem.stages_per_rank == 2);
  CHECK(s.problem.microbatches == 10);
  CHECK(s.problem.placement == PlacementKind::VShape);
  CHECK(s.problem.directions == 1);
  CHECK(s.problem.backward == BackwardMode::Mixed);
  CHECK(s.has_overlap());
  CHECK(s.ranks[0][17] == ir::F(7, 0));  // (0F7;7B3)OVERLAP_F_B: the forward first, as written
  CHECK(s.ranks[0][18] == ir::BW(3, 7));
  CHECK(s.overlap_starts_at(0, 17));
  CHECK(ir::verify(s).empty());
  CHECK(codegen::emit_torch_csv(s) == text);
  CHECK(codegen::emit_torch_csv(via_json(s)) == text);
}

TEST_CASE("torch-csv: generated schedules round-trip through csv and JSON") {
  struct Case {
    ir::Problem p;
    bool overlap;
  };
  ir::Problem custom = test::problem(3, 2, 6, PlacementKind::Custom, BackwardMode::Split);
  custom.stage_to_rank = {{2, 0, 1, 1, 0, 2}};
  ir::Problem custom_bi = test::problem(2, 2, 4, PlacementKind::Custom, BackwardMode::Fused, 2);
  custom_bi.stage_to_rank = {{1, 0, 0, 1}, {1, 1, 0, 0}};
  std::vector<Case> cases = {
      {test::problem(4, 1, 8, PlacementKind::Looped, BackwardMode::Fused), false},
      {test::problem(4, 1, 8, PlacementKind::Looped, BackwardMode::Split), false},
      {test::problem(4, 2, 8, PlacementKind::Looped, BackwardMode::Mixed), false},
      {test::problem(4, 2, 8, PlacementKind::VShape, BackwardMode::Mixed), true},
      {test::problem(3, 3, 5, PlacementKind::Wave, BackwardMode::Split), false},
      {test::problem(4, 1, 8, PlacementKind::Looped, BackwardMode::Fused, 2), false},
      {test::problem(2, 2, 6, PlacementKind::VShape, BackwardMode::Mixed, 2), true},
      {custom, false},
      {custom_bi, false},
      {test::problem(1, 1, 3, PlacementKind::Looped, BackwardMode::Fused), true},
  };
  for (const Case& c : cases) {
    ir::Schedule s = test::greedy_schedule(c.p, c.overlap);
    CAPTURE(ir::problem_json(c.p));
    const bool exports = c.p.directions == 1;  // else every stage has two ranks
    CHECK(codegen::torch_csv_conflict(c.p).has_value() == !exports);
    std::string csv = csv_text(s);
    if (exports) CHECK(codegen::emit_torch_csv(s) == csv);
    Imported in = import(csv);
    INFO(in.diagnostics);
    REQUIRE(in.schedule.has_value());
    const ir::Problem& q = in.schedule->problem;
    CHECK(in.schedule->ranks == s.ranks);
    CHECK(in.schedule->overlap == s.overlap);
    CHECK(q.ranks == c.p.ranks);
    CHECK(q.stages_per_rank == c.p.stages_per_rank);
    CHECK(q.microbatches == c.p.microbatches);
    CHECK(q.directions == c.p.directions);
    // Placement and backward are inferred: the same mapping, by the simplest name that fits.
    for (int32_t mb = 0; mb < c.p.microbatches; ++mb)
      for (int32_t st = 0; st < c.p.num_stages(); ++st)
        CHECK(q.rank_of(ir::MbId(mb), ir::StageId(st)) == c.p.rank_of(ir::MbId(mb), ir::StageId(st)));
    if (c.p.placement != PlacementKind::Custom) CHECK(q.placement == c.p.placement);
    CHECK(q.backward == c.p.backward);
    CHECK(csv_text(*in.schedule) == csv);
    CHECK(csv_text(via_json(*in.schedule)) == csv);
    if (exports) CHECK(codegen::emit_torch_csv(via_json(*in.schedule)) == csv);
  }
}

TEST_CASE("torch-csv: a stage on two ranks has no torch-csv form") {
  // Bidirectional problems put direction 1 on the mirrored rank: stage 0 on ranks 0 and pp-1.
  auto chimera = codegen::torch_csv_conflict(test::problem(4, 1, 8, PlacementKind::Looped, BackwardMode::Fused, 2));
  REQUIRE(chimera.has_value());
  CHECK(chimera->stage == ir::StageId(0));
  CHECK(chimera->first == ir::RankId(0));
  CHECK(chimera->second == ir::RankId(3));
  auto dualpipe = codegen::torch_csv_conflict(test::problem(4, 2, 8, PlacementKind::VShape, BackwardMode::Mixed, 2));
  REQUIRE(dualpipe.has_value());
  CHECK(dualpipe->stage == ir::StageId(0));
  // One rank per stage, whatever the direction field says: nothing to refuse.
  CHECK_FALSE(codegen::torch_csv_conflict(test::problem(4, 2, 8, PlacementKind::VShape, BackwardMode::Mixed)));
  CHECK_FALSE(codegen::torch_csv_conflict(test::problem(1, 1, 4, PlacementKind::Looped, BackwardMode::Fused, 2)));
  ir::Problem same = test::problem(2, 1, 4, PlacementKind::Custom, BackwardMode::Fused, 2);
  same.stage_to_rank = {{1, 0}, {1, 0}};
  CHECK_FALSE(codegen::torch_csv_conflict(same));
  same.stage_to_rank = {{1, 0}, {1, 1}};
  auto custom = codegen::torch_csv_conflict(same);
  REQUIRE(custom.has_value());
  CHECK(custom->stage == ir::StageId(1));
  CHECK(custom->first == ir::RankId(0));
  CHECK(custom->second == ir::RankId(1));
}

TEST_CASE("torch-csv: idle cells, blanks, quotes and CRLF are read; the export is canonical") {
  std::string canonical = "0F0,0F1,0B0,0B1\n";
  for (std::string text :
       {"0F0,,0F1,0B0,,0B1,\n", " 0F0 ,\t0F1, 0B0,0B1\r\n", "\"0F0\",0F1,\"0B0\",0B1", ",,0F0,0F1,0B0,0B1,,\n"}) {
    CAPTURE(text);
    Imported in = import(text);
    INFO(in.diagnostics);
    REQUIRE(in.schedule.has_value());
    CHECK(in.schedule->problem.backward == BackwardMode::Fused);
    CHECK(codegen::emit_torch_csv(*in.schedule) == canonical);
  }
  // A unit with the backward first keeps that order: the export writes what the file says.
  Imported in = import("0F0,(0F1;0B0)OVERLAP_F_B,0B1\n");
  REQUIRE(in.schedule.has_value());
  Imported reversed = import("0F0,(0B0;0F1)OVERLAP_F_B,0B1\n");
  REQUIRE(reversed.schedule.has_value());
  CHECK(codegen::emit_torch_csv(*reversed.schedule) == "0F0,(0B0;0F1)OVERLAP_F_B,0B1\n");
}

TEST_CASE("torch-csv: given problem fields must agree with the file") {
  using ir::Field;
  std::string text = test::read_data("torch-csv/dualpipev_4rank_10mb.csv");
  ir::Problem base;
  base.ranks = 4;
  base.stages_per_rank = 2;
  base.microbatches = 10;
  base.placement = PlacementKind::VShape;
  base.backward = BackwardMode::Mixed;
  base.cost.comm = 0.5;
  Imported ok = import(
      text, base,
      {Field::Ranks, Field::StagesPerRank, Field::Microbatches, Field::Placement, Field::Backward, Field::CostComm});
  INFO(ok.diagnostics);
  REQUIRE(ok.schedule.has_value());
  CHECK(ok.schedule->problem.cost.comm == 0.5);

  auto kind_of = [](const Imported& in) { return in.all.empty() ? DiagKind::Syntax : in.all.front().kind; };
  base.ranks = 3;
  Imported pp = import(text, base, {Field::Ranks});
  CHECK(kind_of(pp) == DiagKind::BadValue);
  CHECK(pp.diagnostics.find("the file has 4 rows (one per rank), but `ranks` is given as 3") != std::string::npos);
  base.ranks = 4;
  base.microbatches = 12;
  Imported mbs = import(text, base, {Field::Microbatches});
  CHECK(mbs.diagnostics.find("names microbatches 0..9, but `microbatches` is given as 12") != std::string::npos);
  base.microbatches = 8;
  Imported fewer = import(text, base, {Field::Microbatches});
  CHECK(kind_of(fewer) == DiagKind::NoSuchMicrobatch);
  CHECK(fewer.diagnostics.starts_with("in.csv:1:"));
  base.backward = BackwardMode::Split;
  Imported split = import(text, base, {Field::Backward});
  CHECK(kind_of(split) == DiagKind::BackwardMode);
  CHECK(split.diagnostics.starts_with("in.csv:1:"));
  base.backward = BackwardMode::Mixed;
  base.placement = PlacementKind::Looped;
  Imported looped = import(text, base, {Field::Placement});
  CHECK(kind_of(looped) == DiagKind::WrongRank);
  base.placement = PlacementKind::VShape;
  base.stages_per_rank = 0;
  Imported vpp = import(text, base, {Field::StagesPerRank});
  CHECK(kind_of(vpp) == DiagKind::OutOfRange);
  CHECK(vpp.diagnostics.find("`stages_per_rank` must be in 1..64, got `0`") != std::string::npos);
  base.stages_per_rank = 2;
  base.memory.cap = ir::PerStage::of(2);
  Imported cap = import(text, base, {Field::MemoryCap});
  CHECK(kind_of(cap) == DiagKind::MemoryCap);
}

TEST_CASE("torch-csv: bad cells are reported where they are") {
  struct Bad {
    std::string text;
    DiagKind kind;
    std::string where;
  };
  std::vector<Bad> bad = {
      {"", DiagKind::BadCsv, "in.csv: error"},
      {"0F0,0X0\n", DiagKind::BadToken, "in.csv:1:5:"},
      {"0F0,0F\n", DiagKind::BadToken, "in.csv:1:5:"},
      {"0F0,0F1x,0B0,0B1\n", DiagKind::BadToken, "in.csv:1:5:"},
      {"0F0,(0F1;1SEND_F0)OVERLAP_F_B\n", DiagKind::Unsupported, "in.csv:1:10:"},
      {"0F0,0SEND_F\n", DiagKind::BadToken, "in.csv:1:5:"},
      {"0F0,0SEND_F0x\n", DiagKind::BadToken, "in.csv:1:5:"},
      {"0F0,0REDUCE_GRADx\n", DiagKind::BadToken, "in.csv:1:5:"},
      {"0F0,0RECV_B99999999999\n", DiagKind::OutOfRange, "in.csv:1:5:"},
      {"0F0,\"0B0\n", DiagKind::BadCsv, "in.csv:1:5:"},
      {"0F0,\"0B0\"x\n", DiagKind::BadCsv, "in.csv:1:10:"},
      {"0F0\r0B0\n", DiagKind::BadCsv, "in.csv:1:4:"},
      {"0F0,(0F1;0W0)OVERLAP_F_B\n", DiagKind::BadOverlap, "in.csv:1:5:"},
      {"0F0,(0F1;0B0)OVERLAP\n", DiagKind::BadToken, "in.csv:1:14:"},
      {"0F0,(0F1;0B0;0B1)OVERLAP_F_B\n", DiagKind::BadOverlap, "in.csv:1:14:"},
      {"0F0,(0F1;0B0\n", DiagKind::BadToken, "in.csv:1:5:"},
      {"0F0,0F99999999999\n", DiagKind::OutOfRange, "in.csv:1:5:"},
      {"0F0,1F0,2F0\n1B0\n", DiagKind::BadValue, "in.csv: error"},
      {"0F0,0B0,0B0\n", DiagKind::DuplicateAction, "in.csv:1:9:"},
      {"0B0,0F0\n", DiagKind::DependencyOrder, "in.csv:1:1:"},
      {"0F0,0F1,0B0\n", DiagKind::MissingAction, "in.csv:1:1:"},
      {"0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n", DiagKind::Deadlock, "in.csv:1:5:"},
      {"0F0,1F0\n1B0,0B0\n", DiagKind::WrongRank, "in.csv:2:1:"},
      {"\n\n", DiagKind::BadCsv, "in.csv: error"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.text);
    Imported in = import(b.text);
    INFO(in.diagnostics);
    REQUIRE_FALSE(in.schedule.has_value());
    REQUIRE_FALSE(in.all.empty());
    CHECK(in.all.front().kind == b.kind);
    CHECK(in.diagnostics.starts_with(b.where));
  }
}

TEST_CASE("torch-csv: mutated and random input never crashes") {
  std::string fixture = test::read_data("torch-csv/dualpipev_4rank_10mb.csv");
  const std::string alphabet = "0123456789FIWB(;),\"\r\n OVERLAP_F_BSEND";
  std::mt19937 rng(20240611);
  size_t accepted = 0;
  for (int round = 0; round < 400; ++round) {
    std::string text = round % 4 == 0 ? std::string() : fixture;
    int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      char c = round % 7 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
      size_t at = text.empty() ? 0 : rng() % text.size();
      switch (rng() % 3) {
        case 0: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        case 1:
          if (!text.empty()) text.erase(at, 1 + rng() % 8);
          break;
        default:
          if (!text.empty()) text[at] = c;
          break;
      }
    }
    if (round % 4 == 0)
      for (int k = 0; k < 40; ++k) text += alphabet[rng() % alphabet.size()];
    Imported in = import(text);
    if (in.schedule) {
      ++accepted;
      CHECK(ir::verify(*in.schedule).empty());
    }
  }
  CHECK(accepted < 400);
}

}  // namespace
}  // namespace schedc
