#include "solver/synth/greedy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace schedc::solver {

std::string GreedyVariant::name() const {
  if (zb) {
    std::string n = "zb-greedy";
    if (timed_warmup >= 0) n += "-warm" + std::to_string(timed_warmup);
    else if (inflight_base >= 0) {
      n += "-L" + std::to_string(inflight_base);
      if (inflight_slope != 0) n += "s" + std::to_string(static_cast<int>(inflight_slope * 10));
    }
    auto tol = [](int32_t t) { return t < 0 ? std::string("any") : t == 0 ? std::string("0") : std::string("half"); };
    n += "-f" + tol(tol_f) + "-w" + tol(tol_w);
    if (admission) n += "-admit";
    return n;
  }
  std::string n = "greedy-" + priority;
  if (breadth_first) n += "-bfs";
  if (cap_slack) n += "-slack";
  if (lookahead) n += "-lookahead";
  if (w_reserve) n += "-wres" + std::to_string(w_reserve);
  if (admission) n += "-admit";
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
  // Under a cap, the deadlock-free admission variants (two directions at a cap of pp or less).
  if (std::any_of(inst.cap.begin(), inst.cap.end(), [](int64_t c) { return c >= 0; }))
    for (const char* prio : {"BFW", "FBW"}) {
      GreedyVariant v;
      v.priority = prio;
      v.admission = true;
      out.push_back(v);
      v.w_reserve = pp;
      out.push_back(v);
    }
  return out;
}

