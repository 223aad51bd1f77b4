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
constexpr size_t kMinCellWidth = 1;  // wider when a label needs it
constexpr size_t kMaxCellWidth = 16;

// One drawn step of a rank: an action, or an overlapped unit of two.
struct Unit {
  int64_t start = 0, end = 0;   // ticks
  int64_t first = 0, last = 0;  // cells [first, last)
  std::string label;
  size_t label_band = 0;  // the band whose piece of the unit shows the label
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

bool shows_stage(const ir::Problem& p) { return p.stages_per_rank > 1 || p.directions > 1; }

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
  int64_t exact_quantum = 1;     // when not exact: the gcd that would have needed too many cells
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

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string header(const ir::Schedule& s, const ir::Timeline& t, const Grid& g) {
  const ir::Problem& p = s.problem;
  std::string out = std::to_string(p.ranks) + (p.ranks == 1 ? " rank, " : " ranks, ") +
                    std::to_string(p.stages_per_rank) + (p.stages_per_rank == 1 ? " stage" : " stages") +
                    " per rank (" + std::string(ir::to_string(p.placement)) + "), " + std::to_string(p.microbatches) +
                    (p.microbatches == 1 ? " microbatch, " : " microbatches, ") +
                    (p.directions == 1 ? std::string("single direction, ") : ir::direction_name(p.directions) + ", ") +
                    std::string(ir::to_string(p.backward)) + " backward\n";
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

// Cells between two time labels: the smallest round time step (1, 2 or 5 times a power of ten
// time units, a whole number of cells) whose labels all fit with a space between them; when the
// cell is no divisor of such a step (costs of 3), the smallest round number of cells that fits.
int64_t tick_cells(const ir::Timeline& t, const Grid& g) {
  auto fits = [&](int64_t k) {
    if (k >= g.cells) return true;
    size_t widest = 0;
    for (int64_t c = 0; c < g.cells; c += k) widest = std::max(widest, format_number(t.time(c * g.quantum)).size());
    return static_cast<size_t>(k) * g.width >= widest + 1;
  };
  const int64_t span = g.cells * g.quantum;
  for (int64_t step = 1; step <= span; step = step <= span / 10 ? step * 10 : span + 1)
    for (int64_t m : {1, 2, 5})
      if (m * step % g.quantum == 0 && fits(m * step / g.quantum)) return m * step / g.quantum;
  for (int64_t step = 1;; step *= 10)
    for (int64_t m : {1, 2, 5})
      if (fits(m * step)) return m * step;
}

std::string axis(const ir::Timeline& t, const Grid& g, int64_t every, int64_t first, int64_t last, size_t prefix) {
  std::string line = pad_right("time", prefix);
  const size_t end = prefix + static_cast<size_t>(last - first) * g.width;
  for (int64_t c = first; c < last; ++c) {
    if (c % every != 0) continue;
    size_t col = prefix + static_cast<size_t>(c - first) * g.width;
    std::string label = format_number(t.time(c * g.quantum));
    if (col + label.size() > end) continue;
    line = pad_right(line, col) + label;
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

// Where the grid is cut into bands of at most `per_band` cells: where no action crosses when
// such a cell exists in the band's second half.
std::vector<std::pair<int64_t, int64_t>> bands(const std::vector<std::vector<Unit>>& units, const Grid& g,
                                               int64_t per_band) {
  std::vector<char> crossed(static_cast<size_t>(g.cells) + 1, 0);
  for (const auto& rank : units)
    for (const Unit& u : rank)
      for (int64_t c = u.first + 1; c < u.last; ++c) crossed[static_cast<size_t>(c)] = 1;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t first = 0, last = 0; first < g.cells; first = last) {
    last = std::min(g.cells, first + per_band);
    if (last < g.cells) {
      int64_t cut = last;
      while (cut > first + per_band / 2 && crossed[static_cast<size_t>(cut)]) --cut;
      if (!crossed[static_cast<size_t>(cut)]) last = cut;
    }
    out.push_back({first, last});
  }
  return out;
}

// Characters a unit may fill in band [first, last): its cells there, less the separating space
// when it ends in this band.
size_t room(const Unit& u, const Grid& g, int64_t first, int64_t last) {
  int64_t from = std::max(u.first, first), to = std::min(u.last, last);
  return static_cast<size_t>(to - from) * g.width - (u.last <= last ? 1 : 0);
}

// An action cut by a band boundary shows its label in the first of its pieces with room for it
// (else truncated in the first) and `-` in the others.
void place_labels(std::vector<std::vector<Unit>>& units, const Grid& g,
                  const std::vector<std::pair<int64_t, int64_t>>& cuts) {
  for (auto& rank : units) {
    size_t band = 0;
    for (Unit& u : rank) {
      if (u.last == u.first) continue;
      while (cuts[band].second <= u.first) ++band;
      u.label_band = band;
      for (size_t b = band; b < cuts.size() && cuts[b].first < u.last; ++b)
        if (room(u, g, cuts[b].first, cuts[b].second) >= u.label.size()) {
          u.label_band = b;
          break;
        }
    }
  }
}

std::string render_band(const std::vector<Unit>& units, size_t& next, const Grid& g, size_t band, int64_t first,
                        int64_t last) {
  std::string line(static_cast<size_t>(last - first) * g.width, ' ');
  std::vector<char> busy(static_cast<size_t>(last - first), 0);
  for (size_t i = next; i < units.size() && units[i].first < last; ++i) {
    const Unit& u = units[i];
    if (u.last == u.first || u.last <= first) continue;
    size_t usable = room(u, g, first, last);
    std::string text = band == u.label_band ? u.label.substr(0, usable) : std::string();
    if (u.last - u.first > 1) text += std::string(usable - text.size(), '-');
    int64_t from = std::max(u.first, first);
    line.replace(static_cast<size_t>(from - first) * g.width, text.size(), text);
    for (int64_t c = from; c < std::min(u.last, last); ++c) busy[static_cast<size_t>(c - first)] = 1;
  }
  while (next < units.size() && units[next].last <= last) ++next;
  for (size_t c = 0; c < busy.size(); ++c)
    if (!busy[c]) line[c * g.width] = '.';
  return line;
}

}  // namespace

std::string emit_text(const ir::Schedule& s, const ir::Timeline& t) {
  auto units = build_units(s, t);
  int64_t makespan = 0;
  for (const auto& ends : t.end)
    for (int64_t e : ends) makespan = std::max(makespan, e);
  Grid g = layout(units, makespan);

  std::vector<std::string> names;
  size_t prefix = 0;
  for (size_t r = 0; r < units.size(); ++r) {
    names.push_back("rank " + std::to_string(r));
    prefix = std::max(prefix, names.back().size() + 2);
  }
  int64_t per_band = std::max<int64_t>(1, static_cast<int64_t>((kTerminalWidth - prefix) / g.width));
  auto cuts = bands(units, g, per_band);
  place_labels(units, g, cuts);
  const int64_t every = tick_cells(t, g);
  std::string out = header(s, t, g) + "\n";
  std::vector<size_t> next(units.size(), 0);
  for (size_t b = 0; b < cuts.size(); ++b) {
    auto [first, last] = cuts[b];
    out += rstrip(axis(t, g, every, first, last, prefix)) + "\n";
    for (size_t r = 0; r < units.size(); ++r)
      out += rstrip(pad_right(names[r], prefix) + render_band(units[r], next[r], g, b, first, last)) + "\n";
    out += "\n";
  }
  return out + metrics(t);
}

}  // namespace schedc::codegen
