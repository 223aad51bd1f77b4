// The synthesizer: never worse than the best family, always verified, deterministic in
// deterministic mode, and infeasibility explained in the spec's terms.

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/explain.h"
#include "solver/synth/greedy.h"
#include "solver/synth/relax.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"
#include "tests/common/solve.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// A deterministic solve on one thread: the same result on every machine.
solver::SolveResult solve_deterministic(const Problem& p, double seconds) {
  return solver::synthesize(p, test::deterministic(seconds));
}

Problem grid_problem(int pp, int m, int vpp, bool unequal, double cap) {
  Problem p = test::problem(pp, m, BackwardMode::Split);
  p.stages_per_rank = vpp;
  if (vpp == 2) p.placement = PlacementKind::VShape;
  if (unequal) {
    p.cost.F = PerStage::of(2);
    p.cost.B = PerStage::of(2);
    p.cost.W = PerStage::of(1);
    p.cost.comm = 0.5;
  }
  if (cap > 0) p.memory.cap = PerStage::of(cap);
  return p;
}

}  // namespace

TEST_CASE("never worse than the best applicable family, always verified") {
  for (int pp : {2, 4})
    for (int vpp : {1, 2})
      for (bool unequal : {false, true})
        for (double cap : {0.0, double(pp), 1.5 * pp}) {
          Problem p = grid_problem(pp, 2 * pp, vpp, unequal, cap);
          double best_family = 1e18;
          for (const auto& f : solver::families()) {
            Diagnostics d;
            if (auto s = solver::generate_family(f.name, p, {}, SourceLoc{}, d))
              best_family = std::min(best_family, simulate(*s).timeline->metrics.makespan);
          }
          solver::SolveOptions o;
          o.time_limit_s = 2;
          o.deterministic = true;
          solver::SolveResult r = solver::synthesize(p, o);
          CAPTURE(pp);
          CAPTURE(vpp);
          CAPTURE(unequal);
          CAPTURE(cap);
          REQUIRE(r.schedule.has_value());
          CHECK(verify(*r.schedule).empty());
          CHECK(simulate(*r.schedule).timeline->metrics.makespan == r.objective);
          CHECK(r.objective <= best_family + 1e-9);
          CHECK(r.lower_bound <= r.objective + 1e-9);
        }
}

TEST_CASE("provenance carries the contract's keys") {
  Problem p = grid_problem(4, 8, 1, true, 6);
  solver::SolveOptions o;
  o.time_limit_s = 10;
  solver::SolveResult r = solver::synthesize(p, o);
  auto prov = nlohmann::json::parse(ir::provenance_json(*r.schedule->provenance));
  for (const char* key : {"status", "objective", "lower_bound", "gap", "incumbent", "seconds", "z3"})
    CHECK_MESSAGE(prov.contains(key), key);
  CHECK(prov["incumbent"].contains("name"));
  CHECK(prov["incumbent"].contains("value"));
  CHECK(prov["status"] == "optimal");
  CHECK(prov["objective"].get<double>() < prov["incumbent"]["value"].get<double>());  // Z3 beat zb-h1 here
}

TEST_CASE("deterministic mode gives byte-identical schedules") {
  Problem p = grid_problem(4, 8, 2, true, 5);
  solver::SolveOptions o;
  o.time_limit_s = 3;
  o.deterministic = true;
  auto a = solver::synthesize(p, o);
  auto b = solver::synthesize(p, o);
  REQUIRE(a.schedule.has_value());
  REQUIRE(b.schedule.has_value());
  CHECK(write_schedule_json(*a.schedule, nullptr) == write_schedule_json(*b.schedule, nullptr));
}

TEST_CASE("an impossible cap is explained: the rank, what it needs, the smallest cap, the conflict") {
  Problem p = grid_problem(4, 8, 2, false, 0);
  p.placement = PlacementKind::Looped;
  p.memory.cap = PerStage::of(1.5);  // rank 0 holds stages 0 and 4: one microbatch needs 2
  solver::SolveResult r = solver::synthesize(p, {});
  REQUIRE(r.status == solver::SolveStatus::Infeasible);
  REQUIRE(r.infeasible.has_value());
  CHECK(r.infeasible->rank == 0);
  CHECK(r.infeasible->needed == 2);
  CHECK(r.infeasible->smallest_cap == 2);
  CHECK(r.infeasible->conflicting_fields ==
        std::vector<ir::Field>{ir::Field::MemoryF, ir::Field::MemoryCap, ir::Field::StagesPerRank});
  CHECK_FALSE(r.schedule.has_value());
}

