// Tiny problems against every schedule they have: every per-rank order, every choice of BW or
// B + W (mixed), every set of overlapped F&B units. The bound must stay at or below the best
// objective under every cap, uniform or per rank, for both objectives. Random orders rarely come
// close to the optimum; here the best schedule is known, so a bound one tick too high fails.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/synth/relax.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;
using test::uniform;

namespace {

constexpr size_t kMaxVariantsPerRank = 4000;
constexpr size_t kMaxSchedules = 60000;

// A rank's order with one set of overlapped units.
struct Variant {
  std::vector<Action> order;
  std::vector<int32_t> units;
};

bool depends_on(const Problem& p, Action a, Action d) {
  int mb = a.mb.value, s = a.stage.value;
  if (d.mb.value != mb) return false;
  if (a.kind == ActionKind::F) return s > 0 && d == F(mb, s - 1);
  if (a.kind == ActionKind::W) return d == B(mb, s);
  return d == F(mb, s) || (s + 1 < p.num_stages() && d.stage.value == s + 1 && is_backward(d.kind));
}

// Every order of `acts` consistent with the dependencies among them, each with every set of
// disjoint adjacent (forward, backward) pairs of different microbatches as units (a pair of one
// microbatch never starts: its backward depends on all of its forwards). False when too many.
bool rank_variants(const Problem& p, const std::vector<Action>& acts, std::vector<Variant>& out) {
  std::vector<Action> cur;
  std::vector<char> used(acts.size(), 0);
  std::function<bool()> go = [&]() -> bool {
    if (cur.size() == acts.size()) {
      std::vector<int32_t> units;
      std::function<bool(size_t)> pick = [&](size_t i) -> bool {
        if (i + 1 >= cur.size()) {
          out.push_back({cur, units});
          return out.size() <= kMaxVariantsPerRank;
        }
        if (!pick(i + 1)) return false;
        Action a = cur[i], b = cur[i + 1];
        bool pair = (a.kind == ActionKind::F && is_backward(b.kind)) ||
                    (b.kind == ActionKind::F && is_backward(a.kind));
        if (!pair || a.mb == b.mb) return true;
        units.push_back(static_cast<int32_t>(i));
        bool ok = pick(i + 2);
        units.pop_back();
        return ok;
      };
      return pick(0);
    }
    for (size_t i = 0; i < acts.size(); ++i) {
      if (used[i]) continue;
      bool ready = true;
      for (size_t j = 0; j < acts.size() && ready; ++j)
        if (!used[j] && j != i && depends_on(p, acts[i], acts[j])) ready = false;
      if (!ready) continue;
      used[i] = 1;
      cur.push_back(acts[i]);
      bool ok = go();
      cur.pop_back();
      used[i] = 0;
      if (!ok) return false;
    }
    return true;
  };
  return go();
}

struct Outcome {
  double makespan = 0, max_span = 0;
  std::vector<double> peaks;
};

// Every valid schedule's objectives and peaks; false when the problem has too many to enumerate.
bool enumerate_all(const Problem& p, std::vector<Outcome>& out) {
  const int S = p.num_stages();
  std::vector<int> cells;  // (mb, s) that may take BW or B + W
  for (int mb = 0; mb < p.microbatches; ++mb)
    for (int s = 0; s < S; ++s) cells.push_back(mb * S + s);
  const int choices = p.backward == BackwardMode::Mixed ? 1 << cells.size() : 1;
  for (int mask = 0; mask < choices; ++mask) {
    std::vector<std::vector<Action>> acts(static_cast<size_t>(p.ranks));
    for (int mb = 0; mb < p.microbatches; ++mb)
      for (int s = 0; s < S; ++s) {
        bool fused = p.backward == BackwardMode::Fused ||
                     (p.backward == BackwardMode::Mixed && (mask >> (mb * S + s)) & 1);
        std::vector<Action> as = fused ? std::vector<Action>{F(mb, s), BW(mb, s)}
                                       : std::vector<Action>{F(mb, s), B(mb, s), W(mb, s)};
        for (Action a : as) acts[rank_of(p, a).index()].push_back(a);
      }
    std::vector<std::vector<Variant>> variants(acts.size());
    size_t total = 1;
    for (size_t r = 0; r < acts.size(); ++r) {
      if (!rank_variants(p, acts[r], variants[r])) return false;
      total *= variants[r].size();
      if (total * static_cast<size_t>(choices) > kMaxSchedules) return false;
    }
    Schedule s;
    s.problem = p;
    s.ranks.resize(acts.size());
    s.overlap.resize(acts.size());
    std::function<void(size_t)> go = [&](size_t r) {
      if (r == acts.size()) {
        SimResult sim = simulate(s);
        if (!sim.timeline) return;
        const Metrics& m = sim.timeline->metrics;
        out.push_back({m.makespan, m.max_rank_span, m.peak_memory});
        return;
      }
      for (const Variant& v : variants[r]) {
        s.ranks[r] = v.order;
        s.overlap[r] = v.units;
        go(r + 1);
      }
    };
    go(0);
  }
  return true;
}

// Caps to try: none, every distinct largest peak (uniform), and the peaks of `per_rank` random
// schedules (per rank, when there are several ranks).
std::vector<std::optional<PerStage>> caps_of(const Problem& p, const std::vector<Outcome>& all, test::Rng& rng,
                                             int per_rank) {
  std::vector<std::optional<PerStage>> caps{std::nullopt};
  std::vector<double> tops;
  for (const Outcome& o : all) tops.push_back(*std::max_element(o.peaks.begin(), o.peaks.end()));
  std::sort(tops.begin(), tops.end());
  tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
  for (double t : tops) caps.push_back(PerStage::of(t));
  for (int k = 0; k < per_rank && p.ranks > 1; ++k) {
    size_t pick = static_cast<size_t>(uniform(rng, 0, static_cast<int>(all.size()) - 1));
    caps.push_back(PerStage::list(all[pick].peaks));
  }
  return caps;
}

// Per-stage F and B of 0.5 to fb_halves / 2 and W of 0 to w_halves / 2, in half units.
void random_half_costs(Problem& p, test::Rng& rng, int fb_halves, int w_halves) {
  std::vector<double> f, b, w;
  for (int s = 0; s < p.num_stages(); ++s)
    f.push_back(uniform(rng, 1, fb_halves) * 0.5), b.push_back(uniform(rng, 1, fb_halves) * 0.5),
        w.push_back(uniform(rng, 0, w_halves) * 0.5);
  p.cost.F = PerStage::list(f);
  p.cost.B = PerStage::list(b);
  p.cost.W = PerStage::list(w);
}

Problem tiny_problem(test::Rng& rng) {
  Problem p;
  p.ranks = uniform(rng, 1, 2);
  switch (uniform(rng, 0, 3)) {
    case 0: p.placement = PlacementKind::Looped, p.stages_per_rank = uniform(rng, 1, 2); break;
    case 1: p.placement = PlacementKind::VShape, p.stages_per_rank = 2; break;
    case 2: p.placement = PlacementKind::Wave, p.stages_per_rank = 2; break;
    default: p.placement = PlacementKind::Custom, p.stages_per_rank = uniform(rng, 1, 2); break;
  }
  if (p.ranks * p.stages_per_rank > 2) p.stages_per_rank = 1;
  if (p.placement == PlacementKind::VShape || p.placement == PlacementKind::Wave) p.ranks = 1, p.stages_per_rank = 2;
  p.directions = uniform(rng, 0, 3) == 0 ? 2 : 1;
  p.microbatches = p.directions == 2 ? 2 : uniform(rng, 1, p.num_stages() == 1 ? 3 : 2);
  test::detail::random_custom_map(p, rng);
  p.backward = test::detail::random_backward(rng);
  // Half units, or values on fine ticks (seven digits, 1e-7: below the 1e-6 that once was the
  // finest tick and rounded them), so that units and sums are timed at many scales.
  static const double weird[] = {0, 0.3333333, 0.6666667, 1e-7, 3e-7, 6e-7, 1.5e-6, 4e-7, 5e-7, 1e-6, 2.5e-6, 7e-7};
  const bool odd = uniform(rng, 0, 1);
  auto one = [&] { return odd ? weird[uniform(rng, 0, 11)] : uniform(rng, 0, 6) * 0.5; };
  auto cost = [&] {
    if (uniform(rng, 0, 2) == 0) return PerStage::of(one());
    std::vector<double> v;
    for (int s = 0; s < p.num_stages(); ++s) v.push_back(one());
    return PerStage::list(v);
  };
  p.cost.F = cost();
  p.cost.B = cost();
  p.cost.W = cost();
  p.cost.comm = odd ? one() : uniform(rng, 0, 2) * 0.5;
  if (uniform(rng, 0, 4) != 0) {
    if (uniform(rng, 0, 1)) {
      p.cost.FB = PerStage::of(odd ? one() + one() : uniform(rng, 0, 12) * 0.5);
    } else {
      std::vector<double> v;
      for (int s = 0; s < p.num_stages(); ++s) v.push_back(odd ? one() + one() : uniform(rng, 0, 12) * 0.5);
      p.cost.FB = PerStage::list(v);
    }
  }
  static const double mem_f[] = {1, 0.5, 2, 0};
  static const double mem_b[] = {-0.5, 0, -1, 0.5};
  static const double mem_w[] = {-0.5, -1, 0, 0.5};
  p.memory.F = PerStage::of(mem_f[uniform(rng, 0, 3)]);
  p.memory.B = PerStage::of(mem_b[uniform(rng, 0, 3)]);
  p.memory.W = PerStage::of(mem_w[uniform(rng, 0, 3)]);
  return p;
}

}  // namespace

