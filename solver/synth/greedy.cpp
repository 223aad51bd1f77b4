#include "solver/synth/greedy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <set>

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
  if (banker) n += "-banker";
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
  // Under a cap, the safe-state rule (GreedyVariant::banker), where its per-rank, per-microbatch
  // state stays small.
  const size_t state = inst.on_rank.size() * static_cast<size_t>(inst.problem->microbatches);
  if (std::any_of(inst.cap.begin(), inst.cap.end(), [](int64_t c) { return c >= 0; }) && state <= 1'000'000)
    for (const char* prio : {"BFW", "FBW"})
      for (bool bfs : {false, true}) {
        if (bfs && inst.problem->stages_per_rank == 1) continue;
        GreedyVariant v;
        v.priority = prio;
        v.breadth_first = bfs;
        v.banker = true;
        out.push_back(v);
      }
  return out;
}

std::vector<GreedyVariant> zb_variants(const Instance& inst) {
  const ir::Problem& p = *inst.problem;
  const int32_t pp = p.ranks, vpp = p.stages_per_rank;
  // Typical durations in steps, for the tolerances.
  std::vector<int32_t> df, dw;
  for (size_t i = 0; i < inst.size(); ++i) (inst.action[i].kind == ir::ActionKind::F ? df : dw).push_back(inst.dur[i]);
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
  std::vector<Limit> limits = {
      {2 * pp * vpp, 2, -1}, {-1, 0, 0}, {(2 * pp - 1) * vpp, 2, -1}, {-1, 0, 1}, {-1, 0, 2}, {-1, 0, -1}};
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
    if (std::none_of(unique.begin(), unique.end(), [&](const GreedyVariant& u) { return same(u, v); }))
      unique.push_back(v);
  // Under a cap, the first ones again with global admission (deadlock-free; GreedyVariant::admission).
  // Two directions deadlock without it, so there they come right after the first dozen; with one
  // direction they come last, run only when the budget outlasts the rest of the sweep.
  if (std::any_of(inst.cap.begin(), inst.cap.end(), [](int64_t c) { return c >= 0; })) {
    std::vector<GreedyVariant> admit;
    for (size_t k = 0; k < std::min<size_t>(12, unique.size()); ++k) {
      admit.push_back(unique[k]);
      admit.back().admission = true;
    }
    const bool two_directions = p.directions > 1;
    const size_t at = two_directions ? std::min<size_t>(12, unique.size()) : unique.size();
    unique.insert(unique.begin() + static_cast<long>(at), admit.begin(), admit.end());
  }
  return unique;
}