TEST_CASE("windows (LNS) improve an incumbent when no whole-instance model fits") {
  Problem p = grid_problem(4, 8, 1, true, 6);
  solver::SolveOptions o;
  o.time_limit_s = 4;
  o.deterministic = true;
  o.use_families = false;
  o.use_greedy = false;  // the incumbent is the one-microbatch-at-a-time schedule
  o.use_local = false;   // the windows alone
  o.max_literals = 20'000;
  solver::SolveResult r = solver::synthesize(p, o);
  REQUIRE(r.schedule.has_value());
  auto prov = nlohmann::json::parse(ir::provenance_json(*r.schedule->provenance));
  CHECK(prov["incumbent"]["name"] == "sequential");
  CHECK(prov["z3"]["lns"]["windows"].get<int>() > 0);
  CHECK(verify(*r.schedule).empty());
  // One microbatch at a time takes m * (F + B + W) * pp plus comm; the windows must do far better.
  CHECK(r.objective < 0.8 * r.incumbent_value);
}

TEST_CASE("durations spanning 12 orders of magnitude: no false optimum (issue 10)") {
  // The exact grid is one tick (1e-6); the forwards last 1e12 ticks. A 32-bit cast once turned
  // them negative and Z3 "proved" 22999992.000015 optimal though 13999997.000011 is valid.
  Problem p = test::problem(3, 6, BackwardMode::Split, 1000000, 0.000001, 999999);
  p.memory.cap = PerStage::of(2);
  solver::SolveResult r = solve_deterministic(p, 2);
  REQUIRE(r.schedule.has_value());
  CHECK(verify(*r.schedule).empty());
  CHECK(r.lower_bound <= r.objective);
  CHECK(r.objective <= 13999997.000011 + 1e-6);
  CHECK(r.bound_error.empty());  // no valid schedule was below the bound
}

TEST_CASE("an infinite time limit in deterministic mode still runs Z3 (issue 10)") {
  Problem p = grid_problem(4, 8, 1, true, 6);  // examples/solve-zero-bubble-cap.sched: 48, proved
  for (double limit : {std::numeric_limits<double>::infinity(), 1e15}) {
    solver::SolveOptions o;
    o.time_limit_s = limit;
    o.deterministic = true;
    solver::SolveResult r = solver::synthesize(p, o);
    CHECK(r.status == solver::SolveStatus::Optimal);
    CHECK(r.objective == 48);
  }
}

TEST_CASE("the Zero Bubble paper's 1.5B, m = 32 row in its own units, cap 2p M_B: below ZB-2p's rate") {
  // Costs in ms and memory in the paper's activation units (values above the old 1e6 limit).
  Problem p = test::problem(8, 32, BackwardMode::Split, 18.513, 18.086, 9.331);
  p.objective = Objective::MaxSpan;
  p.cost.comm = 0.626;
  test::set_memory(p, 201216, 73728 - 201216, -73728);
  p.memory.cap = PerStage::of(2 * 8 * 201216);
  REQUIRE(validate(p).empty());
  solver::SolveResult r = solve_deterministic(p, 2);
  REQUIRE(r.schedule.has_value());
  CHECK(verify(*r.schedule).empty());
  Metrics m = simulate(*r.schedule).timeline->metrics;
  CHECK(m.span_bubble_rate < 0.0039);  // the paper's ZB-2p
  CHECK(*std::max_element(m.peak_memory.begin(), m.peak_memory.end()) <= 2 * 8 * 201216);
  CHECK(r.lower_bound <= r.objective);
}

TEST_CASE("costs that are not whole ticks: the exact model claims nothing (found by verify --optimal)") {
  // Each action is 1.6 ticks, rounded to 2; an overlapped F&B unit (no FB: the sum, rounded once)
  // lasts 3 and a mixed BW 3, so schedules the model cannot express finish earlier.
  for (BackwardMode mode : {BackwardMode::Split, BackwardMode::Mixed}) {
    Problem p = test::problem(2, 4, mode, 0.0000016, 0.0000016, 0.0000016);
    solver::SolveResult r = solve_deterministic(p, 1);
    REQUIRE(r.schedule.has_value());
    // Valid schedules with units reach 2.4e-5 (split) and 2.2e-5 (mixed).
    double known = mode == BackwardMode::Split ? 2.4e-5 : 2.2e-5;
    if (r.status == solver::SolveStatus::Optimal) CHECK(r.objective <= known + 1e-12);
    CHECK(r.lower_bound <= known + 1e-12);
  }
}

