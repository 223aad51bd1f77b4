#include "ir/simulate.h"

#include <algorithm>
#include <cassert>

namespace schedc::ir {
namespace {

// One step of a rank: a single action, or an overlapped F&B unit of two.
struct Unit {
  int32_t first = 0;
  int32_t count = 1;
  int64_t duration = 0;
};

std::vector<std::vector<Unit>> build_units(const Schedule& s, int64_t scale) {
  const Problem& p = s.problem;
  std::vector<std::vector<Unit>> units(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& order = s.ranks[r];
    for (int32_t i = 0; i < static_cast<int32_t>(order.size()); ++i) {
      bool pair = s.overlap_starts_at(r, i) && i + 1 < static_cast<int32_t>(order.size());
      if (!pair) {
        units[r].push_back({i, 1, to_fixed(cost_of(p, order[i]), scale)});
        continue;
      }
      Action a = order[i], b = order[i + 1];
      bool well_formed = (a.kind == ActionKind::F) != (b.kind == ActionKind::F) &&
                         (is_backward(a.kind) || is_backward(b.kind));
      double cost = well_formed ? (a.kind == ActionKind::F ? overlap_cost(p, a, b) : overlap_cost(p, b, a))
                                : cost_of(p, a) + cost_of(p, b);
      units[r].push_back({i, 2, to_fixed(cost, scale)});
      ++i;
    }
  }
  return units;
}

}  // namespace

SimResult simulate(const Schedule& s) {
  const Problem& p = s.problem;
  const int64_t scale = time_scale(p);
  const int64_t comm = to_fixed(p.cost.comm, scale);
  const ScheduleIndex index(s);
  const auto units = build_units(s, scale);
  const size_t R = s.ranks.size();

  std::vector<int64_t> done(num_action_slots(p), -1);  // end tick of completed actions
  Timeline tl;
  tl.scale = scale;
  tl.start.resize(R);
  tl.end.resize(R);
  for (size_t r = 0; r < R; ++r) {
    tl.start[r].assign(s.ranks[r].size(), 0);
    tl.end[r].assign(s.ranks[r].size(), 0);
  }
  std::vector<size_t> next(R, 0);
  std::vector<int64_t> free_at(R, 0);
  std::vector<char> queued(R, 1);
  std::vector<size_t> work;
  for (size_t r = R; r-- > 0;) work.push_back(r);

  auto wake = [&](RankId r) {
    if (!r.valid() || r.index() >= R || queued[r.index()]) return;
    queued[r.index()] = 1;
    work.push_back(r.index());
  };

  while (!work.empty()) {
    size_t r = work.back();
    work.pop_back();
    queued[r] = 0;
    while (next[r] < units[r].size()) {
      const Unit& u = units[r][next[r]];
      int64_t ready = free_at[r];
      bool blocked = false;
      for (int32_t k = 0; k < u.count && !blocked; ++k) {
        Action a = s.ranks[r][static_cast<size_t>(u.first + k)];
        for (Action d : dependencies(p, a, index)) {
          int64_t end = done[action_id(p, d).index()];
          if (end < 0) {
            blocked = true;
            break;
          }
          ready = std::max(ready, end + (rank_of(p, d) == rank_of(p, a) ? 0 : comm));
        }
      }
      if (blocked) break;
      int64_t end = ready + u.duration;
      for (int32_t k = 0; k < u.count; ++k) {
        size_t i = static_cast<size_t>(u.first + k);
        Action a = s.ranks[r][i];
        tl.start[r][i] = ready;
        tl.end[r][i] = end;
        done[action_id(p, a).index()] = end;
      }
      free_at[r] = end;
      ++next[r];
      // Only the neighbours of the completed actions' stages can have been waiting on them.
      for (int32_t k = 0; k < u.count; ++k) {
        Action a = s.ranks[r][static_cast<size_t>(u.first + k)];
        for (int32_t ds = -1; ds <= 1; ++ds) {
          int32_t st = a.stage.value + ds;
          if (st >= 0 && st < p.num_stages()) wake(p.rank_of(a.mb, StageId(st)));
        }
      }
    }
  }

  SimResult result;
  for (size_t r = 0; r < R; ++r) {
    if (next[r] == units[r].size()) continue;
    const Unit& u = units[r][next[r]];
    for (int32_t k = 0; k < u.count; ++k) {
      Action a = s.ranks[r][static_cast<size_t>(u.first + k)];
      for (Action d : dependencies(p, a, index))
        if (done[action_id(p, d).index()] < 0) {
          result.stalls.push_back({RankId(static_cast<int32_t>(r)), u.first + k, a, d});
          k = u.count;
          break;
        }
    }
  }
  if (!result.stalls.empty()) return result;

  Metrics& m = tl.metrics;
  int64_t makespan = 0, max_span = 0, max_busy = 0, total_busy = 0;
  for (size_t r = 0; r < R; ++r) {
    int64_t busy = 0;
    for (const Unit& u : units[r]) busy += u.duration;
    int64_t span = 0;
    if (!s.ranks[r].empty()) {
      span = tl.end[r].back() - tl.start[r].front();
      makespan = std::max(makespan, tl.end[r].back());
    }
    max_span = std::max(max_span, span);
    max_busy = std::max(max_busy, busy);
    total_busy += busy;
    m.busy.push_back(tl.time(busy));
  }
  m.makespan = tl.time(makespan);
  m.max_rank_span = tl.time(max_span);
  m.bubble_ratio = makespan == 0 ? 0.0
                                 : 1.0 - static_cast<double>(total_busy) /
                                             (static_cast<double>(p.ranks) * static_cast<double>(makespan));
  m.span_bubble_rate = max_span == 0 ? 0.0 : static_cast<double>(max_span - max_busy) / static_cast<double>(max_span);
  m.peak_memory = peak_memory(s);
  // What the device holds: the activations' peak and the stages' static memory beside it.
  if (p.has_static_memory())
    for (int32_t r = 0; r < p.ranks && static_cast<size_t>(r) < m.peak_memory.size(); ++r)
      m.peak_memory[static_cast<size_t>(r)] += p.static_of(RankId(r));
  result.timeline = std::move(tl);
  return result;
}

std::vector<double> peak_memory(const Schedule& s) {
  const Problem& p = s.problem;
  const int64_t scale = memory_scale(p);
  const ScheduleIndex index(s);
  std::vector<double> out;
  for (const auto& order : s.ranks) {
    int64_t cur = 0, peak = 0;
    for (Action a : order) {
      if (!in_range(p, a)) continue;
      cur += to_fixed(memory_delta(p, a, index.checkpointed(a.mb, a.stage)), scale);
      peak = std::max(peak, cur);
    }
    out.push_back(static_cast<double>(peak) / static_cast<double>(scale));
  }
  return out;
}

}  // namespace schedc::ir
