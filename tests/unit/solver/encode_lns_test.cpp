// Direct tests of two parts the solver stands on (docs/solver.md, sections 3 and "Local
// search"), held to exhaustive enumeration where the problems are tiny:
// - the time-indexed SAT model (solver/synth/encode.h): on the exact grid it has a schedule at
//   the true optimum and none one step below, every schedule it gives is valid under the cap,
//   and a forbidden bound stays forbidden;
// - the LNS window (solver/synth/lns.h): over the whole timeline it reaches the optimum and
//   nothing below it; over a part, whatever it returns is valid, meets the target, and keeps what
//   started before the window in place and what comes after it in its old order;
// - the greedy list scheduler (solver/synth/greedy.h): every variant's orders verify under the
//   cap, or it says it got stuck (synthesize_test.cpp holds its deadlock-freedom and pool tests).

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <optional>

#include <z3++.h>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/synth/encode.h"
#include "solver/synth/explain.h"
#include "solver/synth/greedy.h"
#include "solver/synth/instance.h"
#include "solver/synth/lns.h"
#include "tests/common/builders.h"
#include "tests/common/enumerate.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// Tiny problems whose every schedule enumeration visits: single direction, both backward forms,
// comm latencies that are and are not whole steps of the other costs, caps that bind and that
// leave no schedule at all, V-shape.
std::vector<Problem> tiny_problems() {
  std::vector<Problem> out;
  for (BackwardMode b : {BackwardMode::Split, BackwardMode::Fused})
    for (double comm : {0.0, 0.5, 1.0})
      for (double cap : {0.0, 1.0, 1.5, 2.0}) {
        Problem p = test::problem(b == BackwardMode::Split ? 3 : 2, 2, b);
        p.cost.F = PerStage::of(2);
        p.cost.B = PerStage::of(2);
        p.cost.W = PerStage::of(1);
        p.cost.comm = comm;
        if (cap > 0) p.memory.cap = PerStage::of(cap);
        out.push_back(p);
      }
  Problem v = test::problem(2, 1, BackwardMode::Split);
  v.stages_per_rank = 2;
  v.placement = PlacementKind::VShape;
  v.cost.comm = 1;
  out.push_back(v);
  v.memory.cap = PerStage::of(2);
  out.push_back(v);
  v.memory.cap = PerStage::of(1.5);  // one microbatch needs 2 on each rank: no schedule
  out.push_back(v);
  return out;
}

int32_t steps_of(const solver::Instance& inst, double time) {
  const int64_t ticks = to_fixed(time, inst.time_scale);
  REQUIRE(ticks % inst.ticks_per_step == 0);
  return static_cast<int32_t>(ticks / inst.ticks_per_step);
}

// Every action's duration and every lag, in steps: a horizon no schedule without idle time at
// every step needs more than.
int32_t serial_horizon(const solver::Instance& inst) {
  int64_t total = 0;
  for (size_t a = 0; a < inst.size(); ++a) {
    total += inst.dur[a];
    for (const auto& e : inst.succ[a]) total += e.lag;
  }
  return static_cast<int32_t>(total + 1);
}

}  // namespace

TEST_CASE("the time-indexed model: a schedule at the enumerated optimum, none a step below, all valid") {
  int solved = 0, infeasible = 0;
  for (const Problem& p : tiny_problems()) {
    const double best = test::brute_force(p);
    solver::Instance inst = solver::build_instance(p, {});
    REQUIRE(inst.exact);
    z3::context ctx;
    solver::TimeIndexedModel model(inst, serial_horizon(inst), false, ctx);
    CAPTURE(p.num_stages());
    CAPTURE(p.cost.comm);
    CAPTURE(p.memory.cap ? p.memory.cap->at(0) : 0.0);
    if (!std::isfinite(best)) {  // no order meets the cap: neither does the model, at any bound
      CHECK((!model.feasible_horizon() || model.probe(model.horizon()) == z3::unsat));
      ++infeasible;
      continue;
    }
    REQUIRE(model.feasible_horizon());
    const int32_t opt = steps_of(inst, best);
    REQUIRE(model.probe(opt) == z3::sat);
    int32_t steps = -1;
    Schedule s = solver::to_schedule(inst, model.orders(&steps));
    CHECK(steps <= opt);
    CHECK(verify(s).empty());
    CHECK(simulate(s).timeline->metrics.makespan <= best + 1e-9);
    CHECK(model.probe(opt - 1) == z3::unsat);
    // A bound once proved infeasible stays so, and the optimum is still reachable.
    model.forbid(opt - 1);
    CHECK(model.probe(opt - 1) == z3::unsat);
    CHECK(model.probe(opt) == z3::sat);
    ++solved;
  }
  CHECK(solved >= 14);
  CHECK(infeasible >= 1);
}

