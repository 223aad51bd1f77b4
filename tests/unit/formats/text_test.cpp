// The text grid: exact layout on a hand-computed case, and the rules that keep larger and odder
// schedules readable (cell unit, wrapping at 120 columns, rounding, overlapped units).

#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "codegen/emit.h"
#include "tests/unit/formats/generate.h"

namespace schedc {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) out.push_back(line);
  return out;
}

ir::Schedule fused_two_ranks() {
  ir::Schedule s;
  s.problem = test::problem(2, 1, 2, ir::PlacementKind::Looped, ir::BackwardMode::Fused);
  s.ranks = {{ir::F(0, 0), ir::F(1, 0), ir::BW(0, 0), ir::BW(1, 0)},
             {ir::F(0, 1), ir::BW(0, 1), ir::F(1, 1), ir::BW(1, 1)}};
  return s;
}

// Per rank, the labels drawn on its lines across all bands.
std::vector<std::multiset<std::string>> drawn_labels(const std::string& text, int32_t ranks) {
  std::vector<std::multiset<std::string>> out(static_cast<size_t>(ranks));
  for (const std::string& line : lines_of(text)) {
    for (int32_t r = 0; r < ranks; ++r) {
      std::string name = "rank " + std::to_string(r) + " ";
      if (!line.starts_with(name)) continue;
      std::stringstream ss(line.substr(name.size()));
      std::string word;
      while (ss >> word) {
        while (!word.empty() && word.back() == '-') word.pop_back();
        if (!word.empty() && word != ".") out[static_cast<size_t>(r)].insert(word);
      }
    }
  }
  return out;
}

TEST_CASE("text: a hand-computed fused 1F1B on two ranks") {
  ir::Schedule s = fused_two_ranks();
  std::string expected = "2 ranks, 1 stage per rank (looped), 2 microbatches, single direction, fused backward\n"
                         "one cell = 1 time unit; `.` idle, `-` the action goes on, `+` joins an overlapped F&B unit\n"
                         "\n"
                         "time    0  1  2  3  4  5  6  7  8\n"
                         "rank 0  F0 F1 .  .  BW0-- .  BW1--\n"
                         "rank 1  .  F0 BW0-- F1 BW1-- .  .\n"
                         "\n"
                         "makespan 9, bubble ratio 0.333, max rank span 9, span bubble rate 0.333\n"
                         "rank  busy  peak memory\n"
                         "   0     6            2\n"
                         "   1     6            1\n";
  CHECK(codegen::emit_text(s, test::timeline(s)) == expected);
}

TEST_CASE("text: non-integer costs choose a finer cell") {
  ir::Problem p = test::problem(2, 1, 2);
  p.cost.B = ir::PerStage::of(0.5);
  p.cost.W = ir::PerStage::of(1.5);
  ir::Schedule s = test::greedy_schedule(p);
  std::string text = codegen::emit_text(s, test::timeline(s));
  CHECK(text.find("one cell = 0.5 time units") != std::string::npos);
  CHECK(text.find("\ntime    0     1     2     3") != std::string::npos);  // labels every 2 cells
}

TEST_CASE("text: a cell that no round time divides labels every cell") {
  ir::Schedule s = fused_two_ranks();
  s.problem.cost = {ir::PerStage::of(3), ir::PerStage::of(3), ir::PerStage::of(3), 0, std::nullopt, std::nullopt};
  std::string text = codegen::emit_text(s, test::timeline(s));
  CHECK(text.find("one cell = 3 time units;") != std::string::npos);
  CHECK(text.find("\ntime    0  3  6  9  12 15 18 21 24\n") != std::string::npos);
}

TEST_CASE("text: a large schedule wraps into bands of at most 120 columns and draws every action") {
  ir::Schedule s = test::greedy_schedule(test::problem(8, 2, 32, ir::PlacementKind::VShape, ir::BackwardMode::Split));
  std::string text = codegen::emit_text(s, test::timeline(s));
  size_t bands = 0;
  for (const std::string& line : lines_of(text)) {
    CHECK(line.size() <= 120);
    if (line.starts_with("time ")) ++bands;
  }
  CHECK(bands > 1);
  auto labels = drawn_labels(text, 8);
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    std::multiset<std::string> expected;
    for (ir::Action a : s.ranks[r]) expected.insert(ir::format_action(a));  // vpp = 2 shows the stage
    CHECK(labels[r] == expected);
  }
}

TEST_CASE("text: overlapped units are drawn as one cell run joined by +") {
  ir::Schedule s = test::greedy_schedule(test::problem(4, 2, 8, ir::PlacementKind::VShape, ir::BackwardMode::Mixed),
                                         true);
  REQUIRE(s.has_overlap());
  auto labels = drawn_labels(codegen::emit_text(s, test::timeline(s)), 4);
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    std::multiset<std::string> expected;
    for (size_t i = 0; i < s.ranks[r].size(); ++i) {
      std::string label = ir::format_action(s.ranks[r][i]);
      if (s.overlap_starts_at(r, static_cast<int32_t>(i))) label += "+" + ir::format_action(s.ranks[r][++i]);
      expected.insert(label);
    }
    CHECK(labels[r] == expected);
  }
}

TEST_CASE("text: a quantum too fine for the terminal falls back to rounded cells") {
  ir::Problem p = test::problem(4, 1, 16);
  p.cost.F = ir::PerStage::of(1.000001);
  ir::Schedule s = test::greedy_schedule(p);
  std::string text = codegen::emit_text(s, test::timeline(s));
  CHECK(text.find("\npositions are rounded to whole cells") != std::string::npos);
  CHECK(text.find("one cell = 1 time unit;") != std::string::npos);
  for (const std::string& line : lines_of(text)) CHECK(line.size() <= 120);
}

TEST_CASE("text: actions that take no time are counted, not drawn") {
  ir::Problem p = test::problem(2, 1, 2);
  p.cost.W = ir::PerStage::of(0);
  ir::Schedule s = test::greedy_schedule(p);
  std::string text = codegen::emit_text(s, test::timeline(s));
  CHECK(text.find("4 actions take no time and are not drawn") != std::string::npos);
  // The W actions' labels are absent; every other action is drawn.
  CHECK(text.find("W0") == std::string::npos);
  CHECK(text.find("B1") != std::string::npos);
}

}  // namespace
}  // namespace schedc
