// ir::OrderSimulator times orders tick for tick as ir::simulate does (random problems, random
// valid orders and random reorderings that may deadlock), and its memory peaks are ir's.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "ir/order_sim.h"
#include "ir/simulate.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// Compares a run of `sim` over `orders` with ir::simulate of the same orders.
void check_same(OrderSimulator& sim, const std::vector<std::vector<int32_t>>& orders,
                const OrderSimulator::Units* units = nullptr) {
  Schedule s = sim.to_schedule(orders, units);
  SimResult ref = simulate(s);
  bool ok = sim.run(orders, units);
  REQUIRE(ok == ref.timeline.has_value());
  if (!ok) return;
  const Timeline& tl = *ref.timeline;
  for (size_t r = 0; r < orders.size(); ++r)
    for (size_t i = 0; i < orders[r].size(); ++i) {
      CHECK(sim.start(orders[r][i]) == tl.start[r][i]);
      CHECK(sim.end(orders[r][i]) == tl.end[r][i]);
    }
  CHECK(static_cast<double>(sim.makespan()) / static_cast<double>(tl.scale) == tl.metrics.makespan);
  CHECK(static_cast<double>(sim.max_rank_span()) / static_cast<double>(tl.scale) == tl.metrics.max_rank_span);
  auto peaks = peak_memory(s);
  const double mscale = static_cast<double>(memory_scale(s.problem));
  for (size_t r = 0; r < orders.size(); ++r)
    CHECK(static_cast<double>(sim.peak_memory(orders[r])) / mscale == peaks[r]);
}

// A move like the local search's on rank r: pair two neighbours that may form a unit, or break
// a unit (`pairing`), else shift one action (which may separate a unit's members: they then run
// alone, and may deadlock).
void random_move(test::Rng& rng, const OrderSimulator& sim, std::vector<std::vector<int32_t>>& orders,
                 OrderSimulator::Units& units, size_t r, bool pairing) {
  int n = static_cast<int>(orders[r].size());
  int i = test::uniform(rng, 0, n - 1), j = test::uniform(rng, 0, n - 1);
  if (pairing) {
    int32_t a = orders[r][static_cast<size_t>(std::min(i, n - 2))],
            b = orders[r][static_cast<size_t>(std::min(i, n - 2)) + 1];
    if (units[static_cast<size_t>(a)] >= 0) {
      units[static_cast<size_t>(units[static_cast<size_t>(a)])] = -1;
      units[static_cast<size_t>(a)] = -1;
    } else if (units[static_cast<size_t>(b)] < 0 && sim.can_pair(a, b)) {
      units[static_cast<size_t>(a)] = b;
      units[static_cast<size_t>(b)] = a;
    }
  } else {
    auto it = orders[r].begin();
    if (i < j) std::rotate(it + i, it + i + 1, it + j + 1);
    else std::rotate(it + j, it + i, it + i + 1);
  }
}

}  // namespace

TEST_CASE("the order simulator agrees with ir::simulate on valid and deadlocking orders") {
  test::Rng rng(77);
  int deadlocks = 0, valid = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    Schedule s = test::random_valid(p, rng);
    OrderSimulator sim(s);
    auto orders = sim.initial_orders();
    check_same(sim, orders);
    // Moves like the local search's: swaps and shifts within one rank, any of which may deadlock.
    for (int k = 0; k < 6; ++k) {
      auto r = static_cast<size_t>(test::uniform(rng, 0, p.ranks - 1));
      if (orders[r].size() < 2) continue;
      int n = static_cast<int>(orders[r].size());
      int i = test::uniform(rng, 0, n - 1), j = test::uniform(rng, 0, n - 1);
      auto it = orders[r].begin();
      if (i < j) std::rotate(it + i, it + i + 1, it + j + 1);
      else std::rotate(it + j, it + i, it + i + 1);
      check_same(sim, orders);
      if (sim.run(orders)) ++valid;
      else ++deadlocks;
    }
  }
  // Both outcomes were exercised.
  CHECK(deadlocks > 100);
  CHECK(valid > 100);
}