TEST_CASE("the max-span model is a relaxation: sat at the enumerated optimum, no answer better once simulated") {
  // Its deadline bounds end - origin per rank in the model's times, while a rank span is measured
  // on the as-soon-as-possible timeline (docs/solver.md, "Max-span"), so a bound below the
  // optimum may be satisfiable; an unsat one never is below it, and no answer beats it.
  Problem p = test::problem(3, 2, BackwardMode::Split);
  p.objective = Objective::MaxSpan;
  p.cost.comm = 1;
  const double best = test::brute_force(p);
  REQUIRE(std::isfinite(best));
  solver::Instance inst = solver::build_instance(p, {});
  z3::context ctx;
  solver::TimeIndexedModel model(inst, serial_horizon(inst), true, ctx);
  const int32_t opt = steps_of(inst, best);
  int32_t least = opt + 1;
  for (int32_t b = opt; b >= 0 && model.probe(b) == z3::sat; --b) {
    least = b;
    Schedule s = solver::to_schedule(inst, model.orders());
    CHECK(verify(s).empty());
    CHECK(simulate(s).timeline->metrics.max_rank_span >= best - 1e-9);
    if (b == opt) CHECK(simulate(s).timeline->metrics.max_rank_span <= best + 1e-9);
  }
  CHECK(least <= opt);
  CHECK(least > 0);
}

namespace {

// A window [t0, t1) of the incumbent's timeline, in ticks.
struct Window {
  int64_t t0, t1;
};

std::optional<Schedule> run_window(const Schedule& inc, Window w, int64_t target, solver::LnsStats& stats) {
  const Timeline tl = *simulate(inc).timeline;
  z3::context ctx;
  auto limits = [&] {
    z3::params prm(ctx);
    prm.set("timeout", 20000u);
    return prm;
  };
  return solver::improve_window(inc, tl, w.t0, w.t1, target, solver::exact_grid(inc.problem), ctx, limits, 1'000'000,
                                stats);
}

int64_t makespan_ticks(const Schedule& s) {
  const Timeline tl = *simulate(s).timeline;
  int64_t end = 0;
  for (const auto& ends : tl.end)
    for (int64_t e : ends) end = std::max(end, e);
  return end;
}

}  // namespace

TEST_CASE("the LNS window over the whole timeline reaches the enumerated optimum and nothing below") {
  test::Rng rng(3181);
  int checked = 0;
  for (const Problem& p : tiny_problems()) {
    const double best = test::brute_force(p);
    if (!std::isfinite(best)) continue;
    // A valid incumbent under the cap: GPipe's or a random order, whichever fits.
    std::optional<Schedule> inc;
    for (int k = 0; k < 200 && !inc; ++k) {
      Schedule s = test::random_valid(p, rng);
      if (verify(s).empty()) inc = s;
    }
    if (!inc) continue;
    const int64_t scale = time_scale(p), opt = to_fixed(best, scale), end = makespan_ticks(*inc);
    CAPTURE(p.num_stages());
    CAPTURE(p.cost.comm);
    CAPTURE(p.memory.cap ? p.memory.cap->at(0) : 0.0);
    solver::LnsStats stats;
    if (opt < end) {
      std::optional<Schedule> at = run_window(*inc, {0, end + 1}, opt, stats);
      REQUIRE(at);
      CHECK(verify(*at).empty());
      CHECK(makespan_ticks(*at) == opt);
    }
    CHECK(!run_window(*inc, {0, end + 1}, opt - 1, stats));
    ++checked;
  }
  CHECK(checked >= 12);
}

