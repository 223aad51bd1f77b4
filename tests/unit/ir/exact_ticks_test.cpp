// Exact simulation at every unit: a problem stated in another unit (every time value times 10^e,
// every memory value times 10^f) simulates to the same timeline scaled, with the same verdicts,
// and a value no tick can hold is refused instead of rounded (issue 29, item 1).

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)); }

bool has_kind(const std::vector<ProblemError>& errors, DiagKind kind) {
  return std::any_of(errors.begin(), errors.end(), [&](const ProblemError& e) { return e.kind == kind; });
}

}  // namespace

TEST_CASE("a problem scaled by powers of ten simulates to the same figures, scaled, with the same verdicts") {
  test::Rng rng(2909);
  const int exponents[] = {-9, -7, -6, -3, 0, 2, 5};
  int checked = 0, capped_out = 0;
  for (int iter = 0; iter < 120; ++iter) {
    Problem p = test::random_problem(rng, {4, 5, true});
    if (test::uniform(rng, 0, 1)) test::add_random_overheads(p, rng);
    test::set_memory(p, test::uniform(rng, 1, 9) * 0.1, -test::uniform(rng, 1, 4) * 0.05, -0.05);
    Schedule s = test::random_valid(p, rng);
    test::cap_at_peaks(s, rng);
    // Half the time the cap sits just under rank 0's peak: a verdict the rounding used to flip.
    const bool over = test::uniform(rng, 0, 1) == 1;
    if (over) {
      const std::vector<double> peaks = peak_memory(s);
      const double peak = *std::max_element(peaks.begin(), peaks.end());
      s.problem.memory.cap = PerStage::of(peak - 0.01);
    }
    REQUIRE(validate(s.problem).empty());
    const SimResult base = simulate(s);
    REQUIRE(base.timeline.has_value());
    const bool base_valid = verify(s).empty();
    CHECK(base_valid == !over);
    capped_out += over;
    for (int te : exponents)
      for (int me : {-9, -6, 0, 4}) {
        const double tk = std::pow(10.0, te), mk = std::pow(10.0, me);
        Schedule t = s;
        t.problem = test::scaled(s.problem, tk, mk);
        CAPTURE(iter);
        CAPTURE(te);
        CAPTURE(me);
        REQUIRE(validate(t.problem).empty());
        const SimResult r = simulate(t);
        REQUIRE(r.timeline.has_value());
        CHECK(close(r.timeline->metrics.makespan, base.timeline->metrics.makespan * tk));
        for (size_t k = 0; k < r.timeline->metrics.peak_memory.size(); ++k)
          CHECK(close(r.timeline->metrics.peak_memory[k], base.timeline->metrics.peak_memory[k] * mk));
        CHECK(verify(t).empty() == base_valid);
        ++checked;
      }
  }
  CHECK(checked == 120 * 7 * 4);
  CHECK(capped_out > 20);
}

TEST_CASE("the issue's cases: no figure rounded into another verdict") {
  // F = 1.5e-6 beside B = W = 1 (at the old tick of 1e-6 it became 2e-6).
  Problem p = test::problem(2, 2, BackwardMode::Fused, 1.5e-6, 1, 1);
  Schedule s = test::schedule(p, {"F0.s0 F1.s0 BW0.s0 BW1.s0", "F0.s1 BW0.s1 F1.s1 BW1.s1"});
  // rank 0: F0 [0, f] F1 [f, 2f]; rank 1: F0 [f, 2f] BW0 [2f, 2f+2] F1 [2f+2, 3f+2] BW1 [3f+2, 3f+4];
  // rank 0's BW1 waits for rank 1's BW1: [3f+4, 3f+6].
  CHECK(simulate(s).timeline->metrics.makespan == doctest::Approx(6 + 4.5e-6).epsilon(1e-14));
  CHECK(simulate(s).timeline->scale == 10'000'000);
  // Costs of 1e-7 are not zero.
  Schedule tiny = s;
  tiny.problem = test::problem(2, 2, BackwardMode::Fused, 1e-7, 1e-7, 1e-7);
  CHECK(simulate(tiny).timeline->metrics.makespan == doctest::Approx(9e-7).epsilon(1e-12));
  // Memory 1.4e-6 per forward: rank 0 holds two forwards, 2.8e-6, over a cap of 2.7e-6 (at the
  // old tick the peak was 2e-6 and the cap 3e-6).
  Schedule m = s;
  test::set_memory(m.problem, 1.4e-6, 0, 0);
  m.problem.memory.B = PerStage::of(-1.4e-6);
  m.problem.memory.cap = PerStage::of(2.7e-6);
  CHECK(peak_memory(m)[0] == doctest::Approx(2.8e-6).epsilon(1e-12));
  CHECK_FALSE(verify(m).empty());
  m.problem.memory.cap = PerStage::of(2.8e-6);
  CHECK(verify(m).empty());
}

TEST_CASE("values no tick up to 1e-15 holds are refused as bad values, not rounded") {
  Problem p = test::problem(2, 2, BackwardMode::Fused, 0.12345678901234567, 1, 1);
  auto errors = validate(p);
  REQUIRE(has_kind(errors, DiagKind::BadValue));
  CHECK(errors.front().field == Field::CostF);
  CHECK(errors.front().message.find("the time value 0.12345678901234566 cannot be timed exactly") != std::string::npos);
  p = test::problem(2, 2, BackwardMode::Fused, 1e-16, 1, 1);
  CHECK(has_kind(validate(p), DiagKind::BadValue));
  p = test::problem(2, 2, BackwardMode::Fused);
  p.memory.F = PerStage::of(0.1234567890123456789);
  p.memory.B = PerStage::of(-0.1234567890123456789);
  errors = validate(p);
  REQUIRE(has_kind(errors, DiagKind::BadValue));
  CHECK(errors.front().field == Field::MemoryF);
  // Twelve significant digits at 1e-9 are held exactly.
  p.memory.F = PerStage::of(123.456789012);
  p.memory.B = PerStage::of(-123.456789012);
  CHECK(validate(p).empty());
}