namespace {

using ir::ActionKind;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// The list scheduler's state and rules, shared by its two candidate pools: the reference one
// (every rank scans its candidates at every event) and the indexed one (candidates sorted by key
// per category, so that a decision costs a few lookups), which decides exactly the same.
class Greedy {
 public:
  Greedy(const Instance& inst, const GreedyVariant& v) : inst_(inst), v_(v), n_(inst.size()), R_(inst.on_rank.size()) {
    missing_.resize(n_);
    ready_.assign(n_, 0);
    end_.assign(n_, -1);
    for (size_t i = 0; i < n_; ++i) missing_[i] = static_cast<int32_t>(inst.pred[i].size());
    orders_.resize(R_);
    busy_until_.assign(R_, 0);
    memory_.assign(R_, 0);
    S_ = inst.problem->num_stages();
    M_ = static_cast<size_t>(inst.problem->microbatches);
    // Memory reservations: a microbatch that has started its forwards on a rank must be able to
    // run its later forwards there too, or every rank could fill up with first stages and wait
    // forever. reserve[r][mb] = the forward memory mb still needs on rank r; held[r] = their sum.
    reserve_.assign(R_, std::vector<int64_t>(M_, 0));
    started_.assign(R_, std::vector<char>(M_, 0));
    held_.assign(R_, 0);
    forward_total_.assign(R_, std::vector<int64_t>(M_, 0));
    for (size_t i = 0; i < n_; ++i)
      if (inst.action[i].kind == ActionKind::F && inst.mem[i] > 0)
        forward_total_[static_cast<size_t>(inst.rank[i])][inst.action[i].mb.index()] += inst.mem[i];
    // Global admission (GreedyVariant::admission): need[r][mb] = the most mb can hold on rank r,
    // left[r][mb] = its actions not yet run there, booked[r] = the reservations of admitted ones.
    admission_ = v.admission && std::any_of(inst.cap.begin(), inst.cap.end(), [](int64_t c) { return c >= 0; });
    if (admission_) {
      need_.assign(R_, std::vector<int64_t>(M_, 0));
      left_.assign(R_, std::vector<int32_t>(M_, 0));
      admitted_.assign(M_, 0);
      booked_.assign(R_, 0);
      for (size_t i = 0; i < n_; ++i) {
        auto r = static_cast<size_t>(inst.rank[i]);
        size_t mb = inst.action[i].mb.index();
        need_[r][mb] += std::max<int64_t>(0, inst.mem[i]);
        ++left_[r][mb];
      }
    }
    // Safe-state admission (GreedyVariant::banker): per rank and microbatch, what it holds, what
    // its remaining actions there still add, and what it holds at its end.
    banker_ = v.banker && std::any_of(inst.cap.begin(), inst.cap.end(), [](int64_t c) { return c >= 0; });
    if (banker_) {
      hold_.assign(R_, std::vector<int64_t>(M_, 0));
      adds_.assign(R_, std::vector<int64_t>(M_, 0));
      final_.assign(R_, std::vector<int64_t>(M_, 0));
      in_flight_.assign(M_, 0);
      for (size_t i = 0; i < n_; ++i) {
        auto r = static_cast<size_t>(inst.rank[i]);
        size_t mb = inst.action[i].mb.index();
        adds_[r][mb] += std::max<int64_t>(0, inst.mem[i]);
        final_[r][mb] += inst.mem[i];
      }
    }
    // Zero Bubble rules: how many forwards minus backwards each rank may hold.
    inflight_.assign(R_, 0);
    limit_.assign(R_, std::numeric_limits<int64_t>::max());
    if (v.zb && (v.inflight_base >= 0 || v.timed_warmup >= 0))
      for (size_t r = 0; r < R_; ++r) {
        int64_t depth = S_, head_f = kNever, head_b = kNever, dur_f = 1;
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
          limit_[r] = (head_b - head_f) / dur_f + v.timed_warmup;
        } else {
          limit_[r] = static_cast<int64_t>(std::floor(v.inflight_base - v.inflight_slope * static_cast<double>(depth)));
        }
        limit_[r] = std::max<int64_t>(1, limit_[r]);
      }
  }

  /// The reference pool: per rank, its candidates in the order they came.
  std::optional<std::vector<std::vector<int32_t>>> run_scan(const Deadline* deadline);
  /// The indexed pool; only for instances where nothing but forwards adds memory (indexed_ok).
  std::optional<std::vector<std::vector<int32_t>>> run_indexed(const Deadline* deadline);
  /// Whether run_indexed decides like run_scan here: no backward or W adds memory, and a
  /// microbatch's admission needs depend on its direction only.
  bool indexed_ok() const {
    if (banker_) return false;
    for (size_t i = 0; i < n_; ++i)
      if (inst_.action[i].kind != ActionKind::F && inst_.mem[i] > 0) return false;
    if (!admission_) return true;
    for (size_t mb = 0; mb < M_; ++mb) {
      size_t first = first_of_direction(mb);
      for (size_t r = 0; r < R_; ++r)
        if (need_[r][mb] != need_[r][first]) return false;
    }
    return true;
  }