TEST_CASE("two directions under a cap of pp or less: the admission variants never deadlock") {
  // Every rank holds a stage of each direction; without global admission both directions fill the
  // ranks with first stages and wait on each other, and the sequential schedule was all that was
  // left (559.05 here at every cap).
  Problem p = test::problem(8, 32, BackwardMode::Split);
  p.directions = 2;
  p.cost.comm = 0.05;
  test::set_memory(p, 1, 0, -1);
  const double sequential = simulate(solver::sequential_schedule(p)).timeline->metrics.makespan;
  for (double cap : {2.0, 4.0, 6.0, 8.0}) {
    CAPTURE(cap);
    p.memory.cap = PerStage::of(cap);
    solver::Instance inst = solver::build_instance(p, {0, /*symmetry=*/false});
    int admitted = 0;
    double best = std::numeric_limits<double>::infinity();
    for (const auto& variants : {solver::greedy_variants(inst), solver::zb_variants(inst)})
      for (const solver::GreedyVariant& v : variants) {
        if (!v.admission) continue;
        ++admitted;
        auto orders = solver::greedy_orders(inst, v);
        REQUIRE_MESSAGE(orders, v.name() << " deadlocked");
        Schedule s = solver::to_schedule(inst, *orders);
        REQUIRE(verify(s).empty());  // the cap included
        best = std::min(best, simulate(s).timeline->metrics.makespan);
      }
    CHECK(admitted >= 4);
    // cap 2: 253.75, cap 4: 154.55 (against 559.05 sequential)
    CHECK(best < sequential / 2);
  }
}

TEST_CASE("a passed deadline ends a family's list scheduler and a greedy run without a diagnostic") {
  // The solver hands its time limit to the generators that can run long at scale (ListScheduler:
  // zb-h2 took 10 s at pp 1024 under a cap) and to every greedy run; past it they give up.
  Problem p = test::problem(4, 8, BackwardMode::Split);
  Deadline passed;
  passed.at = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  Deadline later;  // never passes
  for (const char* family : {"zb-h2", "interleaved-zb", "v-min", "chimera"}) {
    CAPTURE(family);
    Problem q = p;
    solver::apply_family_defaults(*solver::find_family(family), {ir::Field::Backward}, q);
    Diagnostics diags;
    CHECK(solver::generate_family(family, q, {}, SourceLoc{}, diags, &later));
    CHECK_MESSAGE(!diags.has_errors(), diags.str());
    // A list scheduler polls the clock every 4096 steps: a problem with more actions than that.
    q.microbatches = 4096;
    if (std::string(family) == "chimera") q.microbatches = 4096;  // even, as chimera needs
    auto s = solver::generate_family(family, q, {}, SourceLoc{}, diags, &passed);
    if (std::string(family) == "interleaved-zb") {
      // Its fixed order (PyTorch's) needs no list scheduler: that one is still returned.
      CHECK(s);
    } else {
      CHECK(!s);
    }
    CHECK_MESSAGE(!diags.has_errors(), diags.str());
  }
  solver::Instance inst = solver::build_instance(p, {0, /*symmetry=*/false});
  for (const solver::GreedyVariant& v : solver::greedy_variants(inst)) {
    CHECK(solver::greedy_orders(inst, v, &later));
    CHECK(!solver::greedy_orders(inst, v, &passed));
  }
}

TEST_CASE("the verifier's simulation is handed back when asked for, equal to simulate's") {
  Problem p = grid_problem(4, 8, 1, true, 6);
  Diagnostics diags;
  auto s = solver::generate_family("zb-h1", p, {}, SourceLoc{}, diags);
  REQUIRE(s);
  SimResult sim;
  VerifyOptions vo;
  vo.simulation = &sim;
  REQUIRE(verify(*s, vo).empty());
  REQUIRE(sim.timeline);
  SimResult direct = simulate(*s);
  CHECK(sim.timeline->start == direct.timeline->start);
  CHECK(sim.timeline->end == direct.timeline->end);
  CHECK(sim.timeline->metrics.makespan == direct.timeline->metrics.makespan);
}

