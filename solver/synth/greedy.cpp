#include "solver/synth/greedy.h"

#include <algorithm>
#include <limits>

namespace schedc::solver {

std::string GreedyVariant::name() const {
  std::string n = "greedy-" + priority;
  if (breadth_first) n += "-bfs";
  if (cap_slack) n += "-slack";
  if (lookahead) n += "-lookahead";
  if (w_reserve) n += "-wres" + std::to_string(w_reserve);
  return n;
}

std::vector<GreedyVariant> greedy_variants(const Instance& inst) {
  std::vector<GreedyVariant> out;
  for (const char* prio : {"BFW", "FBW", "BWF"})
    for (bool bfs : {false, true}) {
      if (bfs && inst.problem->stages_per_rank == 1) continue;
      out.push_back({prio, bfs, 0, false, 0});
    }
  // Zero Bubble style: backwards never wait behind a forward, and weight gradients are kept back to
  // fill the cool-down (as far as the cap allows).
  const int32_t pp = inst.problem->ranks;
  for (bool bfs : {false, true}) {
    if (bfs && inst.problem->stages_per_rank == 1) continue;
    out.push_back({"BFW", bfs, 0, true, 0});
    out.push_back({"BFW", bfs, 0, true, pp});
    out.push_back({"BFW", bfs, 0, false, pp});
  }
  return out;
}

std::optional<std::vector<std::vector<int32_t>>> greedy_orders(const Instance& inst, const GreedyVariant& v) {
  using ir::ActionKind;
  const size_t n = inst.size(), R = inst.on_rank.size();
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  std::vector<int32_t> missing(n);
  std::vector<int64_t> ready(n, 0), end(n, -1);
  for (size_t i = 0; i < n; ++i) missing[i] = static_cast<int32_t>(inst.pred[i].size());
  // Candidates: actions whose predecessors are all scheduled (ready at `ready[a]`).
  std::vector<std::vector<int32_t>> cand(R);
  for (size_t i = 0; i < n; ++i)
    if (missing[i] == 0) cand[static_cast<size_t>(inst.rank[i])].push_back(static_cast<int32_t>(i));
  std::vector<std::vector<int32_t>> orders(R);
  std::vector<int64_t> busy_until(R, 0), memory(R, 0);
  const int32_t S = inst.problem->num_stages();

  auto kind_rank = [&](ActionKind k) {
    char c = k == ActionKind::F ? 'F' : k == ActionKind::W ? 'W' : 'B';
    return static_cast<int64_t>(v.priority.find(c));
  };
  // Smaller is better: kind preference, then microbatch order; forwards depth- or breadth-first,
  // backwards deepest stage first (it unblocks the rank before it).
  auto key = [&](int32_t a) {
    const ir::Action& x = inst.action[static_cast<size_t>(a)];
    int64_t mb = x.mb.value, st = x.stage.value;
    int64_t k = kind_rank(x.kind) * (int64_t{1} << 40);
    if (x.kind == ActionKind::F) return k + (v.breadth_first ? st * (1 << 20) + mb : mb * S + st);
    return k + mb * S + (S - 1 - st);
  };

  // Memory reservations: a microbatch that has started its forwards on a rank must be able to run
  // its later forwards there too, or every rank could fill up with first stages and wait forever.
  // reserve[r][mb] = the forward memory mb still needs on rank r; held[r] = their sum.
  std::vector<std::vector<int64_t>> reserve(R, std::vector<int64_t>(static_cast<size_t>(inst.problem->microbatches), 0));
  std::vector<std::vector<char>> started(R, std::vector<char>(static_cast<size_t>(inst.problem->microbatches), 0));
  std::vector<int64_t> held(R, 0);
  std::vector<std::vector<int64_t>> forward_total(R, std::vector<int64_t>(static_cast<size_t>(inst.problem->microbatches), 0));
  for (size_t i = 0; i < n; ++i)
    if (inst.action[i].kind == ActionKind::F && inst.mem[i] > 0)
      forward_total[static_cast<size_t>(inst.rank[i])][inst.action[i].mb.index()] += inst.mem[i];
  auto fits = [&](size_t r, size_t a) {
    if (inst.mem[a] <= 0 || inst.cap[r] < 0) return true;
    size_t mb = inst.action[a].mb.index();
    int64_t others = held[r] - reserve[r][mb];
    int64_t mine = started[r][mb] ? reserve[r][mb] : forward_total[r][mb];  // includes this forward
    int64_t after = memory[r] + (inst.action[a].kind == ActionKind::F ? mine : inst.mem[a]) + others;
    return after <= inst.cap[r] - v.cap_slack;
  };

  size_t done = 0;
  int64_t t = 0;
  while (done < n) {
    int64_t next_event = kNever;
    for (size_t r = 0; r < R; ++r) {
      if (busy_until[r] > t) {
        next_event = std::min(next_event, busy_until[r]);
        continue;
      }
      int32_t best = -1;
      int64_t best_key = kNever;
      int64_t backward_soon = kNever;  // a backward whose inputs are all scheduled, arriving later
      int32_t pending_w = 0;
      bool forward_blocked = false;
      for (int32_t a : cand[r]) {
        auto i = static_cast<size_t>(a);
        if (inst.action[i].kind == ActionKind::W && ready[i] <= t) ++pending_w;
        if (ready[i] > t) {
          next_event = std::min(next_event, ready[i]);
          if (ir::is_backward(inst.action[i].kind)) backward_soon = std::min(backward_soon, ready[i]);
          continue;
        }
        if (!fits(r, i)) {
          if (inst.action[i].kind == ActionKind::F) forward_blocked = true;
          continue;
        }
        int64_t k = key(a);
        if (k < best_key) best_key = k, best = a;
      }
      if (best >= 0 && v.lookahead && inst.action[static_cast<size_t>(best)].kind == ActionKind::F &&
          backward_soon < t + inst.dur[static_cast<size_t>(best)])
        continue;  // the backward arrives before this forward would end: wait for it
      if (best >= 0 && v.w_reserve > 0 && inst.action[static_cast<size_t>(best)].kind == ActionKind::W &&
          pending_w <= v.w_reserve && !forward_blocked && backward_soon != kNever)
        continue;  // keep it for the cool-down; more work is on its way
      if (best < 0) continue;
      auto b = static_cast<size_t>(best);
      cand[r].erase(std::find(cand[r].begin(), cand[r].end(), best));
      orders[r].push_back(best);
      memory[r] += inst.mem[b];
      if (inst.action[b].kind == ActionKind::F && inst.mem[b] > 0) {
        size_t mb = inst.action[b].mb.index();
        if (!started[r][mb]) {
          started[r][mb] = 1;
          reserve[r][mb] = forward_total[r][mb];
          held[r] += reserve[r][mb];
        }
        reserve[r][mb] -= inst.mem[b];
        held[r] -= inst.mem[b];
      }
      end[b] = t + inst.dur[b];
      busy_until[r] = end[b];
      next_event = std::min(next_event, end[b]);
      ++done;
      for (const auto& e : inst.succ[b]) {
        auto j = static_cast<size_t>(e.to);
        ready[j] = std::max(ready[j], end[b] + e.lag);
        if (--missing[j] == 0) cand[static_cast<size_t>(inst.rank[j])].push_back(e.to);
      }
    }
    if (done == n) break;
    if (next_event == kNever) return std::nullopt;  // every rank waits on memory that never frees
    t = next_event;
  }
  return orders;
}

}  // namespace schedc::solver