TEST_CASE("no schedule of a tiny problem beats the lower bound (every order, every unit set)") {
  test::Rng rng(4242);
  int enumerated = 0, schedules = 0, tight = 0;
  for (int trial = 0; trial < 500; ++trial) {
    Problem p = tiny_problem(rng);
    REQUIRE(validate(p).empty());
    std::vector<Outcome> all;
    if (!enumerate_all(p, all) || all.empty()) continue;
    ++enumerated;
    schedules += static_cast<int>(all.size());
    const std::vector<std::optional<PerStage>> caps = caps_of(p, all, rng, 3);
    for (const auto& cap : caps)
      for (Objective obj : {Objective::Makespan, Objective::MaxSpan}) {
        Problem q = p;
        q.memory.cap = cap;
        q.objective = obj;
        double best = std::numeric_limits<double>::infinity();
        for (const Outcome& o : all) {
          bool fits = true;
          for (int r = 0; r < q.ranks; ++r)
            if (cap && o.peaks[static_cast<size_t>(r)] > *q.cap_of(RankId(r))) fits = false;
          if (fits) best = std::min(best, obj == Objective::Makespan ? o.makespan : o.max_span);
        }
        if (!std::isfinite(best)) continue;
        LowerBound lb = lower_bound(q);
        if (lb.value == best) ++tight;
        INFO("trial " << trial << ": pp " << q.ranks << " vpp " << q.stages_per_rank << " m " << q.microbatches << " "
                      << to_string(q.placement) << " " << direction_name(q.directions) << " " << to_string(q.backward)
                      << " " << to_string(obj) << " F " << q.cost.F.at(0) << " B " << q.cost.B.at(0) << " W "
                      << q.cost.W.at(0) << " comm " << q.cost.comm << " FB " << (q.cost.FB ? q.cost.FB->at(0) : -1.0)
                      << " cap " << (cap ? cap->at(0) : -1.0) << ": bound " << lb.value << " from " << lb.reason
                      << ", best of " << all.size() << " schedules " << best);
        CHECK(lb.value <= best);
      }
  }
  MESSAGE(enumerated << " problems, " << schedules << " schedules, " << tight << " tight bounds");
  CHECK(enumerated > 150);
}