TEST_CASE("families are tried native ones first, but ties still go to the registry's order") {
  // Split backward: zb-h1 and the fused 1f1b (adapted to split) tie on makespan for some costs;
  // trying zb-h1's kind first must not change which one a deterministic solve reports.
  for (bool split : {true, false}) {
    Problem p = test::problem(4, 8, split ? BackwardMode::Split : BackwardMode::Fused);
    solver::SolveOptions o;
    o.deterministic = true;
    o.threads = 1;
    o.use_greedy = o.use_z3 = o.use_local = false;  // families only
    solver::SolveResult r = solver::synthesize(p, o);
    REQUIRE(r.schedule);
    // The best value among the families, and the first family in registry order reaching it.
    double best = std::numeric_limits<double>::infinity();
    std::string first;
    for (const solver::FamilyInfo& f : solver::families()) {
      Diagnostics scratch;
      auto s = solver::generate_family(f.name, p, {}, SourceLoc{}, scratch);
      if (!s) continue;
      double v = simulate(*s).timeline->metrics.makespan;
      if (v < best) best = v, first = f.name;
    }
    CAPTURE(split);
    CHECK(r.objective == best);
    CHECK(nlohmann::json::parse(ir::provenance_json(*r.schedule->provenance)).value("found_by", "") == first);
  }
}

TEST_CASE("under a binding cap the rounded-down relaxation proves more than the closed-form bound") {
  // pp 4, m 16, split, F = B = W = 1, comm 0.05, memory F = 1, B = 0, W = -1, cap 2: ir::lower_bound's
  // memory terms give 67.4; the relaxation on a grid of 1 (comm rounded down to 0) finds no
  // schedule before 81, and the solver reports a bound above the closed form, below its schedule.
  Problem p = test::problem(4, 16, BackwardMode::Split);
  p.cost.comm = 0.05;
  test::set_memory(p, 1, 0, -1);
  p.memory.cap = PerStage::of(2);
  REQUIRE(solver::relaxation_applies(p));
  const double closed_form = lower_bound(p).value;
  const double sequential = simulate(solver::sequential_schedule(p)).timeline->metrics.makespan;
  z3::context ctx;
  solver::RelaxOptions ro;
  ro.limits = [](z3::params& prm) {
    prm.set("timeout", 30000u);
    return true;
  };
  solver::Relaxation rx = solver::relaxed_bound(p, closed_form, sequential, ctx, ro);
  MESSAGE("closed form " << closed_form << ", relaxation " << rx.bound << " (" << rx.probes << " probes, grid "
                         << rx.grid << ")");
  CHECK(rx.bound > closed_form);
  solver::SolveResult r = solve_deterministic(p, 4);
  REQUIRE(r.schedule);
  MESSAGE("solve: " << r.objective << ", bound " << r.lower_bound << " (" << r.bound_reason << ")");
  CHECK(r.lower_bound <= r.objective);
  CHECK(r.lower_bound > closed_form);
  CHECK(r.bound_error.empty());
}

TEST_CASE("the greedy's indexed candidate pools give exactly the reference scan's orders") {
  // greedy_orders answers each rank's decision from sorted sets instead of scanning every
  // candidate at every event (26 s a run at pp 1024 under a cap); the orders must be identical,
  // stuck runs included, for every variant, with and without caps, admission included.
  test::Rng rng(777);
  int compared = 0, stuck = 0, capped = 0;
  auto compare = [&](const solver::Instance& inst, const std::vector<solver::GreedyVariant>& variants) {
    for (const solver::GreedyVariant& v : variants) {
      CAPTURE(v.name());
      auto fast = solver::greedy_orders(inst, v);
      auto reference = solver::greedy_orders_reference(inst, v);
      REQUIRE(fast.has_value() == reference.has_value());
      if (fast) CHECK(*fast == *reference);
      else ++stuck;
      ++compared;
    }
  };
  for (int trial = 0; trial < 120; ++trial) {
    Problem p = test::random_problem(rng, {5, 10, true});
    p.memory.F = PerStage::of(test::uniform(rng, 1, 2));
    p.memory.B = PerStage::of(test::uniform(rng, 0, 1) ? 0 : -0.5 * p.memory.F.at(0));
    p.memory.W = PerStage::of(-p.memory.F.at(0) - p.memory.B.at(0));
    if (p.backward == BackwardMode::Fused) p.memory.W = PerStage::of(0), p.memory.B = PerStage::of(-p.memory.F.at(0));
    if (test::uniform(rng, 0, 3) != 0) {
      Schedule seq = solver::sequential_schedule(p);
      std::vector<double> peaks = peak_memory(seq);
      double top = *std::max_element(peaks.begin(), peaks.end());
      p.memory.cap = PerStage::of(top * (1 + test::uniform(rng, 0, 3)));
      ++capped;
    }
    if (!validate(p).empty()) continue;
    solver::Instance inst = solver::build_instance(p, {0, /*symmetry=*/false});
    std::vector<solver::GreedyVariant> variants = solver::greedy_variants(inst);
    std::vector<solver::GreedyVariant> zb = solver::zb_variants(inst);
    for (size_t k = 0; k < zb.size(); k += 7) variants.push_back(zb[k]);
    CAPTURE(trial);
    compare(inst, variants);
  }
  // And every variant on the two-direction problem where admission matters (pp 8, m 32, caps 2-8).
  Problem p = test::problem(8, 32, BackwardMode::Split);
  p.directions = 2;
  p.cost.comm = 0.05;
  test::set_memory(p, 1, 0, -1);
  for (double cap : {2.0, 4.0, 8.0}) {
    p.memory.cap = PerStage::of(cap);
    solver::Instance inst = solver::build_instance(p, {0, /*symmetry=*/false});
    std::vector<solver::GreedyVariant> variants = solver::greedy_variants(inst);
    for (const solver::GreedyVariant& v : solver::zb_variants(inst)) variants.push_back(v);
    CAPTURE(cap);
    compare(inst, variants);
  }
  MESSAGE(compared << " runs compared (" << capped << " capped problems, " << stuck << " stuck runs)");
  CHECK(compared > 1000);
}

