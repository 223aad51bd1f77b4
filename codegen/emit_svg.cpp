// The SVG timeline: one row per rank, one box per action (or overlapped unit) at its simulated
// interval, coloured by kind, the microbatch inside when it fits, a time axis, per-rank peak memory
// on the right and a legend with the metrics. Every number is printed with fixed rounding, so the
// same schedule always gives the same bytes.

#include "codegen/emit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "support/numbers.h"

namespace schedc::codegen {
namespace {

constexpr double kLeft = 72;   // rank labels
constexpr double kRight = 96;  // peak memory column
constexpr double kTop = 44;    // title and column headers
constexpr double kRowHeight = 26;
constexpr double kBoxHeight = 20;
constexpr double kMinChart = 480;  // chart width bounds, in pixels
constexpr double kTargetChart = 960;
constexpr double kMaxChart = 3600;
constexpr double kLabelFont = 10;
constexpr double kCharWidth = 0.64 * kLabelFont;  // digits in common sans fonts, generously
constexpr double kMinLegendWidth = 720;

// Estimated pixels of 12 px legend text, and of a legend entry (swatch, text, gap).
double text_width(const std::string& text) { return static_cast<double>(text.size()) * 6.6; }
double legend_entry_width(const std::string& text) { return 19 + text_width(text) + 18; }

// Pixels a box needs to show `label`.
double label_width(const std::string& label) { return static_cast<double>(label.size()) * kCharWidth + 3; }

std::string num(double v) { return format_number(std::round(v * 100) / 100); }

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// Which boxes get the lighter tint (`F lt`): direction 1 of a bidirectional problem, else the odd
// stages of each rank (its 2nd, 4th, ... model chunk) when a rank holds several, so that chunks
// stay apart where a label cannot name the stage.
class Tint {
 public:
  explicit Tint(const ir::Problem& p) : p_(p), chunk_(static_cast<size_t>(p.num_stages()), 0) {
    std::vector<int32_t> held(static_cast<size_t>(p.ranks), 0);
    for (int32_t s = 0; s < p.num_stages(); ++s)
      chunk_[static_cast<size_t>(s)] = held[p.rank_of(0, ir::StageId(s)).index()]++;
  }
  bool lighter(ir::Action a) const {
    if (p_.directions > 1) return p_.direction_of(a.mb) % 2 == 1;
    return chunk_[a.stage.index()] % 2 == 1;
  }
  const char* legend() const {
    if (p_.directions == 2) return "lighter: direction 1";
    if (p_.directions > 2) return "lighter: odd directions";
    return p_.stages_per_rank == 2 ? "lighter: a rank's second stage" : "lighter: a rank's 2nd, 4th, ... stage";
  }

 private:
  const ir::Problem& p_;
  std::vector<int32_t> chunk_;
};

struct Box {
  int32_t rank = 0;
  int64_t start = 0, end = 0;
  std::string css, title;
  std::vector<std::string> labels;  // with the stage (when it is shown) first, then the microbatch only
};

std::vector<Box> build_boxes(const ir::Schedule& s, const ir::Timeline& t, const Tint& tint) {
  const ir::Problem& p = s.problem;
  const bool stage = p.stages_per_rank > 1 || p.directions > 1;
  auto mb = [](ir::Action a) { return std::to_string(a.mb.value); };
  auto mb_stage = [&](ir::Action a) { return mb(a) + ".s" + std::to_string(a.stage.value); };
  std::vector<Box> boxes;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& order = s.ranks[r];
    for (size_t i = 0; i < order.size(); ++i) {
      Box b;
      b.rank = static_cast<int32_t>(r);
      b.start = t.start[r][i];
      b.end = t.end[r][i];
      std::string interval = " from " + format_number(t.time(b.start)) + " to " + format_number(t.time(b.end));
      ir::Action a = order[i];
      if (s.overlap_starts_at(r, static_cast<int32_t>(i)) && i + 1 < order.size()) {
        ir::Action other = order[++i];
        b.css = "FB";
        b.title = "(" + ir::format_action(a) + " " + ir::format_action(other) + ") overlapped" + interval;
        if (stage) b.labels.push_back(mb_stage(a) + "|" + mb_stage(other));
        b.labels.push_back(mb(a) + "|" + mb(other));
      } else {
        b.css = std::string(ir::to_string(a.kind)) + (tint.lighter(a) ? " lt" : "");
        b.title = ir::format_action(a) + interval;
        if (stage) b.labels.push_back(mb_stage(a));
        b.labels.push_back(mb(a));
      }
      boxes.push_back(std::move(b));
    }
  }
  return boxes;
}

// Tick step of the time axis: 1, 2 or 5 times a power of ten, at least `at_least` time units.
// Returns the step and the decimals its labels need.
std::pair<double, int> tick_step(double at_least) {
  for (int k = -6; k <= 9; ++k)
    for (double m : {1.0, 2.0, 5.0}) {
      double step = m * std::pow(10.0, k);
      if (step >= at_least) return {step, std::max(0, -k)};
    }
  return {1e9, 0};
}

// The legend's entries: the kinds this schedule uses, then the tint when some box has it.
std::vector<std::pair<std::string, std::string>> legend_entries(const std::vector<Box>& boxes, const Tint& tint) {
  static constexpr std::array<std::pair<const char*, const char*>, 6> kKinds = {{{"F", "F forward"},
                                                                                 {"B", "B input-gradient backward"},
                                                                                 {"W", "W weight-gradient backward"},
                                                                                 {"BW", "BW fused backward"},
                                                                                 {"FB", "F|B overlapped unit"},
                                                                                 {"R", "R recomputed forward"}}};
  auto kind_of = [](const Box& b) { return std::string_view(b.css).substr(0, b.css.find(' ')); };
  std::vector<std::pair<std::string, std::string>> out;
  // Not a structured binding: clang before 16 cannot capture one in the lambda.
  for (const auto& kind : kKinds) {
    const char* css = kind.first;
    if (std::any_of(boxes.begin(), boxes.end(), [&](const Box& b) { return kind_of(b) == css; }))
      out.push_back({css, kind.second});
  }
  if (std::any_of(boxes.begin(), boxes.end(), [](const Box& b) { return b.css.ends_with(" lt"); }))
    out.push_back({"F lt", tint.legend()});
  return out;
}

}  // namespace