TEST_CASE("no schedule of a tiny problem beats the rounded-down relaxation's bound") {
  // The relaxation (solver/synth/relax.h) is a proof too: on every problem it applies to, under
  // every cap the enumeration gives, its bound is at most the best makespan of all schedules.
  // Asked from 0 (not from ir::lower_bound), so every probe it makes must be sound.
  test::Rng rng(5151);
  int applied = 0, proved = 0, stronger = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Problem p = tiny_problem(rng);
    p.cost.FB.reset();  // overlapped units are outside the model
    if (!solver::relaxation_applies(p)) continue;
    std::vector<Outcome> all;
    if (!enumerate_all(p, all) || all.empty()) continue;
    const std::vector<std::optional<PerStage>> caps = caps_of(p, all, rng, 1);
    for (const auto& cap : caps) {
      Problem q = p;
      q.memory.cap = cap;
      double best = std::numeric_limits<double>::infinity(), worst = 0;
      for (const Outcome& o : all) {
        bool fits = true;
        for (int r = 0; r < q.ranks; ++r)
          if (cap && o.peaks[static_cast<size_t>(r)] > *q.cap_of(RankId(r))) fits = false;
        if (fits) best = std::min(best, o.makespan), worst = std::max(worst, o.makespan);
      }
      if (!std::isfinite(best) || !solver::relaxation_applies(q)) continue;
      ++applied;
      z3::context ctx;
      solver::RelaxOptions ro;
      ro.limits = [](z3::params& prm) {
        prm.set("timeout", 10000u);
        return true;
      };
      solver::Relaxation rx = solver::relaxed_bound(q, 0, worst, ctx, ro);
      if (rx.bound > 0) ++proved;
      if (rx.bound > lower_bound(q).value) ++stronger;
      INFO("trial " << trial << ": pp " << q.ranks << " vpp " << q.stages_per_rank << " m " << q.microbatches << " "
                    << to_string(q.placement) << " " << direction_name(q.directions) << " " << to_string(q.backward)
                    << " F " << q.cost.F.at(0) << " B " << q.cost.B.at(0) << " W " << q.cost.W.at(0) << " comm "
                    << q.cost.comm << " cap " << (cap ? cap->at(0) : -1.0) << ": relaxed bound " << rx.bound
                    << " on grid " << rx.grid << ", best of " << all.size() << " schedules " << best);
      CHECK(rx.bound <= best);
    }
  }
  MESSAGE(applied << " capped problems, a relaxed bound on " << proved << ", above ir::lower_bound on " << stronger);
  CHECK(applied > 100);
  CHECK(proved > 50);
}