TEST_CASE("without symmetry the rank-work tightening never changes a head, so the greedy skips it") {
  // The search builds the greedy's instances with rank_work off (it costs seconds at pp 64): the
  // greedy reads heads only, and without the microbatch-order edges a node's same-rank ancestors
  // lie on its microbatch's one chain, so the longest path already counts their work. Tails do
  // change (a forward's descendants include weight gradients off the chain): the check below
  // would fail if the greedy read them, or if heads moved.
  test::Rng rng(29);
  int compared = 0, tails_moved = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Problem p = test::random_problem(rng, {6, 8, true});
    if (!validate(p).empty()) continue;
    solver::Instance with = solver::build_instance(p, {.ticks_per_step = 0, .symmetry = false});
    solver::Instance without = solver::build_instance(p, {.ticks_per_step = 0, .symmetry = false, .rank_work = false});
    CAPTURE(trial);
    REQUIRE(with.head == without.head);
    tails_moved += with.tail != without.tail;
    std::vector<solver::GreedyVariant> variants = solver::greedy_variants(with);
    for (const solver::GreedyVariant& v : solver::zb_variants(with)) variants.push_back(v);
    for (size_t k = 0; k < variants.size(); k += 5) {
      CAPTURE(variants[k].name());
      CHECK(solver::greedy_orders(with, variants[k]) == solver::greedy_orders(without, variants[k]));
    }
    ++compared;
  }
  CHECK(compared > 150);
  CHECK(tails_moved > 0);  // the tightening is not a no-op: only heads are untouched
}

TEST_CASE("static memory is the cap less it: the same schedules as the activation cap alone") {
  // Uniform static memory per rank (1.5 a stage): a cap of c + static must give exactly the
  // orders a cap of c gives without it, in every family and in a deterministic solve, so no
  // engine may read the stated cap where it means the activations' room.
  for (auto [vpp_value, placement] : {std::pair{1, PlacementKind::Looped}, std::pair{2, PlacementKind::VShape}}) {
    const int vpp = vpp_value;  // a copy: clang 14 cannot capture a structured binding (INFO)
    Problem plain = grid_problem(4, 8, vpp, true, 0);
    plain.placement = placement;
    plain.memory.cap = PerStage::of(4.5);
    Problem with = plain;
    with.memory.static_memory = PerStage::of(1.5);
    double stat = with.static_of(RankId(0));
    CHECK(stat == 1.5 * vpp);
    with.memory.cap = PerStage::of(4.5 + stat);
    for (const auto& f : solver::families()) {
      Diagnostics d1, d2;
      auto a = solver::generate_family(f.name, plain, {}, SourceLoc{}, d1);
      auto b = solver::generate_family(f.name, with, {}, SourceLoc{}, d2);
      INFO(f.name << " vpp " << vpp);
      REQUIRE(a.has_value() == b.has_value());
      if (a) CHECK(a->ranks == b->ranks);
    }
    auto a = solve_deterministic(plain, 2);
    auto b = solve_deterministic(with, 2);
    REQUIRE(a.schedule);
    REQUIRE(b.schedule);
    CHECK(a.schedule->ranks == b.schedule->ranks);
    CHECK(a.objective == b.objective);
    CHECK(a.lower_bound == b.lower_bound);
    SimResult sa = simulate(*a.schedule), sb = simulate(*b.schedule);
    for (size_t r = 0; r < 4; ++r)
      CHECK(sb.timeline->metrics.peak_memory[r] == sa.timeline->metrics.peak_memory[r] + stat);
  }
}