 private:
  int32_t direction(size_t mb) const { return inst_.problem->direction_of(ir::MbId(static_cast<int32_t>(mb))); }
  size_t first_of_direction(size_t mb) const {
    for (size_t k = 0; k < M_; ++k)
      if (direction(k) == direction(mb)) return k;
    return mb;
  }
  int64_t kind_rank(ActionKind k) const {
    char c = k == ActionKind::F ? 'F' : k == ActionKind::W ? 'W' : 'B';
    return static_cast<int64_t>(v_.priority.find(c));
  }
  // Smaller is better: kind preference, then microbatch order; forwards depth- or breadth-first,
  // backwards deepest stage first (it unblocks the rank before it).
  int64_t key(int32_t a) const {
    const ir::Action& x = inst_.action[static_cast<size_t>(a)];
    int64_t mb = x.mb.value, st = x.stage.value;
    int64_t k = kind_rank(x.kind) * (int64_t{1} << 40);
    if (x.kind == ActionKind::F) return k + (v_.breadth_first ? st * (1 << 20) + mb : mb * S_ + st);
    return k + mb * S_ + (S_ - 1 - st);
  }
  bool admissible(size_t mb) const {
    if (!admission_ || admitted_[mb]) return true;
    for (size_t r = 0; r < R_; ++r)
      if (inst_.cap[r] >= 0 && booked_[r] + need_[r][mb] > inst_.cap[r] - v_.cap_slack) return false;
    return true;
  }
  // Whether rank r stays safe when action a (adding memory there) starts: the started
  // microbatches, in the order they started, each fit their remaining additions in what is free then.
  bool safe_after(size_t r, size_t a) const {
    const size_t x = inst_.action[a].mb.index();
    const int64_t d = inst_.mem[a];
    int64_t free = inst_.cap[r] - v_.cap_slack - (memory_[r] + d);
    if (free < 0) return false;
    // In the order they started (one that starts now comes last): a microbatch that starts is
    // then the last on every rank, where what all others give back leaves it the whole cap, so
    // starting one never makes another rank unsafe.
    auto step = [&](size_t mb) {
      int64_t hold = hold_[r][mb] + (mb == x ? d : 0);
      int64_t adds = adds_[r][mb] - (mb == x ? d : 0);
      if (adds > free) return false;
      free += hold - final_[r][mb];
      return true;
    };
    for (size_t mb : entered_)
      if (!step(mb)) return false;
    return in_flight_[x] || step(x);
  }
  bool fits(size_t r, size_t a) const {
    if (banker_) return inst_.mem[a] <= 0 || inst_.cap[r] < 0 || safe_after(r, a);
    if (!admissible(inst_.action[a].mb.index())) return false;
    if (inst_.mem[a] <= 0 || inst_.cap[r] < 0) return true;
    size_t mb = inst_.action[a].mb.index();
    int64_t others = held_[r] - reserve_[r][mb];
    int64_t mine = started_[r][mb] ? reserve_[r][mb] : forward_total_[r][mb];  // includes this forward
    int64_t after = memory_[r] + (inst_.action[a].kind == ActionKind::F ? mine : inst_.mem[a]) + others;
    return after <= inst_.cap[r] - v_.cap_slack;
  }
  // Starts action `b` on free rank r at t: its order, memory and reservations; returns through
  // `ready` the successors it makes candidates.
  template <class OnCandidate> void take(size_t r, size_t b, int64_t t, int64_t& next_event, OnCandidate on_candidate) {
    orders_[r].push_back(static_cast<int32_t>(b));
    memory_[r] += inst_.mem[b];
    if (banker_) {
      size_t mb = inst_.action[b].mb.index();
      if (!in_flight_[mb]) entered_.push_back(mb);
      in_flight_[mb] = 1;
      hold_[r][mb] += inst_.mem[b];
      adds_[r][mb] -= std::max<int64_t>(0, inst_.mem[b]);
    }
    if (inst_.action[b].kind == ActionKind::F) ++inflight_[r];
    else if (ir::is_backward(inst_.action[b].kind)) --inflight_[r];
    if (inst_.action[b].kind == ActionKind::F && inst_.mem[b] > 0) {
      size_t mb = inst_.action[b].mb.index();
      if (!started_[r][mb]) {
        started_[r][mb] = 1;
        reserve_[r][mb] = forward_total_[r][mb];
        held_[r] += reserve_[r][mb];
      }
      reserve_[r][mb] -= inst_.mem[b];
      held_[r] -= inst_.mem[b];
    }
    if (admission_) {
      size_t mb = inst_.action[b].mb.index();
      if (!admitted_[mb]) {
        admitted_[mb] = 1;
        for (size_t q = 0; q < R_; ++q) booked_[q] += need_[q][mb];
        on_booked();
      }
      if (--left_[r][mb] == 0) {
        booked_[r] -= need_[r][mb];
        on_booked();
      }
    }
    end_[b] = t + inst_.dur[b];
    busy_until_[r] = end_[b];
    next_event = std::min(next_event, end_[b]);
    ++done_;
    for (const auto& e : inst_.succ[b]) {
      auto j = static_cast<size_t>(e.to);
      ready_[j] = std::max(ready_[j], end_[b] + e.lag);
      if (--missing_[j] == 0) on_candidate(static_cast<int32_t>(j));
    }
  }
  // The plain rules' last word on free rank r's best fitting action `best` (-1: none): whether it
  // starts now. `backward_soon`: the earliest arrival of a backward whose inputs are scheduled.
  bool plain_starts(int32_t best, int64_t t, int64_t backward_soon, int64_t pending_w, bool forward_blocked) const {
    if (best < 0) return false;
    const auto b = static_cast<size_t>(best);
    // The backward arrives before this forward would end: wait for it.
    if (v_.lookahead && inst_.action[b].kind == ActionKind::F && backward_soon < t + inst_.dur[b]) return false;
    // Keep the W for the cool-down; more work is on its way.
    if (v_.w_reserve > 0 && inst_.action[b].kind == ActionKind::W && pending_w <= v_.w_reserve && !forward_blocked &&
        backward_soon != kNever)
      return false;
    return true;
  }
  // The Zero Bubble rules' choice among the best fitting backward, forward and W (-1: none): a
  // ready backward; else the forward unless a known backward (arriving at `soon`) would wait on
  // it; else the W unless such a backward would, or a forward is held back. -1: idle.
  int32_t zb_choice(int32_t pick_b, int32_t pick_f, int32_t pick_w, bool held_back, int64_t soon, int64_t t) const {
    auto arrives_late = [&](int32_t a, int32_t tol) {
      return tol < 0 || soon == kNever || soon >= t + inst_.dur[static_cast<size_t>(a)] - tol;
    };
    if (pick_b >= 0) return pick_b;
    if (pick_f >= 0 && arrives_late(pick_f, v_.tol_f)) return pick_f;
    if (pick_w >= 0 && (held_back || arrives_late(pick_w, v_.tol_w))) return pick_w;
    return -1;
  }
  // Admission bookings changed: the indexed pool's per-direction admissibility is stale.
  void on_booked() { ++booked_version_; }