TEST_CASE("the order simulator times overlapped F&B units as ir::simulate does") {
  test::Rng rng(91);
  int deadlocks = 0, valid = 0, with_units = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    // Units that save (FB below F + B), cost more, or (no FB) cost the members' sum; action and
    // message overheads on every third problem.
    int fb = test::uniform(rng, 0, 2);
    if (fb > 0) test::set_fb(p, fb == 1 ? 0.6 : 1.3);
    if (trial % 3 == 2) test::add_random_overheads(p, rng);
    Schedule s = test::random_valid_paired(p, rng);
    test::add_random_overlap(s, rng, 60);
    with_units += s.has_overlap();
    OrderSimulator sim(s);
    auto orders = sim.initial_orders();
    OrderSimulator::Units units = sim.initial_units();
    // The units read back are the schedule's.
    CHECK(sim.to_schedule(orders, &units).overlap == s.overlap);
    check_same(sim, orders, &units);
    for (int k = 0; k < 8; ++k) {
      auto r = static_cast<size_t>(test::uniform(rng, 0, p.ranks - 1));
      if (orders[r].size() < 2) continue;
      random_move(rng, sim, orders, units, r, k % 2 == 0);
      check_same(sim, orders, &units);
      if (sim.run(orders, &units)) ++valid;
      else ++deadlocks;
    }
  }
  CHECK(with_units > 100);
  CHECK(deadlocks > 100);
  CHECK(valid > 100);
}

TEST_CASE("incremental runs time orders exactly as full runs do, and re-time only part of them") {
  test::Rng rng(2024);
  int deadlocks = 0, valid = 0, commits = 0, discards = 0;
  uint64_t retimed = 0, total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    int fb = test::uniform(rng, 0, 2);
    if (fb > 0) test::set_fb(p, fb == 1 ? 0.6 : 1.3);
    Schedule s = test::random_valid_paired(p, rng);
    if (fb > 0) test::add_random_overlap(s, rng, 60);
    OrderSimulator sim(s), ref(s);
    auto orders = sim.initial_orders();
    OrderSimulator::Units units = sim.initial_units();
    REQUIRE(sim.run(orders, &units));
    sim.commit();
    auto base_orders = orders;
    auto base_units = units;
    for (int step = 0; step < 12; ++step) {
      // A move on one to three ranks: shifts, and pairing or breaking neighbours.
      std::vector<size_t> changed;
      for (int k = test::uniform(rng, 1, 3); k > 0; --k) {
        auto r = static_cast<size_t>(test::uniform(rng, 0, p.ranks - 1));
        if (orders[r].size() < 2) continue;
        changed.push_back(r);
        random_move(rng, sim, orders, units, r, fb > 0 && test::uniform(rng, 0, 2) == 0);
      }
      bool ok = sim.rerun(orders, &units, changed);
      REQUIRE(ok == ref.run(orders, &units));
      retimed += sim.last_retimed();
      total += sim.size();
      if (ok) {
        ++valid;
        for (size_t x = 0; x < sim.size(); ++x) {
          CHECK(sim.start(static_cast<int32_t>(x)) == ref.start(static_cast<int32_t>(x)));
          CHECK(sim.end(static_cast<int32_t>(x)) == ref.end(static_cast<int32_t>(x)));
        }
        CHECK(sim.makespan() == ref.makespan());
        CHECK(sim.max_rank_span() == ref.max_rank_span());
        for (size_t r = 0; r < orders.size(); ++r) CHECK(sim.rank_span(r) == ref.rank_span(r));
      } else {
        ++deadlocks;
      }
      if (ok && test::uniform(rng, 0, 1) == 0) {
        ++commits;
        sim.commit();
        base_orders = orders;
        base_units = units;
      } else {
        // Dropped: the simulator shows the committed run again, and the orders go back to it.
        ++discards;
        sim.discard();
        orders = base_orders;
        units = base_units;
        REQUIRE(ref.run(orders, &units));
        for (size_t x = 0; x < sim.size(); ++x) {
          CHECK(sim.start(static_cast<int32_t>(x)) == ref.start(static_cast<int32_t>(x)));
          CHECK(sim.end(static_cast<int32_t>(x)) == ref.end(static_cast<int32_t>(x)));
        }
        CHECK(sim.makespan() == ref.makespan());
        CHECK(sim.max_rank_span() == ref.max_rank_span());
      }
    }
  }
  CHECK(deadlocks > 100);
  CHECK(valid > 100);
  CHECK(commits > 100);
  CHECK(discards > 100);
  // Some of the work is saved: actions that started before the change keep their times.
  CHECK(retimed < total * 9 / 10);
  MESSAGE("re-timed " << retimed << " of " << total << " action timings");
}
