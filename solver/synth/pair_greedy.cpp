#include "solver/synth/pair_greedy.h"

#include <algorithm>
#include <limits>

#include "ir/dep_graph.h"

namespace schedc::solver {

std::string PairVariant::name() const {
  std::string n = "pair-greedy";
  n += inflight < 0 ? "-all" : "-L" + std::to_string(inflight);
  if (inflight_slope) n += "s" + std::to_string(inflight_slope);
  if (fuse_lone) n += "-fused";
  if (!pair_bw) n += "-pairB";
  if (deep_first) n += "-deep";
  return n;
}

std::vector<PairVariant> pair_variants(const ir::Problem& p) {
  std::vector<PairVariant> out;
  if (!p.cost.FB) return out;
  const int32_t pp = p.ranks, v = p.stages_per_rank;
  const bool mixed = p.backward == ir::BackwardMode::Mixed;
  for (int32_t limit : {2 * pp * v, pp * v, -1, 3 * pp * v, pp * v / 2, 3 * pp * v / 2})
    for (int32_t slope : {0, 1})
      for (bool deep : {false, true})
        for (bool fuse : {false, true}) {
          if (limit < 0 && slope) continue;
          if (fuse && !mixed) continue;
          PairVariant x;
          x.inflight = limit;
          x.inflight_slope = slope;
          x.deep_first = deep;
          x.fuse_lone = fuse;
          out.push_back(x);
        }
  if (mixed) {  // units of F and B, the W's left to fill gaps
    PairVariant x;
    x.inflight = 2 * pp * v;
    x.pair_bw = false;
    out.push_back(x);
  }
  return out;
}

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

class PairScheduler {
 public:
  PairScheduler(const ir::Problem& p, const PairVariant& v) : p_(p), v_(v), g_(p) {
    const size_t n = g_.size();
    const auto R = static_cast<size_t>(p.ranks);
    left_.assign(n, 0);
    arrive_.assign(n, 0);
    end_.assign(n, -1);
    released_.resize(R);
    free_.assign(R, 0);
    mem_.assign(R, 0);
    inflight_.assign(R, 0);
    wake_.assign(R, 0);
    cap_.assign(R, -1);
    const int64_t mscale = g_.memory_scale();
    for (size_t r = 0; r < R; ++r)
      if (auto c = p.cap_of(ir::RankId(static_cast<int32_t>(r)))) cap_[r] = ir::to_fixed(*c, mscale);
    for (size_t i = 0; i < n; ++i) {
      auto node = static_cast<int32_t>(i);
      left_[i] = static_cast<int32_t>(g_.preds(node).size());
      if (left_[i] == 0) released_[static_cast<size_t>(g_.rank(node))].push_back(node);
    }
    s_.problem = p;
    s_.ranks.resize(R);
    s_.overlap.resize(R);
  }

  std::optional<ir::Schedule> run(const Deadline* deadline) {
    Deadline::Poll poll(deadline, 1024);
    const auto R = static_cast<size_t>(p_.ranks);
    while (done_ < g_.size()) {
      if (poll.passed()) return std::nullopt;
      // The rank that decides first: the earliest time a released action of it can start.
      size_t rank = R;
      int64_t when = kNever;
      for (size_t r = 0; r < R; ++r) {
        // After an idle wait, only what arrives from then on can change the rank's choice.
        int64_t first = kNever;
        for (int32_t x : released_[r])
          if (arrive_[static_cast<size_t>(x)] >= wake_[r]) first = std::min(first, arrive_[static_cast<size_t>(x)]);
        if (first == kNever) continue;
        int64_t t = std::max(free_[r], first);
        if (t < when) when = t, rank = r;
      }
      if (rank == R) return std::nullopt;  // every rank waits for room that never comes back
      decide(rank, when);
    }
    if (!s_.has_overlap()) s_.overlap.clear();
    return std::move(s_);
  }

 private:
  bool ready(int32_t x, int64_t t) const { return arrive_[static_cast<size_t>(x)] <= t; }
  ir::ActionKind kind(int32_t x) const { return g_.action(x).kind; }
  int32_t w_of(int32_t b) const {
    ir::Action a = g_.action(b);
    return g_.node_of(ir::W(a.mb.value, a.stage.value));
  }
  bool fits(size_t r, int64_t delta) const { return cap_[r] < 0 || mem_[r] + delta <= cap_[r]; }
  int32_t limit(size_t r) const {
    if (v_.inflight < 0) return std::numeric_limits<int32_t>::max();
    return std::max(1, v_.inflight - v_.inflight_slope * static_cast<int32_t>(r));
  }

  // Runs `nodes` (one step: one action, a BW as its B and W nodes, or a unit) from t for `dur`.
  void start(size_t r, std::initializer_list<int32_t> nodes, int64_t t, int64_t dur) {
    const int64_t e = t + dur;
    for (int32_t x : nodes) {
      if (x < 0) continue;
      const auto xi = static_cast<size_t>(x);
      end_[xi] = e;
      ++done_;
      mem_[r] += g_.memory(x);
      auto& rel = released_[r];
      if (auto it = std::find(rel.begin(), rel.end(), x); it != rel.end()) {
        *it = rel.back();
        rel.pop_back();
      }
    }
    for (int32_t x : nodes) {
      if (x < 0) continue;
      for (const ir::DepGraph::Edge& d : g_.succs(x)) {
        const auto si = static_cast<size_t>(d.node);
        arrive_[si] = std::max(arrive_[si], e + d.lag);
        if (--left_[si] == 0 && end_[si] < 0) {
          auto sr = static_cast<size_t>(g_.rank(d.node));
          released_[sr].push_back(d.node);
        }
      }
    }
    free_[r] = e;
    wake_[r] = 0;
  }