TEST_CASE("the cap ladder steps the activations' room, static memory beside it") {
  Problem plain = grid_problem(4, 8, 2, true, 0);
  plain.memory.cap = PerStage::of(6);
  Problem with = plain;
  with.memory.static_memory = PerStage::list({1, 2, 3, 4, 1, 2, 3, 4});  // V-shape: rank r holds r and 7 - r: 5 each
  with.memory.cap = PerStage::of(11);
  auto a = solver::cap_ladder(plain), b = solver::cap_ladder(with);
  REQUIRE(!a.empty());
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k)
    for (int32_t r = 0; r < 4; ++r) {
      CHECK(*b[k].cap_of(RankId(r)) == *a[k].cap_of(RankId(r)));
      CHECK(*b[k].stated_cap_of(RankId(r)) == *a[k].cap_of(RankId(r)) + 5);
    }
}

TEST_CASE("the safe-state variants never deadlock, and let the next microbatch chase the one before it") {
  // Random problems (every placement, both directions, vpp up to 3, balanced memory) capped from
  // the sequential schedule's peak up: every banker variant finishes and verifies.
  test::Rng rng(1312);
  int runs = 0;
  for (int trial = 0; trial < 150; ++trial) {
    Problem p = test::random_problem(rng, {5, 10, true});
    p.memory.F = PerStage::of(test::uniform(rng, 1, 2));
    p.memory.B = PerStage::of(test::uniform(rng, 0, 1) ? 0 : -0.5 * p.memory.F.at(0));
    p.memory.W = PerStage::of(-p.memory.F.at(0) - p.memory.B.at(0));
    if (p.backward == BackwardMode::Fused) p.memory.W = PerStage::of(0), p.memory.B = PerStage::of(-p.memory.F.at(0));
    std::vector<double> peaks = peak_memory(solver::sequential_schedule(p));
    p.memory.cap = PerStage::of(*std::max_element(peaks.begin(), peaks.end()) * (1 + 0.25 * test::uniform(rng, 0, 4)));
    if (!validate(p).empty()) continue;
    solver::Instance inst = solver::build_instance(p, {0, /*symmetry=*/false});
    CAPTURE(trial);
    for (const solver::GreedyVariant& v : solver::greedy_variants(inst)) {
      if (!v.banker) continue;
      CAPTURE(v.name());
      auto orders = solver::greedy_orders(inst, v);
      REQUIRE_MESSAGE(orders, v.name() << " deadlocked");
      REQUIRE(verify(solver::to_schedule(inst, *orders)).empty());
      ++runs;
    }
  }
  CHECK(runs > 200);
  // pp 16, m 16, V-shape at its smallest cap (memory 0.5 / -0.25 / -0.25 a chunk, cap 1): the
  // reservations of the other variants keep one microbatch at a time (2160, as sequential); the
  // safe-state rule starts the next microbatch once the one before it has freed its far chunk,
  // and meets the lower bound (term 8): 1230.
  Problem v = test::problem(16, 16, BackwardMode::Split, 2, 2, 1);
  v.stages_per_rank = 2;
  v.placement = PlacementKind::VShape;
  v.cost.comm = 0.1;
  test::set_memory(v, 0.5, -0.25, -0.25);
  v.memory.cap = PerStage::of(1);
  solver::Instance inst = solver::build_instance(v, {0, /*symmetry=*/false});
  double banker = std::numeric_limits<double>::infinity(), others = banker;
  for (const solver::GreedyVariant& g : solver::greedy_variants(inst)) {
    auto orders = solver::greedy_orders(inst, g);
    if (!orders) continue;
    double value = simulate(solver::to_schedule(inst, *orders)).timeline->metrics.makespan;
    (g.banker ? banker : others) = std::min(g.banker ? banker : others, value);
  }
  CHECK(banker == doctest::Approx(1230));
  CHECK(others == doctest::Approx(2160));
  CHECK(lower_bound(v).value == doctest::Approx(1230));
}
