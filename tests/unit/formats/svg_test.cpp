// The SVG timeline: one box per action or overlapped unit, placed by the simulated timeline on one
// horizontal scale, coloured by kind, and a legend with the metrics. Same input, same bytes.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "codegen/emit.h"
#include "support/numbers.h"
#include "tests/unit/formats/generate.h"

namespace schedc {
namespace {

struct SvgBox {
  std::string css;
  double x = 0, width = 0;
  int32_t rank = 0;
  double start = 0, end = 0;
};

// The boxes of actions: rects that carry data-rank (the legend's swatches do not).
std::vector<SvgBox> boxes_of(const std::string& svg) {
  static const std::regex kBox(
      R"re(<rect class="box ([^"]+)" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" data-rank="([0-9]+)" data-start="([0-9.e+-]+)" data-end="([0-9.e+-]+)">)re");
  std::vector<SvgBox> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), kBox); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out.push_back({m[1], std::stod(m[2]), std::stod(m[3]), std::stoi(m[4]), std::stod(m[5]), std::stod(m[6])});
  }
  return out;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Every box sits at left + start * scale with width (end - start) * scale, one scale for all.
void check_positions(const ir::Schedule& s, const ir::Timeline& t, const std::vector<SvgBox>& boxes) {
  size_t units = s.num_actions();
  for (const auto& o : s.overlap) units -= o.size();
  REQUIRE(boxes.size() == units);
  // The first box starts at 0 (rank 0 begins the step); the latest start fixes the scale.
  REQUIRE(boxes.front().start == 0);
  const double left = boxes.front().x;
  const SvgBox& far = *std::max_element(boxes.begin(), boxes.end(),
                                        [](const SvgBox& a, const SvgBox& b) { return a.start < b.start; });
  REQUIRE(far.start > 0);
  const double scale = (far.x - left) / far.start;
  size_t k = 0;
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].size(); ++i, ++k) {
      const SvgBox& b = boxes[k];
      CHECK(b.rank == static_cast<int32_t>(r));
      CHECK(b.start == doctest::Approx(t.time(t.start[r][i])));
      CHECK(b.end == doctest::Approx(t.time(t.end[r][i])));
      // Coordinates are printed to 0.01 px.
      CHECK(std::abs(b.x - (left + b.start * scale)) < 0.02);
      if (b.end > b.start) CHECK(std::abs(b.width - (b.end - b.start) * scale) < 0.03);
      if (s.overlap_starts_at(r, static_cast<int32_t>(i))) {
        CHECK(b.css == "FB");
        ++i;
      } else {
        CHECK(b.css.starts_with(std::string(ir::to_string(s.ranks[r][i].kind))));
      }
    }
}

TEST_CASE("svg: small fused schedule, boxes, labels, legend and metrics") {
  ir::Schedule s;
  s.problem = test::problem(2, 1, 2, ir::PlacementKind::Looped, ir::BackwardMode::Fused);
  s.ranks = {{ir::F(0, 0), ir::F(1, 0), ir::BW(0, 0), ir::BW(1, 0)},
             {ir::F(0, 1), ir::BW(0, 1), ir::F(1, 1), ir::BW(1, 1)}};
  ir::Timeline t = test::timeline(s);
  std::string svg = codegen::emit_svg(s, t);
  CHECK(svg.starts_with("<?xml"));
  CHECK(svg.ends_with("</svg>\n"));
  check_positions(s, t, boxes_of(svg));
  CHECK(count(svg, "<text class=\"lbl\"") == 8);  // wide boxes: every microbatch number fits
  CHECK(svg.find(">makespan 9 \u00b7 bubble ratio 0.333") != std::string::npos);
  CHECK(svg.find(">peak memory per rank: 2, 1<") != std::string::npos);
  CHECK(svg.find("BW fused backward") != std::string::npos);
  CHECK(svg.find("W weight-gradient") == std::string::npos);  // only the kinds used
  CHECK(svg == codegen::emit_svg(s, t));
}

TEST_CASE("svg: large V-shape schedule keeps the scale and stays within bounds") {
  ir::Problem p = test::problem(8, 2, 32, ir::PlacementKind::VShape, ir::BackwardMode::Split);
  p.cost.B = ir::PerStage::of(2);
  p.cost.comm = 0.5;
  ir::Schedule s = test::greedy_schedule(p);
  ir::Timeline t = test::timeline(s);
  std::string svg = codegen::emit_svg(s, t);
  check_positions(s, t, boxes_of(svg));
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, std::regex(R"re(<svg [^>]*width="([0-9.]+)")re")));
  CHECK(std::stod(m[1]) <= 72 + 3600 + 96);
  // The V's second leg (stages 8..15, each rank's second stage) is tinted: F, B and W of 32
  // microbatches on 8 stages, and the legend swatch.
  CHECK(count(svg, " lt\" x=") == 32 * 8 * 3 + 1);
  CHECK(svg.find("lighter: a rank's second stage") != std::string::npos);
}

TEST_CASE("svg: bidirectional and overlapped schedules") {
  ir::Schedule bi = test::greedy_schedule(
      test::problem(4, 1, 8, ir::PlacementKind::Looped, ir::BackwardMode::Fused, 2));
  ir::Timeline tb = test::timeline(bi);
  std::string svg = codegen::emit_svg(bi, tb);
  check_positions(bi, tb, boxes_of(svg));
  CHECK(count(svg, " lt\" x=") == 8 * 4 * 2 / 2 + 1);  // direction 1's actions and the legend swatch
  CHECK(svg.find("lighter: direction 1") != std::string::npos);
  CHECK(svg.find(">3.s2<") != std::string::npos);  // bidirectional labels name the stage

  ir::Schedule ov = test::greedy_schedule(test::problem(4, 2, 8, ir::PlacementKind::VShape, ir::BackwardMode::Mixed),
                                          true);
  ir::Timeline to = test::timeline(ov);
  std::string svg2 = codegen::emit_svg(ov, to);
  check_positions(ov, to, boxes_of(svg2));
  CHECK(svg2.find("F|B overlapped unit") != std::string::npos);
}

}  // namespace
}  // namespace schedc