  const Instance& inst_;
  const GreedyVariant& v_;
  const size_t n_, R_;
  int32_t S_ = 1;
  size_t M_ = 0;
  std::vector<int32_t> missing_;
  std::vector<int64_t> ready_, end_;
  std::vector<std::vector<int32_t>> orders_;
  std::vector<int64_t> busy_until_, memory_;
  std::vector<std::vector<int64_t>> reserve_, forward_total_;
  std::vector<std::vector<char>> started_;
  std::vector<int64_t> held_;
  bool admission_ = false;
  std::vector<std::vector<int64_t>> need_;
  std::vector<std::vector<int32_t>> left_;
  std::vector<char> admitted_;
  std::vector<int64_t> booked_;
  bool banker_ = false;
  std::vector<std::vector<int64_t>> hold_, adds_, final_;
  std::vector<char> in_flight_;
  std::vector<size_t> entered_;  // microbatches in the order their first action started
  uint64_t booked_version_ = 0;
  std::vector<int64_t> inflight_, limit_;
  size_t done_ = 0;
};

std::optional<std::vector<std::vector<int32_t>>> Greedy::run_scan(const Deadline* deadline) {
  // Candidates: actions whose predecessors are all scheduled (ready at `ready[a]`).
  std::vector<std::vector<int32_t>> cand(R_);
  for (size_t i = 0; i < n_; ++i)
    if (missing_[i] == 0) cand[static_cast<size_t>(inst_.rank[i])].push_back(static_cast<int32_t>(i));
  int64_t t = 0;
  Deadline::Poll poll(deadline, 16);  // a step visits every rank
  while (done_ < n_) {
    if (poll.passed()) return std::nullopt;
    int64_t next_event = kNever;
    auto take_on = [&](size_t r, int32_t a) {
      cand[r].erase(std::find(cand[r].begin(), cand[r].end(), a));
      take(r, static_cast<size_t>(a), t, next_event,
           [&](int32_t j) { cand[static_cast<size_t>(inst_.rank[static_cast<size_t>(j)])].push_back(j); });
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
        const ActionKind k = inst_.action[i].kind;
        if (ready_[i] > t) {
          next_event = std::min(next_event, ready_[i]);
          if (ir::is_backward(k)) soon = std::min(soon, ready_[i]);
          continue;
        }
        bool is_f = k == ActionKind::F;
        if (!fits(r, i) || (is_f && inflight_[r] >= limit_[r])) {
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
      return zb_choice(pick_b, pick_f, pick_w, held_back, soon, t);
    };
    for (size_t r = 0; r < R_; ++r) {
      if (busy_until_[r] > t) {
        next_event = std::min(next_event, busy_until_[r]);
        continue;
      }
      if (v_.zb) {
        if (int32_t a = choose_zb(r); a >= 0) take_on(r, a);
        continue;
      }
      int32_t best = -1;
      int64_t best_key = kNever;
      int64_t backward_soon = kNever;  // a backward whose inputs are all scheduled, arriving later
      int32_t pending_w = 0;
      bool forward_blocked = false;
      for (int32_t a : cand[r]) {
        auto i = static_cast<size_t>(a);
        if (inst_.action[i].kind == ActionKind::W && ready_[i] <= t) ++pending_w;
        if (ready_[i] > t) {
          next_event = std::min(next_event, ready_[i]);
          if (ir::is_backward(inst_.action[i].kind)) backward_soon = std::min(backward_soon, ready_[i]);
          continue;
        }
        if (!fits(r, i)) {
          if (inst_.action[i].kind == ActionKind::F) forward_blocked = true;
          continue;
        }
        int64_t k = key(a);
        if (k < best_key) best_key = k, best = a;
      }
      if (plain_starts(best, t, backward_soon, pending_w, forward_blocked)) take_on(r, best);
    }
    if (done_ == n_) break;
    if (next_event == kNever) return std::nullopt;  // every rank waits on memory that never frees
    t = next_event;
  }
  return std::move(orders_);
}

// The indexed pool decides as run_scan does, from sorted sets instead of a scan: per rank, the
// ready backwards, the ready W's and the ready forwards by fitting class (forwards of microbatches
// started on the rank fit together; the others by their direction's admission and their forward
// total; forwards that add no memory by admission only), and min-heaps of the not yet ready by
// ready time. Keys are unique, so the least key of a class is the scan's pick; a class fits or not
// as a whole, so "some forward does not fit" is "some nonempty class does not"; the next event and
// the next backward's arrival are heap tops. tests/unit/solver/synthesize_test.cpp compares the
// two pools' orders on random problems and every variant.
std::optional<std::vector<std::vector<int32_t>>> Greedy::run_indexed(const Deadline* deadline) {
  using Keyed = std::pair<int64_t, int32_t>;  // (key, node): keys are unique per instance
  using Timed = std::pair<int64_t, int32_t>;  // (ready, node)
  using MinHeap = std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>>;
  struct Bucket {  // ready forwards of microbatches not started on the rank
    int32_t dir;
    int64_t total;  // their forward total on the rank; -1: they add no memory (or no cap)
    // Admitted when they became ready. A microbatch not admitted yet has no action run, so its
    // only candidate is its first forward, which stays unadmitted until it runs itself.
    bool admitted;
    std::set<Keyed> nodes;
  };
  struct Pool {
    std::set<Keyed> back, w, started_f;
    std::vector<Bucket> buckets;
    MinHeap pending, pending_back;
  };
  std::vector<Pool> pool(R_);
  // Where each ready node sits: 0 back, 1 w, 2 started_f, 3 + k bucket k.
  std::vector<int32_t> place(n_, -1);
  const int32_t D = inst_.problem->num_directions();
  // Admissibility per direction, recomputed when the bookings changed (needs depend on the
  // direction only: indexed_ok).
  std::vector<size_t> first(static_cast<size_t>(D), 0);
  for (int32_t d = 0; d < D; ++d)
    for (size_t mb = 0; mb < M_; ++mb)
      if (direction(mb) == d) {
        first[static_cast<size_t>(d)] = mb;
        break;
      }
  std::vector<char> admissible_dir(static_cast<size_t>(D), 1);
  uint64_t seen_version = ~uint64_t{0};
  auto refresh_admission = [&] {
    if (!admission_ || seen_version == booked_version_) return;
    seen_version = booked_version_;
    for (int32_t d = 0; d < D; ++d) {
      // admissible() of a microbatch not admitted yet; admitted ones always fit.
      size_t mb = first[static_cast<size_t>(d)];
      bool ok = true;
      for (size_t r = 0; r < R_ && ok; ++r)
        if (inst_.cap[r] >= 0 && booked_[r] + need_[r][mb] > inst_.cap[r] - v_.cap_slack) ok = false;
      admissible_dir[static_cast<size_t>(d)] = ok;
    }
  };
  auto add_pending = [&](int32_t j) {
    auto i = static_cast<size_t>(j);
    Pool& pl = pool[static_cast<size_t>(inst_.rank[i])];
    pl.pending.push({ready_[i], j});
    if (ir::is_backward(inst_.action[i].kind)) pl.pending_back.push({ready_[i], j});
  };
  auto make_ready = [&](size_t r, int32_t j) {
    auto i = static_cast<size_t>(j);
    Pool& pl = pool[r];
    const ActionKind k = inst_.action[i].kind;
    Keyed kk{key(j), j};
    if (k == ActionKind::W) {
      pl.w.insert(kk), place[i] = 1;
      return;
    }
    if (k != ActionKind::F) {
      pl.back.insert(kk), place[i] = 0;
      return;
    }
    size_t mb = inst_.action[i].mb.index();
    if (inst_.mem[i] > 0 && inst_.cap[r] >= 0 && started_[r][mb]) {
      pl.started_f.insert(kk), place[i] = 2;
      return;
    }
    int32_t d = direction(mb);
    int64_t total = inst_.mem[i] <= 0 || inst_.cap[r] < 0 ? -1 : forward_total_[r][mb];
    bool admitted = !admission_ || admitted_[mb];
    size_t b = 0;
    while (b < pl.buckets.size() &&
           !(pl.buckets[b].dir == d && pl.buckets[b].total == total && pl.buckets[b].admitted == admitted))
      ++b;
    if (b == pl.buckets.size()) pl.buckets.push_back({d, total, admitted, {}});
    pl.buckets[b].nodes.insert(kk);
    place[i] = 3 + static_cast<int32_t>(b);
  };
  auto unready = [&](size_t r, int32_t j) {
    auto i = static_cast<size_t>(j);
    Pool& pl = pool[r];
    Keyed kk{key(j), j};
    int32_t at = place[i];
    if (at == 0) pl.back.erase(kk);
    else if (at == 1) pl.w.erase(kk);
    else if (at == 2) pl.started_f.erase(kk);
    else pl.buckets[static_cast<size_t>(at - 3)].nodes.erase(kk);
    place[i] = -1;
  };
  for (size_t i = 0; i < n_; ++i)
    if (missing_[i] == 0) add_pending(static_cast<int32_t>(i));

  int64_t t = 0;
  Deadline::Poll poll(deadline, 16);
  while (done_ < n_) {
    if (poll.passed()) return std::nullopt;
    int64_t next_event = kNever;
    auto take_on = [&](size_t r, int32_t a) {
      unready(r, a);
      take(r, static_cast<size_t>(a), t, next_event, add_pending);
    };
    // The best ready forward that fits, and whether some ready forward does not (the scan's
    // `fits` per class: a started microbatch's forward fits when memory + held does; another one
    // when its direction is admissible and memory + held + its forward total does).
    struct Forward {
      int32_t pick = -1;
      int64_t key = kNever;
      bool blocked = false;
      bool any = false;
    };
    auto best_forward = [&](size_t r) {
      Forward f;
      Pool& pl = pool[r];
      const int64_t room = inst_.cap[r] - v_.cap_slack - memory_[r] - held_[r];
      auto offer = [&](const std::set<Keyed>& s, bool fit) {
        if (s.empty()) return;
        f.any = true;
        if (!fit) {
          f.blocked = true;
          return;
        }
        if (s.begin()->first < f.key) f.key = s.begin()->first, f.pick = s.begin()->second;
      };
      offer(pl.started_f, room >= 0);
      for (const Bucket& b : pl.buckets) {
        if (b.nodes.empty()) continue;
        if (!b.admitted) refresh_admission();
        bool fit = (b.admitted || admissible_dir[static_cast<size_t>(b.dir)]) && (b.total < 0 || b.total <= room);
        offer(b.nodes, fit);
      }
      return f;
    };
    for (size_t r = 0; r < R_; ++r) {
      if (busy_until_[r] > t) {
        next_event = std::min(next_event, busy_until_[r]);
        continue;
      }
      Pool& pl = pool[r];
      while (!pl.pending.empty() && pl.pending.top().first <= t) {
        make_ready(r, pl.pending.top().second);
        pl.pending.pop();
      }
      while (!pl.pending_back.empty() && pl.pending_back.top().first <= t) pl.pending_back.pop();
      if (!pl.pending.empty()) next_event = std::min(next_event, pl.pending.top().first);
      const int64_t soon = pl.pending_back.empty() ? kNever : pl.pending_back.top().first;
      if (v_.zb) {
        int32_t pick_b = pl.back.empty() ? -1 : pl.back.begin()->second;
        int32_t pick_w = pl.w.empty() ? -1 : pl.w.begin()->second;
        Forward f = best_forward(r);
        bool held_back = f.blocked;
        if (inflight_[r] >= limit_[r]) {
          held_back = f.any;
          f.pick = -1;
        }
        if (int32_t a = zb_choice(pick_b, f.pick, pick_w, held_back, soon, t); a >= 0) take_on(r, a);
        continue;
      }
      Forward f = best_forward(r);
      int32_t best = f.pick;
      int64_t best_key = f.key;
      if (!pl.back.empty() && pl.back.begin()->first < best_key)
        best_key = pl.back.begin()->first, best = pl.back.begin()->second;
      if (!pl.w.empty() && pl.w.begin()->first < best_key) best_key = pl.w.begin()->first, best = pl.w.begin()->second;
      if (plain_starts(best, t, soon, static_cast<int64_t>(pl.w.size()), f.blocked)) take_on(r, best);
    }
    if (done_ == n_) break;
    if (next_event == kNever) return std::nullopt;  // every rank waits on memory that never frees
    t = next_event;
  }
  return std::move(orders_);
}

}  // namespace

std::optional<std::vector<std::vector<int32_t>>> greedy_orders(const Instance& inst, const GreedyVariant& v,
                                                               const Deadline* deadline) {
  Greedy g(inst, v);
  return g.indexed_ok() ? g.run_indexed(deadline) : g.run_scan(deadline);
}

std::optional<std::vector<std::vector<int32_t>>> greedy_orders_reference(const Instance& inst, const GreedyVariant& v) {
  return Greedy(inst, v).run_scan(nullptr);
}

}  // namespace schedc::solver