std::string emit_svg(const ir::Schedule& s, const ir::Timeline& t) {
  const ir::Problem& p = s.problem;
  const ir::Metrics& m = t.metrics;
  const Tint tint(p);
  std::vector<Box> boxes = build_boxes(s, t, tint);

  // Horizontal scale: roughly kTargetChart wide, the shortest action wide enough for a label, and
  // never wider than kMaxChart (then labels that do not fit are left to the hover title).
  double makespan = m.makespan;
  double scale = 1;  // pixels per time unit
  if (makespan > 0) {
    scale = kTargetChart / makespan;
    for (const Box& b : boxes)
      if (b.end > b.start) scale = std::max(scale, label_width(b.labels.front()) / t.time(b.end - b.start));
    scale = std::min(scale, kMaxChart / makespan);
  }
  // One label style for the whole chart: with the stage only when every box has room for it.
  size_t level = 0;
  for (const Box& b : boxes)
    if (b.end > b.start && label_width(b.labels.front()) > t.time(b.end - b.start) * scale + 0.01) level = 1;
  const auto legend = legend_entries(boxes, tint);
  std::string metrics = "makespan " + format_number(m.makespan) + " \u00b7 bubble ratio " + fixed(m.bubble_ratio, 3) +
                        " \u00b7 max rank span " + format_number(m.max_rank_span) + " \u00b7 span bubble rate " +
                        fixed(m.span_bubble_rate, 3);
  std::string peaks = "peak memory per rank: ";
  for (size_t r = 0; r < m.peak_memory.size(); ++r) peaks += (r ? ", " : "") + format_number(m.peak_memory[r]);
  double legend_width = 8;
  for (const auto& entry : legend) legend_width += legend_entry_width(entry.second);

  const double chart = std::max(kMinChart, makespan * scale);
  const double width = std::max(
      {kLeft + chart + kRight, kMinLegendWidth, legend_width, text_width(metrics) + 16, text_width(peaks) + 16});
  const double rows_bottom = kTop + kRowHeight * p.ranks;
  const double axis_y = rows_bottom + 6;
  const double legend_y = axis_y + 40;
  const double height = legend_y + 62;
  auto x_of = [&](int64_t ticks) { return kLeft + t.time(ticks) * scale; };

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  std::string summary = std::to_string(p.ranks) + (p.ranks == 1 ? " rank, " : " ranks, ") +
                        std::to_string(p.stages_per_rank) + (p.stages_per_rank == 1 ? " stage" : " stages") +
                        " per rank (" + std::string(ir::to_string(p.placement)) + "), " +
                        std::to_string(p.microbatches) + (p.microbatches == 1 ? " microbatch, " : " microbatches, ") +
                        (p.directions == 1 ? std::string("single direction, ")
                                           : ir::direction_name(p.directions) + ", ") +
                        std::string(ir::to_string(p.backward)) + " backward";
  out += "<title>schedc schedule: " + escape(summary) + "</title>\n";
  out += "<style>\n"
         ".box{stroke:#ffffff;stroke-width:1}\n"
         ".F{fill:#7eaad8}.B{fill:#f2a766}.W{fill:#94c973}.BW{fill:#e57373}.FB{fill:#a98bd4}\n"
         ".F.lt{fill:#bfd6ee}.B.lt{fill:#f8d2b0}.W.lt{fill:#c9e4b8}.BW.lt{fill:#f2b8b8}\n"
         ".lbl{font-size:10px;text-anchor:middle;fill:#1a1a1a}\n" +
         // Recomputation's colour only where a schedule has one: other drawings stay as they were.
         std::string(p.recompute != ir::Recompute::Off ? ".R{fill:#5fb8b0}.R.lt{fill:#b3ddd9}\n" : "") +
         ".row{fill:#f0f0f0}.grid{stroke:#d8d8d8;stroke-width:1}.axis{stroke:#555555;stroke-width:1}\n"
         ".tick{font-size:10px;text-anchor:middle;fill:#333333}.name{fill:#222222}\n"
         ".num{text-anchor:end;fill:#222222}.head{font-size:11px;fill:#555555}\n"
         "</style>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + num(width) + "\" height=\"" + num(height) + "\" fill=\"#ffffff\"/>\n";
  out += "<text x=\"8\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" + escape(summary) + "</text>\n";
  out += "<text class=\"head\" x=\"8\" y=\"36\">rank</text>\n";
  out += "<text class=\"head num\" x=\"" + num(kLeft + chart + kRight - 8) + "\" y=\"36\">peak memory</text>\n";

  // Rows (their grey shows the bubbles), grid lines at the ticks, then the boxes on top.
  for (int32_t r = 0; r < p.ranks; ++r) {
    double y = kTop + kRowHeight * r;
    out += "<rect class=\"row\" x=\"" + num(kLeft) + "\" y=\"" + num(y) + "\" width=\"" + num(chart) + "\" height=\"" +
           num(kRowHeight - 2) + "\"/>\n";
    out += "<text class=\"name\" x=\"8\" y=\"" + num(y + kRowHeight / 2 + 3) + "\">rank " + std::to_string(r) +
           "</text>\n";
    std::string peak = static_cast<size_t>(r) < m.peak_memory.size() ? format_number(m.peak_memory[r]) : "-";
    out += "<text class=\"num\" x=\"" + num(kLeft + chart + kRight - 8) + "\" y=\"" + num(y + kRowHeight / 2 + 3) +
           "\">" + peak + "</text>\n";
  }
  auto [step, decimals] = tick_step(makespan > 0 ? 56.0 / scale : 1.0);
  std::string ticks;
  for (int64_t k = 0; makespan > 0 && k * step <= makespan * (1 + 1e-12); ++k) {
    double x = kLeft + k * step * scale;
    out += "<line class=\"grid\" x1=\"" + num(x) + "\" y1=\"" + num(kTop - 2) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(axis_y) + "\"/>\n";
    ticks += "<line class=\"axis\" x1=\"" + num(x) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(x) + "\" y2=\"" +
             num(axis_y + 4) + "\"/>\n";
    ticks += "<text class=\"tick\" x=\"" + num(x) + "\" y=\"" + num(axis_y + 16) + "\">" + fixed(k * step, decimals) +
             "</text>\n";
  }
  for (const Box& b : boxes) {
    double x = x_of(b.start);
    double w = std::max(x_of(b.end) - x, 1.5);  // an action that takes no time still shows
    double y = kTop + kRowHeight * b.rank + (kRowHeight - 2 - kBoxHeight) / 2;
    out += "<rect class=\"box " + b.css + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) +
           "\" height=\"" + num(kBoxHeight) + "\" data-rank=\"" + std::to_string(b.rank) + "\" data-start=\"" +
           format_number(t.time(b.start)) + "\" data-end=\"" + format_number(t.time(b.end)) + "\"><title>" +
           escape(b.title) + "</title></rect>\n";
    const std::string& label = b.labels[std::min(level, b.labels.size() - 1)];
    if (label_width(label) <= w + 0.01)
      out += "<text class=\"lbl\" x=\"" + num(x + w / 2) + "\" y=\"" + num(y + kBoxHeight / 2 + 3.5) + "\">" +
             escape(label) + "</text>\n";
  }
  out += "<line class=\"axis\" x1=\"" + num(kLeft) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(kLeft + chart) +
         "\" y2=\"" + num(axis_y) + "\"/>\n";
  out += ticks;
  out += "<text class=\"head\" x=\"8\" y=\"" + num(axis_y + 16) + "\">time</text>\n";

  double lx = 8;
  for (const auto& [css, text] : legend) {
    out += "<rect class=\"box " + css + "\" x=\"" + num(lx) + "\" y=\"" + num(legend_y - 11) +
           "\" width=\"14\" height=\"14\"/>\n";
    out += "<text x=\"" + num(lx + 19) + "\" y=\"" + num(legend_y) + "\">" + escape(text) + "</text>\n";
    lx += legend_entry_width(text);
  }
  out += "<text x=\"8\" y=\"" + num(legend_y + 22) + "\">" + metrics + "</text>\n";
  out += "<text x=\"8\" y=\"" + num(legend_y + 42) + "\">" + peaks + "</text>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace schedc::codegen
