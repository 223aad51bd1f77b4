// Fitting orders under a cap by deferring forwards (solver/synth/fit_cap.h): every rank's memory
// stays within its cap, each rank keeps its actions and each microbatch's order on it, and an
// order that meets the cap comes back unchanged.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/fit_cap.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// The most memory rank r's order holds, in the simulator's fixed point.
int64_t peak_of(const Problem& p, const std::vector<Action>& order) {
  const int64_t scale = memory_scale(p);
  int64_t cur = 0, peak = 0;
  for (Action a : order) peak = std::max(peak, cur += to_fixed(memory_delta(p, a), scale));
  return peak;
}

// Per microbatch, its actions on one rank in order.
std::map<int, std::vector<Action>> by_microbatch(const std::vector<Action>& order) {
  std::map<int, std::vector<Action>> out;
  for (Action a : order) out[a.mb.value].push_back(a);
  return out;
}

}  // namespace

TEST_CASE("deferring forwards fits every rank under its cap, keeping each microbatch's order") {
  test::Rng rng(1717);
  int tried = 0, fitted = 0, valid = 0, unchanged = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Problem p = test::random_problem(rng, {5, 8, true});
    p.memory.F = PerStage::of(1);
    p.memory.B = PerStage::of(p.backward == BackwardMode::Fused ? -1 : -0.5);
    p.memory.W = PerStage::of(p.backward == BackwardMode::Fused ? 0 : -0.5);
    if (!validate(p).empty()) continue;
    Schedule s = test::random_valid(p, rng);
    // A cap between the most one microbatch holds on a rank and the order's own peak.
    const int64_t scale = memory_scale(p);
    int64_t top = 0, one = 0;
    for (const auto& order : s.ranks) {
      top = std::max(top, peak_of(p, order));
      for (const auto& [mb, acts] : by_microbatch(order)) one = std::max(one, peak_of(p, acts));
    }
    const int64_t cap = one + static_cast<int64_t>(rng() % static_cast<uint64_t>(top - one + 1));
    p.memory.cap = PerStage::of(static_cast<double>(cap) / static_cast<double>(scale));
    CAPTURE(trial);
    ++tried;
    auto t = solver::defer_to_cap(s, p);
    REQUIRE(t.has_value());  // balanced memory, each microbatch fits alone: the walk places all
    ++fitted;
    REQUIRE(t->ranks.size() == s.ranks.size());
    for (size_t r = 0; r < s.ranks.size(); ++r) {
      CHECK(peak_of(p, t->ranks[r]) <= cap);
      CHECK(by_microbatch(t->ranks[r]) == by_microbatch(s.ranks[r]));
      if (peak_of(p, s.ranks[r]) <= cap) {
        CHECK(t->ranks[r] == s.ranks[r]);
        ++unchanged;
      }
    }
    // Across ranks the new orders may wait on each other in a cycle.
    valid += verify(*t).empty();
  }
  CHECK(tried > 350);
  CHECK(fitted == tried);
  CHECK(unchanged > 0);
  CHECK(valid > tried / 3);  // 186 of 400 random orders: the rest wait on each other across ranks
}

TEST_CASE("dualpipe over a cap of pp, fitted under it, keeps its pace") {
  // pp 16, m 64, two directions, F = B = 2, W = 1, comm 0.1, memory F = 1, B = W = -0.5:
  // dualpipe holds 17 microbatches' activations; fitted under 16 it must stay valid and within
  // 5 % of its own makespan (the greedy's best at this cap was 398.5, 14 % above dualpipe).
  Problem p = test::two_directions(16, 64);
  Diagnostics d;
  auto s = solver::generate_family("dualpipe", p, {}, SourceLoc{}, d);
  REQUIRE(s.has_value());
  const SimResult own = simulate(*s);
  REQUIRE(own.timeline);
  const auto& peaks = own.timeline->metrics.peak_memory;
  REQUIRE(*std::max_element(peaks.begin(), peaks.end()) > 16);
  p.memory.cap = PerStage::of(16);
  auto t = solver::defer_to_cap(*s, p);
  REQUIRE(t.has_value());
  REQUIRE(verify(*t).empty());
  const double fitted = simulate(*t).timeline->metrics.makespan;
  CHECK(fitted <= 1.05 * own.timeline->metrics.makespan);
  // A passed deadline gives nothing (at pp 1024 a walk takes seconds).
  Deadline past;
  past.at = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  CHECK_FALSE(solver::defer_to_cap(*s, p, &past).has_value());
  // Without a cap there is nothing to fit.
  p.memory.cap.reset();
  CHECK_FALSE(solver::defer_to_cap(*s, p).has_value());
}

TEST_CASE("the solve fits families under caps below their own peak: the incumbent beats dualpipe") {
  // Two directions, pp 16, m 64, cap 24 (dualpipe, at its peak of 17, meets it: 350.7). Fitted
  // under 16.5 it gives 345.6; without that step the constructive phase's best was dualpipe.
  Problem p = test::two_directions(16, 64);
  p.memory.cap = PerStage::of(24);
  Diagnostics d;
  auto dualpipe = solver::generate_family("dualpipe", p, {}, SourceLoc{}, d);
  REQUIRE(dualpipe.has_value());
  const double own = simulate(*dualpipe).timeline->metrics.makespan;
  solver::SolveOptions o;
  o.time_limit_s = 1;
  o.deterministic = true;
  o.use_z3 = false;
  auto r = solver::synthesize(p, o);
  REQUIRE(r.schedule.has_value());
  REQUIRE(r.schedule->provenance.has_value());
  REQUIRE(r.schedule->provenance->solve.has_value());
  const ir::SolveRecord& record = *r.schedule->provenance->solve;
  CAPTURE(record.incumbent);
  CHECK(record.incumbent.find("-fitted@cap") != std::string::npos);
  CHECK(record.incumbent_value < own - 1);
  CHECK(r.objective <= record.incumbent_value);
}