  // The action rank r starts at t, or an idle wait until the next arrival.
  void decide(size_t r, int64_t t) {
    const bool mixed = p_.backward == ir::BackwardMode::Mixed;
    int32_t f = -1, b = -1, w = -1;
    for (int32_t x : released_[r]) {
      if (!ready(x, t)) continue;
      const auto xi = static_cast<size_t>(x);
      ir::Action a = g_.action(x);
      switch (a.kind) {
        case ir::ActionKind::F: {
          if (f < 0) {
            f = x;
            break;
          }
          ir::Action c = g_.action(f);
          bool better = v_.deep_first ? std::pair(-a.stage.value, arrive_[xi]) <
                                            std::pair(-c.stage.value, arrive_[static_cast<size_t>(f)])
                                      : std::pair(arrive_[xi], a.mb.value) <
                                            std::pair(arrive_[static_cast<size_t>(f)], c.mb.value);
          if (better) f = x;
          break;
        }
        case ir::ActionKind::B:
        case ir::ActionKind::BW:
          if (b < 0 || std::pair(arrive_[xi], x) < std::pair(arrive_[static_cast<size_t>(b)], b)) b = x;
          break;
        case ir::ActionKind::W:
          if (w < 0 || x < w) w = x;
          break;
        case ir::ActionKind::R: break;  // the canonical graph has no recomputation
      }
    }
    // A backward as the step would run it: with its W (a BW) when `fused`.
    auto backward_ticks = [&](int32_t x, bool fused) {
      if (!fused) return g_.duration(x);
      return ir::to_fixed(ir::cost_of(p_, ir::BW(g_.action(x).mb.value, g_.action(x).stage.value)), g_.time_scale());
    };
    auto backward_memory = [&](int32_t x, bool fused) { return g_.memory(x) + (fused ? g_.memory(w_of(x)) : 0); };
    auto record = [&](ir::Action a) { s_.ranks[r].push_back(a); };
    auto as_run = [&](int32_t x, bool fused) {
      ir::Action a = g_.action(x);
      return fused ? ir::BW(a.mb.value, a.stage.value) : a;
    };
    if (f >= 0 && b >= 0) {
      const bool fused = mixed && v_.pair_bw;
      const int64_t unit = ir::to_fixed(ir::overlap_cost(p_, g_.action(f), as_run(b, fused)), g_.time_scale());
      const int64_t mb = backward_memory(b, fused);
      // The backward first in the unit: its memory is freed before the forward's is taken.
      bool room = fits(r, mb) && (cap_[r] < 0 || mem_[r] + mb + g_.memory(f) <= cap_[r]);
      if (unit < g_.duration(f) + backward_ticks(b, fused) && room) {
        s_.overlap[r].push_back(static_cast<int32_t>(s_.ranks[r].size()));
        record(as_run(b, fused));
        record(g_.action(f));
        start(r, {b, fused ? w_of(b) : -1, f}, t, unit);
        return;
      }
    }
    if (b >= 0) {
      const bool fused = mixed && v_.fuse_lone;
      if (fits(r, std::max<int64_t>(0, backward_memory(b, fused)))) {
        record(as_run(b, fused));
        --inflight_[r];
        start(r, {b, fused ? w_of(b) : -1}, t, backward_ticks(b, fused));
        return;
      }
    }
    if (f >= 0 && inflight_[r] < limit(r) && fits(r, g_.memory(f))) {
      record(g_.action(f));
      ++inflight_[r];
      start(r, {f}, t, g_.duration(f));
      return;
    }
    if (w >= 0 && fits(r, std::max<int64_t>(0, g_.memory(w)))) {
      record(g_.action(w));
      start(r, {w}, t, g_.duration(w));
      return;
    }
    // Nothing to start now: wait for what arrives later (the rank's own actions are what frees
    // memory and in-flight room, so what is ready now stays blocked until then).
    wake_[r] = t + 1;
  }

  const ir::Problem& p_;
  const PairVariant& v_;
  ir::DepGraph g_;
  std::vector<int32_t> left_;
  std::vector<int64_t> arrive_, end_;
  std::vector<std::vector<int32_t>> released_;
  std::vector<int64_t> free_, mem_, cap_;
  std::vector<int32_t> inflight_;
  std::vector<int64_t> wake_;
  size_t done_ = 0;
  ir::Schedule s_;
};

}  // namespace

std::optional<ir::Schedule> pair_greedy(const ir::Problem& p, const PairVariant& v, const Deadline* deadline) {
  if (!p.cost.FB) return std::nullopt;
  return PairScheduler(p, v).run(deadline);
}

}  // namespace schedc::solver
