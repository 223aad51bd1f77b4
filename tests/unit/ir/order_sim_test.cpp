// ir::OrderSimulator times orders tick for tick as ir::simulate does (random problems, random
// valid orders and random reorderings that may deadlock), and its memory peaks are ir's.

#include <doctest/doctest.h>

#include <algorithm>

#include "ir/order_sim.h"
#include "ir/simulate.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// Compares a run of `sim` over `orders` with ir::simulate of the same orders.
void check_same(OrderSimulator& sim, const std::vector<std::vector<int32_t>>& orders) {
  Schedule s = sim.to_schedule(orders);
  SimResult ref = simulate(s);
  bool ok = sim.run(orders);
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
