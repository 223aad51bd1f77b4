// The text grid of `schedc show`: time runs left to right in cells of one time quantum, ranks are
// rows, and a wide schedule is wrapped into bands that fit a 120-column terminal.

#include "codegen/emit.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "support/numbers.h"

namespace schedc::codegen {
namespace {

constexpr size_t kTerminalWidth = 120;
// Above this many cells the exact quantum is abandoned for a rounded one (positions approximate).
constexpr int64_t kMaxCells = 2000;
constexpr size_t kMinCellWidth = 2;  // `.` and a space
constexpr size_t kMaxCellWidth = 16;

// One drawn step of a rank: an action, or an overlapped unit of two.
struct Unit {
  int64_t start = 0, end = 0;  // ticks
  int64_t first = 0, last = 0;  // cells [first, last)
  std::string label;
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

bool shows_stage(const ir::Problem& p) {
  return p.stages_per_rank > 1 || p.direction == ir::Direction::Bidirectional;
}

std::string label_of(const ir::Problem& p, ir::Action a) {
  if (shows_stage(p)) return ir::format_action(a);
  return std::string(ir::to_string(a.kind)) + std::to_string(a.mb.value);
}

std::vector<std::vector<Unit>> build_units(const ir::Schedule& s, const ir::Timeline& t) {
  std::vector<std::vector<Unit>> units(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& order = s.ranks[r];
    for (size_t i = 0; i < order.size(); ++i) {
      Unit u{t.start[r][i], t.end[r][i], 0, 0, label_of(s.problem, order[i])};
      if (s.overlap_starts_at(r, static_cast<int32_t>(i)) && i + 1 < order.size())
        u.label += "+" + label_of(s.problem, order[++i]);
      units[r].push_back(std::move(u));
    }
  }
  return units;
}

// The smallest "1, 2 or 5 times a power of ten" ticks that is at least `at_least`.
int64_t nice_ticks(int64_t at_least) {
  for (int64_t pow = 1;; pow *= 10)
    for (int64_t m : {1, 2, 5})
      if (m * pow >= at_least) return m * pow;
}

// The largest such number that is at most `at_most` (1 when `at_most` < 1).
int64_t nice_floor(int64_t at_most) {
  int64_t best = 1;
  for (int64_t pow = 1; pow <= at_most; pow *= 10)
    for (int64_t m : {1, 2, 5})
      if (m * pow <= at_most) best = m * pow;
  return best;
}

struct Grid {
  int64_t quantum = 1;  // ticks per cell
  int64_t cells = 0;
  bool exact = true;
  int64_t exact_quantum = 1;  // when not exact: the gcd that would have needed too many cells
  size_t width = kMinCellWidth;  // characters per cell
  size_t hidden = 0;             // zero-duration units, which take no cell
};

Grid layout(std::vector<std::vector<Unit>>& units, int64_t makespan) {
  Grid g;
  int64_t q = 0;
  for (const auto& rank : units)
    for (const Unit& u : rank) q = std::gcd(std::gcd(q, u.start), u.end);
  g.quantum = q > 0 ? q : 1;
  g.cells = makespan / g.quantum;
  if (g.cells > kMaxCells) {
    // A cell about as long as the shortest action, so that each still gets one, within the limit.
    int64_t shortest = makespan;
    for (const auto& rank : units)
      for (const Unit& u : rank)
        if (u.end > u.start) shortest = std::min(shortest, u.end - u.start);
    g.exact = false;
    g.exact_quantum = g.quantum;
    g.quantum = std::max(nice_floor(shortest), nice_ticks((makespan + kMaxCells - 1) / kMaxCells));
    g.cells = (makespan + g.quantum - 1) / g.quantum;
  }
  for (auto& rank : units) {
    int64_t free_from = 0;
    for (Unit& u : rank) {
      if (u.end == u.start) {
        ++g.hidden;
        continue;
      }
      if (g.exact) {
        u.first = u.start / g.quantum;
        u.last = u.end / g.quantum;
      } else {
        // Rounded positions keep each rank's order: a unit never starts inside the previous one.
        u.first = std::max(free_from, (u.start + g.quantum / 2) / g.quantum);
        u.last = std::max(u.first + 1, (u.end + g.quantum / 2) / g.quantum);
      }
      free_from = u.last;
      g.cells = std::max(g.cells, u.last);
      size_t span = static_cast<size_t>(u.last - u.first);
      g.width = std::max(g.width, (u.label.size() + 1 + span - 1) / span);
    }
  }
  g.width = std::min(g.width, kMaxCellWidth);
  return g;
}

// A rank's whole line: `.` in idle cells, a label then `-` over the cells an action continues in.
std::string render_rank(const std::vector<Unit>& units, const Grid& g) {
  std::string line(static_cast<size_t>(g.cells) * g.width, ' ');
  std::vector<char> busy(static_cast<size_t>(g.cells), 0);
  for (const Unit& u : units) {
    if (u.last == u.first) continue;
    size_t col = static_cast<size_t>(u.first) * g.width;
    size_t usable = static_cast<size_t>(u.last - u.first) * g.width - 1;
    std::string text = u.label.substr(0, usable);
    if (u.last - u.first > 1) text += std::string(usable - text.size(), '-');
    line.replace(col, text.size(), text);
    for (int64_t c = u.first; c < u.last; ++c) busy[static_cast<size_t>(c)] = 1;
  }
  for (size_t c = 0; c < busy.size(); ++c)
    if (!busy[c]) line[c * g.width] = '.';
  return line;
}

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string header(const ir::Schedule& s, const ir::Timeline& t, const Grid& g) {
  const ir::Problem& p = s.problem;
  std::string out = std::to_string(p.ranks) + (p.ranks == 1 ? " rank, " : " ranks, ") +
                    std::to_string(p.stages_per_rank) + (p.stages_per_rank == 1 ? " stage" : " stages") +
                    " per rank (" + std::string(ir::to_string(p.placement)) + "), " + std::to_string(p.microbatches) +
                    (p.microbatches == 1 ? " microbatch, " : " microbatches, ") + std::string(ir::to_string(p.direction)) +
                    " direction, " + std::string(ir::to_string(p.backward)) + " backward\n";
  std::string unit = format_number(t.time(g.quantum));
  out += "one cell = " + unit + (unit == "1" ? " time unit" : " time units");
  out += "; `.` idle, `-` the action goes on, `+` joins an overlapped F&B unit\n";
  if (!g.exact)
    out += "positions are rounded to whole cells: the exact cell, " + format_number(t.time(g.exact_quantum)) +
           " time units, would need more than " + std::to_string(kMaxCells) + " cells\n";
  if (g.hidden)
    out += std::to_string(g.hidden) +
           (g.hidden == 1 ? " action takes no time and is not drawn\n" : " actions take no time and are not drawn\n");
  return out;
}

std::string axis(const ir::Timeline& t, const Grid& g, int64_t first, int64_t last, size_t prefix) {
  std::string line = pad_right("time", prefix);
  size_t next_free = prefix;
  const size_t end = prefix + static_cast<size_t>(last - first) * g.width;
  for (int64_t c = first; c < last; ++c) {
    size_t col = prefix + static_cast<size_t>(c - first) * g.width;
    std::string label = format_number(t.time(c * g.quantum));
    if (col < next_free || col + label.size() > end) continue;
    line = pad_right(line, col) + label;
    next_free = col + label.size() + 1;
  }
  return line;
}

std::string metrics(const ir::Timeline& t) {
  const ir::Metrics& m = t.metrics;
  std::string out = "makespan " + format_number(m.makespan) + ", bubble ratio " + fixed(m.bubble_ratio, 3) +
                    ", max rank span " + format_number(m.max_rank_span) + ", span bubble rate " +
                    fixed(m.span_bubble_rate, 3) + "\n";
  std::vector<std::string> ranks{"rank"}, busy{"busy"}, peak{"peak memory"};
  for (size_t r = 0; r < m.busy.size(); ++r) {
    ranks.push_back(std::to_string(r));
    busy.push_back(format_number(m.busy[r]));
    peak.push_back(r < m.peak_memory.size() ? format_number(m.peak_memory[r]) : "-");
  }
  auto width = [](const std::vector<std::string>& col) {
    size_t w = 0;
    for (const auto& s : col) w = std::max(w, s.size());
    return w;
  };
  size_t wr = width(ranks), wb = width(busy), wp = width(peak);
  for (size_t i = 0; i < ranks.size(); ++i)
    out += pad_left(ranks[i], wr) + "  " + pad_left(busy[i], wb) + "  " + pad_left(peak[i], wp) + "\n";
  return out;
}

}  // namespace

std::string emit_text(const ir::Schedule& s, const ir::Timeline& t) {
  auto units = build_units(s, t);
  int64_t makespan = 0;
  for (const auto& ends : t.end)
    for (int64_t e : ends) makespan = std::max(makespan, e);
  Grid g = layout(units, makespan);

  std::vector<std::string> lines, names;
  size_t prefix = 0;
  for (size_t r = 0; r < units.size(); ++r) {
    names.push_back("rank " + std::to_string(r));
    prefix = std::max(prefix, names.back().size() + 2);
    lines.push_back(render_rank(units[r], g));
  }
  // A cut between two bands goes where no action crosses it when one exists in the band's second
  // half; otherwise the action's text simply continues at the start of the next band.
  std::vector<char> crossed(static_cast<size_t>(g.cells) + 1, 0);
  for (const auto& rank : units)
    for (const Unit& u : rank)
      for (int64_t c = u.first + 1; c < u.last; ++c) crossed[static_cast<size_t>(c)] = 1;
  std::string out = header(s, t, g) + "\n";
  int64_t per_band = std::max<int64_t>(1, static_cast<int64_t>((kTerminalWidth - prefix) / g.width));
  for (int64_t first = 0, last = 0; first < g.cells; first = last) {
    last = std::min(g.cells, first + per_band);
    if (last < g.cells) {
      int64_t cut = last;
      while (cut > first + per_band / 2 && crossed[static_cast<size_t>(cut)]) --cut;
      if (!crossed[static_cast<size_t>(cut)] && cut > first) last = cut;
    }
    out += rstrip(axis(t, g, first, last, prefix)) + "\n";
    for (size_t r = 0; r < lines.size(); ++r) {
      std::string part = lines[r].substr(static_cast<size_t>(first) * g.width,
                                         static_cast<size_t>(last - first) * g.width);
      out += rstrip(pad_right(names[r], prefix) + part) + "\n";
    }
    out += "\n";
  }
  return out + metrics(t);
}

}  // namespace schedc::codegen