std::vector<GreedyVariant> zb_variants(const Instance& inst) {
  const ir::Problem& p = *inst.problem;
  const int32_t pp = p.ranks, vpp = p.stages_per_rank;
  // Typical durations in steps, for the tolerances.
  std::vector<int32_t> df, dw;
  for (size_t i = 0; i < inst.size(); ++i)
    (inst.action[i].kind == ir::ActionKind::F ? df : dw).push_back(inst.dur[i]);
  auto median = [](std::vector<int32_t> v) {
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const int32_t half_f = median(df) / 2, half_w = median(dw) / 2;
  struct Limit {
    int32_t base;
    double slope;
    int32_t warm;
  };
  // The Zero Bubble prototype's winners first (2p with slope 2, the timed warm-up), then the rest.
  std::vector<Limit> limits = {{2 * pp * vpp, 2, -1}, {-1, 0, 0}, {(2 * pp - 1) * vpp, 2, -1}, {-1, 0, 1},
                               {-1, 0, 2}, {-1, 0, -1}};
  for (double L : {1.0, 1.5, 2.0, 3.0})
    for (double slope : {0.0, 1.0, 1.5, 2.0, 2.5}) limits.push_back({static_cast<int32_t>(L * pp * vpp), slope, -1});
  for (int32_t extra : {-2, -1, 2})
    for (double slope : {1.0, 2.0}) limits.push_back({(2 * pp + extra) * vpp, slope, -1});
  std::vector<GreedyVariant> out;
  for (const Limit& l : limits)
    for (int32_t tf : {half_f, -1, 0})
      for (int32_t tw : {0, half_w, -1}) {
        GreedyVariant v;
        v.zb = true;
        v.tol_f = tf;
        v.tol_w = tw;
        v.inflight_base = l.base;
        v.inflight_slope = l.slope;
        v.timed_warmup = l.warm;
        out.push_back(v);
      }
  // Drop repeats (equal tolerances when durations are tiny, equal limits on small pipelines).
  auto same = [](const GreedyVariant& a, const GreedyVariant& b) {
    return a.tol_f == b.tol_f && a.tol_w == b.tol_w && a.timed_warmup == b.timed_warmup &&
           (a.timed_warmup >= 0 || (a.inflight_base == b.inflight_base && a.inflight_slope == b.inflight_slope));
  };
  std::vector<GreedyVariant> unique;
  for (const GreedyVariant& v : out)
    if (std::none_of(unique.begin(), unique.end(), [&](const GreedyVariant& u) { return same(u, v); })) unique.push_back(v);
  // Under a cap, the first ones again with global admission (deadlock-free; GreedyVariant::admission).
  // Two directions deadlock without it, so there they come right after the first dozen; with one
  // direction they come last, run only when the budget outlasts the rest of the sweep.
  if (std::any_of(inst.cap.begin(), inst.cap.end(), [](int64_t c) { return c >= 0; })) {
    std::vector<GreedyVariant> admit;
    for (size_t k = 0; k < std::min<size_t>(12, unique.size()); ++k) {
      admit.push_back(unique[k]);
      admit.back().admission = true;
    }
    const bool two_directions = p.direction == ir::Direction::Bidirectional;
    const size_t at = two_directions ? std::min<size_t>(12, unique.size()) : unique.size();
    unique.insert(unique.begin() + static_cast<long>(at), admit.begin(), admit.end());
  }
  return unique;
}

std::optional<std::vector<std::vector<int32_t>>> greedy_orders(const Instance& inst, const GreedyVariant& v,
                                                               const Deadline* deadline) {
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
  // Global admission (GreedyVariant::admission): need[r][mb] = the most mb can hold on rank r,
  // left[r][mb] = its actions not yet run there, booked[r] = the reservations of admitted ones.
  const size_t M = static_cast<size_t>(inst.problem->microbatches);
  std::vector<std::vector<int64_t>> need;
  std::vector<std::vector<int32_t>> left;
  std::vector<char> admitted;
  std::vector<int64_t> booked;
  const bool admission = v.admission && std::any_of(inst.cap.begin(), inst.cap.end(), [](int64_t c) { return c >= 0; });
  if (admission) {
    need.assign(R, std::vector<int64_t>(M, 0));
    left.assign(R, std::vector<int32_t>(M, 0));
    admitted.assign(M, 0);
    booked.assign(R, 0);
    for (size_t i = 0; i < n; ++i) {
      auto r = static_cast<size_t>(inst.rank[i]);
      size_t mb = inst.action[i].mb.index();
      need[r][mb] += std::max<int64_t>(0, inst.mem[i]);
      ++left[r][mb];
    }
  }
  auto admissible = [&](size_t mb) {
    if (!admission || admitted[mb]) return true;
    for (size_t r = 0; r < R; ++r)
      if (inst.cap[r] >= 0 && booked[r] + need[r][mb] > inst.cap[r] - v.cap_slack) return false;
    return true;
  };
  auto fits = [&](size_t r, size_t a) {
    if (!admissible(inst.action[a].mb.index())) return false;
    if (inst.mem[a] <= 0 || inst.cap[r] < 0) return true;
    size_t mb = inst.action[a].mb.index();
    int64_t others = held[r] - reserve[r][mb];
    int64_t mine = started[r][mb] ? reserve[r][mb] : forward_total[r][mb];  // includes this forward
    int64_t after = memory[r] + (inst.action[a].kind == ActionKind::F ? mine : inst.mem[a]) + others;
    return after <= inst.cap[r] - v.cap_slack;
  };

  // Zero Bubble rules: how many forwards minus backwards each rank may hold.
  std::vector<int64_t> inflight(R, 0), limit(R, std::numeric_limits<int64_t>::max());
  if (v.zb && (v.inflight_base >= 0 || v.timed_warmup >= 0))
    for (size_t r = 0; r < R; ++r) {
      int64_t depth = S, head_f = kNever, head_b = kNever, dur_f = 1;
      for (int32_t a : inst.on_rank[r]) {
        const auto i = static_cast<size_t>(a);
        const ir::Action& x = inst.action[i];
        if (x.kind == ActionKind::F) {
          if (inst.head[i] < head_f) head_f = inst.head[i], dur_f = std::max(1, inst.dur[i]);
          if (inst.problem->direction_of(x.mb) == 0) depth = std::min<int64_t>(depth, x.stage.value);
        } else if (ir::is_backward(x.kind)) {
          head_b = std::min<int64_t>(head_b, inst.head[i]);
        }
      }
      depth = std::min<int64_t>(depth, inst.problem->ranks - 1);
      if (v.timed_warmup >= 0) {
        if (head_f == kNever || head_b == kNever) continue;
        // Forwards that end before the first backward can arrive: one more would delay it.
        limit[r] = (head_b - head_f) / dur_f + v.timed_warmup;
      } else {
        limit[r] = static_cast<int64_t>(std::floor(v.inflight_base - v.inflight_slope * static_cast<double>(depth)));
      }
      limit[r] = std::max<int64_t>(1, limit[r]);
    }

  size_t done = 0;
  int64_t t = 0;
  Deadline::Poll poll(deadline, 16);  // a step visits every rank
  while (done < n) {
    if (poll.passed()) return std::nullopt;
    int64_t next_event = kNever;
    // Starts action `a` on free rank r at t: its order, memory and reservations, and its successors.
    auto take = [&](size_t r, int32_t a) {
      auto b = static_cast<size_t>(a);
      cand[r].erase(std::find(cand[r].begin(), cand[r].end(), a));
      orders[r].push_back(a);
      memory[r] += inst.mem[b];
      if (inst.action[b].kind == ActionKind::F) ++inflight[r];
      else if (ir::is_backward(inst.action[b].kind)) --inflight[r];
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
      if (admission) {
        size_t mb = inst.action[b].mb.index();
        if (!admitted[mb]) {
          admitted[mb] = 1;
          for (size_t q = 0; q < R; ++q) booked[q] += need[q][mb];
        }
        if (--left[r][mb] == 0) booked[r] -= need[r][mb];
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
    };
    // The Zero Bubble rules on free rank r at t: a ready backward; else a forward (within memory
    // and the in-flight limit) unless a known backward would wait on it; else a W unless such a
    // backward would, or a forward is held back. -1: idle.
    auto choose_zb = [&](size_t r) -> int32_t {
      int32_t pick_b = -1, pick_f = -1, pick_w = -1;
      int64_t key_b = kNever, key_f = kNever, key_w = kNever, soon = kNever;
      bool held_back = false;
      for (int32_t a : cand[r]) {
        auto i = static_cast<size_t>(a);
        const ActionKind k = inst.action[i].kind;
        if (ready[i] > t) {
          next_event = std::min(next_event, ready[i]);
          if (ir::is_backward(k)) soon = std::min(soon, ready[i]);
          continue;
        }
        bool is_f = k == ActionKind::F;
        if (!fits(r, i) || (is_f && inflight[r] >= limit[r])) {
          held_back = held_back || is_f;
          continue;
        }
        int64_t kk = key(a);
        if (is_f) {
          if (kk < key_f) key_f = kk, pick_f = a;
        } else if (k == ActionKind::W) {
          if (kk < key_w) key_w = kk, pick_w = a;
        } else if (kk < key_b) {
          key_b = kk, pick_b = a;
        }
      }
      auto arrives_late = [&](int32_t a, int32_t tol) {
        return tol < 0 || soon == kNever || soon >= t + inst.dur[static_cast<size_t>(a)] - tol;
      };
      if (pick_b >= 0) return pick_b;
      if (pick_f >= 0 && arrives_late(pick_f, v.tol_f)) return pick_f;
      if (pick_w >= 0 && (held_back || arrives_late(pick_w, v.tol_w))) return pick_w;
      return -1;
    };
    for (size_t r = 0; r < R; ++r) {
      if (busy_until[r] > t) {
        next_event = std::min(next_event, busy_until[r]);
        continue;
      }
      if (v.zb) {
        if (int32_t a = choose_zb(r); a >= 0) take(r, a);
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
      take(r, best);
    }
    if (done == n) break;
    if (next_event == kNever) return std::nullopt;  // every rank waits on memory that never frees
    t = next_event;
  }
  return orders;
}

}  // namespace schedc::solver