TEST_CASE("the microbatches that fill the cap: no schedule beats the bound (term 10)") {
  // Term 10 needs fewer microbatches in a window than the direction has (k < m), so a few more
  // microbatches than tiny_problem draws: one direction, fused or split, one or two ranks, a V on
  // one rank, memory that a backward frees in parts, overlapped units with and without a saving,
  // every order and unit set, under every cap the enumeration gives.
  test::Rng rng(1010);
  int enumerated = 0, from_term = 0, tight = 0;
  for (int trial = 0; trial < 160; ++trial) {
    Problem p;
    const bool fused = trial % 2 == 0;
    p.backward = fused ? BackwardMode::Fused : BackwardMode::Split;
    p.ranks = trial % 4 < 2 ? 1 : 2;
    if (trial % 8 == 1) p.placement = PlacementKind::VShape, p.stages_per_rank = 2;
    p.microbatches = fused && p.ranks == 1 && p.stages_per_rank == 1 ? 4 : 3;
    random_half_costs(p, rng, 4, 2);
    p.cost.comm = uniform(rng, 0, 2) * 0.5;
    if (uniform(rng, 0, 2) == 0) p.cost.FB = PerStage::of(uniform(rng, 2, 8) * 0.5);
    p.memory.F = PerStage::of(1);
    p.memory.B = PerStage::of(fused ? -1 : uniform(rng, 0, 1) == 0 ? -0.5 : 0);
    p.memory.W = PerStage::of(fused ? 0 : -1 - p.memory.B.at(0));
    REQUIRE(validate(p).empty());
    std::vector<Outcome> all;
    if (!enumerate_all(p, all) || all.empty()) continue;
    ++enumerated;
    for (const auto& cap : caps_of(p, all, rng, 2)) {
      if (!cap) continue;
      Problem q = p;
      q.memory.cap = cap;
      double best = std::numeric_limits<double>::infinity();
      for (const Outcome& o : all) {
        bool fits = true;
        for (int r = 0; r < q.ranks; ++r)
          if (o.peaks[static_cast<size_t>(r)] > *q.cap_of(RankId(r))) fits = false;
        if (fits) best = std::min(best, o.makespan);
      }
      if (!std::isfinite(best)) continue;
      // The term itself, whether or not it is the largest.
      LowerBound lb;
      for (const LowerBound& t : lower_bound_terms(q))
        if (t.reason.find("fill the cap") != std::string::npos && t.value > lb.value) lb = t;
      if (lb.value == 0) continue;
      ++from_term;
      tight += lb.value == best;
      INFO("trial " << trial << ": pp " << q.ranks << " vpp " << q.stages_per_rank << " m " << q.microbatches << " "
                    << to_string(q.backward) << " F " << q.cost.F.at(0) << " B " << q.cost.B.at(0) << " W "
                    << q.cost.W.at(0) << " comm " << q.cost.comm << " FB " << (q.cost.FB ? q.cost.FB->at(0) : -1.0)
                    << " cap " << cap->at(0) << ": bound " << lb.value << " from " << lb.reason << ", best of "
                    << all.size() << " schedules " << best);
      CHECK(lb.value <= best);
    }
  }
  MESSAGE(enumerated << " problems, term 10 applies under " << from_term << " caps, tight under " << tight);
  CHECK(enumerated > 30);
  CHECK(from_term > 20);
}

