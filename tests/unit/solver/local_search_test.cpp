// The local search never returns worse than its start, keeps every schedule valid and within the
// cap, is deterministic for a seed and budget, and turns a 1F1B start into a better order.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "ir/json_io.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/local_search.h"
#include "solver/synth/synthesize.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// pp 4, 16 microbatches, split, F = B = 2, W = 1, comm 0.1, the given cap.
Problem capped_problem(double cap) {
  Problem p = test::problem(4, 16, BackwardMode::Split, 2, 2, 1);
  p.cost.comm = 0.1;
  p.memory.cap = PerStage::of(cap);
  return p;
}

// One trial: capped at the start's peak half the time, then `max_evals` of search; the result
// must verify, stay within the evaluation budget and be no worse than the start.
struct Trial {
  bool improved = false;
  solver::LocalSearchStats stats;
  Schedule out;
};

Trial search_from(Schedule start, test::Rng& rng, int trial) {
  if (test::uniform(rng, 0, 1)) {
    auto peaks = peak_memory(start);
    start.problem.memory.cap = PerStage::of(*std::max_element(peaks.begin(), peaks.end()));
  }
  REQUIRE(verify(start).empty());
  solver::LocalSearchOptions o;
  o.max_evals = 3000;
  o.seed = static_cast<uint64_t>(trial);
  Trial t;
  t.out = solver::local_search(start, o, t.stats);
  INFO("trial " << trial);
  REQUIRE(verify(t.out).empty());
  double before = test::objective_of(start), after = test::objective_of(t.out);
  CHECK(after <= before);
  CHECK(t.stats.evals <= o.max_evals);
  t.improved = after < before;
  return t;
}

}  // namespace

TEST_CASE("local search: valid, within the cap, never worse than its start") {
  test::Rng rng(31);
  int improved = 0;
  for (int trial = 0; trial < 150; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    if (test::uniform(rng, 0, 3) == 0) p.objective = Objective::MaxSpan;
    Schedule start = test::random_valid(p, rng);
    improved += search_from(start, rng, trial).improved;
  }
  CHECK(improved > 50);  // random orders leave a lot to gain
}

TEST_CASE("local search: the same seed and budget give the same orders") {
  Problem p = test::problem(4, 12, BackwardMode::Split);
  p.cost.comm = 0.25;
  p.memory.cap = PerStage::of(5);
  Diagnostics d;
  auto start = solver::generate_family("1f1b", p, {}, SourceLoc{}, d);
  REQUIRE(start.has_value());
  solver::LocalSearchOptions o;
  o.max_evals = 20'000;
  o.seed = 5;
  solver::LocalSearchStats s1, s2;
  Schedule a = solver::local_search(*start, o, s1), b = solver::local_search(*start, o, s2);
  CHECK(a.ranks == b.ranks);
  CHECK(s1.evals == s2.evals);
}

TEST_CASE("local search: incremental timing is exact, so the search is step for step the same") {
  // Random problems (units where FB is declared), each searched twice from the same start, seed and
  // budget: candidates timed incrementally and timed whole must accept the same moves.
  test::Rng rng(58);
  uint64_t retimed = 0, whole = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    if (test::uniform(rng, 0, 2) == 0) test::set_fb(p, 0.6);
    Schedule start = p.cost.FB ? test::random_valid_paired(p, rng) : test::random_valid(p, rng);
    if (p.cost.FB) test::add_random_overlap(start, rng, 60);
    solver::LocalSearchOptions o;
    o.max_evals = 2000;
    o.seed = static_cast<uint64_t>(trial);
    solver::LocalSearchStats inc, full;
    Schedule a = solver::local_search(start, o, inc);
    o.incremental = false;
    Schedule b = solver::local_search(start, o, full);
    INFO("trial " << trial);
    CHECK(a.ranks == b.ranks);
    CHECK(a.overlap == b.overlap);
    CHECK(inc.accepted == full.accepted);
    CHECK(inc.evals == full.evals);
    retimed += inc.retimed;
    whole += full.retimed;
  }
  CHECK(retimed < whole);
}

TEST_CASE("local search: from 1F1B towards zero bubble under a cap of 2pp") {
  Problem p = capped_problem(8);
  Diagnostics d;
  auto start = solver::generate_family("1f1b", p, {}, SourceLoc{}, d);
  REQUIRE(start.has_value());
  solver::LocalSearchOptions o;
  o.max_evals = 300'000;
  solver::LocalSearchStats stats;
  Schedule out = solver::local_search(*start, o, stats);
  REQUIRE(verify(out).empty());
  double before = test::objective_of(*start), after = test::objective_of(out);
  INFO("1f1b " << before << ", local search " << after);
  // 1F1B idles (pp - 1)(F + B) + comm on every rank; W's moved into those gaps recover most of it.
  CHECK(after < before - 6);
  CHECK(stats.improved_best[0] + stats.improved_best[1] + stats.improved_best[2] + stats.improved_best[3] > 0);
}

TEST_CASE("the solve never returns worse than its first incumbent, and names the local search") {
  Problem p = capped_problem(5);
  solver::SolveOptions o;
  o.time_limit_s = 2;
  o.deterministic = true;
  o.use_z3 = false;
  solver::SolveResult r = solver::synthesize(p, o);
  REQUIRE(r.schedule.has_value());
  CHECK(verify(*r.schedule).empty());
  CHECK(r.objective <= r.incumbent_value);
  CHECK(r.lower_bound <= r.objective);
  CHECK(r.bound_error.empty());
  REQUIRE(r.schedule->provenance.has_value());
  CHECK(provenance_json(*r.schedule->provenance).find("\"local_search\"") != std::string::npos);
}

TEST_CASE("local search with overlapped units: valid, never worse, and it pairs") {
  test::Rng rng(57);
  int paired = 0, improved = 0;
  for (int trial = 0; trial < 120; ++trial) {
    Problem p = test::random_problem(rng, {4, 6, true});
    // FB well below F + B, so that units pay; random starts with and without units.
    test::set_fb(p, 0.6);
    Schedule start = test::random_valid_paired(p, rng);
    if (trial % 2) test::add_random_overlap(start, rng, 50);
    Trial t = search_from(start, rng, trial);
    improved += t.improved;
    paired += t.stats.improved_best[4] > 0 && t.out.has_overlap();
  }
  CHECK(improved > 40);
  CHECK(paired > 10);  // the pair move finds units that pay
}

TEST_CASE("local search: from dualpipe, units and all, with FB below F + BW") {
  for (double fb : {1.5, 2.2}) {
    Problem p = test::bidirectional_mixed(4, 16);
    p.cost.FB = PerStage::of(fb);
    Diagnostics d;
    auto start = solver::generate_family("dualpipe", p, {}, SourceLoc{}, d);
    REQUIRE(start.has_value());
    REQUIRE(start->has_overlap());
    solver::LocalSearchOptions o;
    o.max_evals = 200'000;
    solver::LocalSearchStats stats;
    Schedule out = solver::local_search(*start, o, stats);
    REQUIRE(verify(out).empty());
    CHECK(out.has_overlap());
    CHECK(test::objective_of(out) < test::objective_of(*start));  // dualpipe is improved on, not replaced
  }
}