TEST_CASE("an LNS window keeps what started before it and the order after it") {
  test::Rng rng(4099);
  int improved = 0, tried = 0;
  for (int trial = 0; trial < 120; ++trial) {
    Problem p = test::problem(test::uniform(rng, 2, 3), test::uniform(rng, 2, 4),
                              test::uniform(rng, 0, 1) ? BackwardMode::Split : BackwardMode::Fused);
    p.cost.F = PerStage::of(test::uniform(rng, 1, 3));
    p.cost.B = PerStage::of(test::uniform(rng, 1, 3));
    p.cost.W = PerStage::of(test::uniform(rng, 0, 2));
    p.cost.comm = 0.5 * test::uniform(rng, 0, 2);
    if (test::uniform(rng, 0, 1)) p.stages_per_rank = 2;
    Schedule inc = test::random_valid(p, rng);
    if (!verify(inc).empty()) continue;
    const Timeline tl = *simulate(inc).timeline;
    const int64_t end = makespan_ticks(inc);
    const int64_t t0 = end * test::uniform(rng, 0, 6) / 8,
                  t1 = t0 + std::max<int64_t>(1, end * test::uniform(rng, 1, 4) / 8);
    solver::LnsStats stats;
    ++tried;
    std::optional<Schedule> out = run_window(inc, {t0, t1}, end - 1, stats);
    CHECK(stats.windows == 1);
    if (!out) continue;
    ++improved;
    CAPTURE(trial);
    CHECK(verify(*out).empty());
    CHECK(makespan_ticks(*out) <= end - 1);
    for (size_t r = 0; r < inc.ranks.size(); ++r) {
      // Per rank: the actions that started before t0, then those that started in the window (in
      // any order), then the rest in their old order.
      std::vector<Action> pre, free, after;
      for (size_t i = 0; i < inc.ranks[r].size(); ++i) {
        const int64_t s = tl.start[r][i];
        (s < t0 ? pre : s < t1 ? free : after).push_back(inc.ranks[r][i]);
      }
      const std::vector<Action>& got = out->ranks[r];
      REQUIRE(got.size() == inc.ranks[r].size());
      CHECK(std::equal(pre.begin(), pre.end(), got.begin()));
      std::vector<Action> middle(got.begin() + static_cast<std::ptrdiff_t>(pre.size()),
                                 got.begin() + static_cast<std::ptrdiff_t>(pre.size() + free.size()));
      CHECK(std::is_permutation(middle.begin(), middle.end(), free.begin(), free.end()));
      CHECK(std::equal(after.begin(), after.end(), got.end() - static_cast<std::ptrdiff_t>(after.size())));
    }
    // What started before the window starts at the same tick.
    const Timeline now = *simulate(*out).timeline;
    for (size_t r = 0; r < inc.ranks.size(); ++r)
      for (size_t i = 0; i < inc.ranks[r].size() && tl.start[r][i] < t0; ++i) CHECK(now.start[r][i] == tl.start[r][i]);
  }
  CHECK(tried > 100);
  CHECK(improved > 20);
}

TEST_CASE("every greedy variant's orders, where it does not get stuck, are valid under the cap") {
  // The list scheduler (solver/synth/greedy.h) gives the search its incumbents: each of its
  // priority rules and Zero Bubble sweeps, on random problems (every placement, both directions,
  // vpp up to 3) capped from the sequential schedule's peak up to twice it, with and without
  // symmetry, returns orders that verify (every action once, dependencies, the cap) or nothing.
  test::Rng rng(5303);
  int valid = 0, stuck = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    test::set_memory(p, test::uniform(rng, 1, 2), 0, -1);
    if (p.backward == BackwardMode::Fused) p.memory.B = PerStage::of(-p.memory.F.at(0)), p.memory.W = PerStage::of(0);
    else p.memory.W = PerStage::of(-p.memory.F.at(0));
    const std::vector<double> peaks = peak_memory(solver::sequential_schedule(p));
    p.memory.cap = PerStage::of(*std::max_element(peaks.begin(), peaks.end()) * (1 + 0.25 * test::uniform(rng, 0, 4)));
    if (!validate(p).empty()) continue;
    const bool symmetry = test::uniform(rng, 0, 1);
    solver::Instance inst = solver::build_instance(p, {0, symmetry});
    CAPTURE(trial);
    for (const auto& variants : {solver::greedy_variants(inst), solver::zb_variants(inst)})
      for (const solver::GreedyVariant& v : variants) {
        CAPTURE(v.name());
        auto orders = solver::greedy_orders(inst, v);
        if (!orders) {
          ++stuck;
          continue;
        }
        CHECK(verify(solver::to_schedule(inst, *orders)).empty());
        ++valid;
      }
  }
  CHECK(valid > 500);
  MESSAGE("greedy runs: " << valid << " valid, " << stuck << " stuck");
}