TEST_CASE("one microbatch at a time: no order of whole stays beats the bound (terms 6 and 9)") {
  // Under a cap that holds one microbatch at a time (memory F = 1 and a backward that frees it in
  // parts, cap 1), every valid order of a rank is a sequence of whole stays: after F(mb, s) nothing
  // but that stay's B and W fits. So the permutations of each rank's stays are all its schedules,
  // and small problems with two directions (where the first stays decide when the other rank can
  // run) can be enumerated to the optimum. (A rank with two stages of one direction has no
  // schedule under such a cap: the first stage's stay would have to hold the second's.)
  test::Rng rng(9090);
  int tried = 0, tight = 0, opening = 0;
  for (int trial = 0; trial < 64; ++trial) {
    Problem p;
    switch (trial % 16 == 15 ? 2 : trial % 4 == 2 ? 3 : trial % 4) {
      case 0: p.ranks = 2, p.directions = 2, p.microbatches = 4; break;
      case 1: p.ranks = 3, p.directions = 2, p.microbatches = 4; break;
      case 2: p.ranks = 2, p.directions = 2, p.microbatches = 6; break;
      default: p.ranks = 3, p.microbatches = 3; break;
    }
    const bool fused = uniform(rng, 0, 2) == 0;
    p.backward = fused ? BackwardMode::Fused : BackwardMode::Split;
    random_half_costs(p, rng, 6, 3);
    static const double comms[] = {0, 0.1, 0.5, 1.5};
    p.cost.comm = comms[uniform(rng, 0, 3)];
    p.memory.F = PerStage::of(1);
    p.memory.B = PerStage::of(fused ? -1 : uniform(rng, 0, 1) == 0 ? -0.5 : 0);
    p.memory.W = PerStage::of(fused ? 0 : -1 - p.memory.B.at(0));
    p.memory.cap = PerStage::of(1);
    REQUIRE(validate(p).empty());
    // Each rank's stays, as the actions of one (microbatch, stage) in order.
    std::vector<std::vector<std::vector<Action>>> stays(static_cast<size_t>(p.ranks));
    for (int mb = 0; mb < p.microbatches; ++mb)
      for (int s = 0; s < p.num_stages(); ++s) {
        std::vector<Action> stay{F(mb, s)};
        if (fused) stay.push_back(BW(mb, s));
        else stay.push_back(B(mb, s)), stay.push_back(W(mb, s));
        stays[p.rank_of(MbId(mb), StageId(s)).index()].push_back(stay);
      }
    std::vector<std::vector<std::vector<Action>>> orders(static_cast<size_t>(p.ranks));
    for (size_t r = 0; r < stays.size(); ++r) {
      std::vector<size_t> idx(stays[r].size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      do {
        std::vector<Action> o;
        for (size_t i : idx) o.insert(o.end(), stays[r][i].begin(), stays[r][i].end());
        orders[r].push_back(o);
      } while (std::next_permutation(idx.begin(), idx.end()));
    }
    double best = std::numeric_limits<double>::infinity();
    Schedule sched;
    sched.problem = p;
    sched.ranks.resize(static_cast<size_t>(p.ranks));
    std::function<void(size_t)> pick = [&](size_t r) {
      if (r == orders.size()) {
        SimResult sim = simulate(sched);
        if (sim.timeline) best = std::min(best, sim.timeline->metrics.makespan);
        return;
      }
      for (const auto& o : orders[r]) {
        sched.ranks[r] = o;
        pick(r + 1);
      }
    };
    pick(0);
    INFO("trial " << trial << " pp " << p.ranks << " " << direction_name(p.directions) << " " << to_string(p.backward));
    REQUIRE(std::isfinite(best));
    ++tried;
    LowerBound lb = lower_bound(p);
    INFO("trial " << trial << ": pp " << p.ranks << " vpp " << p.stages_per_rank << " " << to_string(p.placement) << " "
                  << direction_name(p.directions) << " " << to_string(p.backward) << " comm " << p.cost.comm
                  << ": bound " << lb.value << " from " << lb.reason << ", best " << best);
    CHECK(lb.value <= best + 1e-9);
    if (std::abs(lb.value - best) < 1e-9) ++tight;
    if (lb.reason.find("which stay opens") != std::string::npos) ++opening;
  }
  MESSAGE(tried << " problems, " << tight << " tight bounds, " << opening << " from the opening stays");
  CHECK(opening > 0);
}
