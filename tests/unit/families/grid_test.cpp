// Every family, across a grid of sizes, cost models and backward modes: it either generates a
// schedule that verifies and simulates, or refuses with a family-constraint error exactly where
// its stated constraints say so. Also a seeded sweep of random problems (per-stage costs, comm
// latency, W = 0, odd memory models, overlap durations).

#include <doctest/doctest.h>

#include <random>

#include "tests/unit/families/family_test_util.h"

using namespace schedc;
using namespace schedc::ir;
using namespace schedc::test;

namespace {

// The family's own constraints beyond the common ones the defaults satisfy.
bool expected_ok(const std::string& name, int32_t pp, int32_t m) {
  if (name == "dualpipe") return pp % 2 == 0 && m % 2 == 0 && m >= 2 * pp;
  if (name == "dualpipev") return m >= 2 * pp;
  if (name == "chimera") return m % 2 == 0;
  return true;
}

enum class Costs { Uniform, Unequal, PerStage, Comm, ZeroW };

void apply(Costs c, Problem& p, std::mt19937& rng) {
  const size_t S = static_cast<size_t>(p.num_stages());
  std::uniform_real_distribution<double> u(0.25, 3.0);
  auto per_stage = [&] {
    std::vector<double> v(S);
    for (double& x : v) x = std::round(u(rng) * 4) / 4;
    return PerStage::list(v);
  };
  switch (c) {
    case Costs::Uniform: break;
    case Costs::Unequal: test::set_costs(p, 2, 2, 1); break;
    case Costs::PerStage:
      p.cost.F = per_stage();
      p.cost.B = per_stage();
      p.cost.W = per_stage();
      break;
    case Costs::Comm: p.cost.comm = 0.5; break;
    case Costs::ZeroW: test::set_costs(p, 1, 2, 0); break;
  }
}

void check_valid(const Generated& g) {
  REQUIRE(g.ok());
  CHECK(verify(*g.schedule).empty());
  SimResult r = simulate(*g.schedule);
  CHECK(r.timeline.has_value());
}

}  // namespace

TEST_CASE("every family generates a valid schedule across the grid, or refuses at its constraints") {
  std::mt19937 rng(7);
  int generated = 0;
  for (const std::string& name : test::all_family_names()) {
    const solver::FamilyInfo* info = solver::find_family(name);
    std::vector<BackwardMode> modes = {info->backward, BackwardMode::Mixed};
    if (info->backward != BackwardMode::Split) modes.push_back(BackwardMode::Split);
    for (int32_t pp : {1, 2, 3, 4, 8})
      for (int32_t m : {1, 2, 3, 5, 8, 16, 17})
        for (Costs c : {Costs::Uniform, Costs::Unequal, Costs::PerStage, Costs::Comm, Costs::ZeroW})
          for (BackwardMode mode : modes) {
            CAPTURE(name);
            CAPTURE(pp);
            CAPTURE(m);
            CAPTURE(static_cast<int>(c));
            CAPTURE(to_string(mode));
            Problem base;
            base.backward = mode;
            Problem p = family_problem(name, pp, m, {ir::Field::Backward}, base);
            apply(c, p, rng);
            REQUIRE(validate(p).empty());
            Generated g = generate(name, p);
            if (!expected_ok(name, pp, m)) {
              CHECK_FALSE(g.ok());
              CHECK(g.diags.has_error_of_kind(DiagKind::FamilyConstraint));
              CHECK_FALSE(g.diags.has_error_of_kind(DiagKind::Internal));
              continue;
            }
            check_valid(g);
            ++generated;
          }
  }
  CHECK(generated > 2000);
}

TEST_CASE("looped and interleaved families across vpp and group sizes") {
  for (int32_t v : {1, 2, 3, 4})
    for (int32_t pp : {1, 2, 4, 5})
      for (int32_t m : {1, 3, 4, 8, 10}) {
        CAPTURE(v);
        CAPTURE(pp);
        CAPTURE(m);
        Problem base;
        base.stages_per_rank = v;
        check_valid(generate("looped-bfs", family_problem("looped-bfs", pp, m, {ir::Field::StagesPerRank}, base)));
        if (v < 2) continue;
        Problem p = family_problem("interleaved-1f1b", pp, m, {ir::Field::StagesPerRank}, base);
        check_valid(generate("interleaved-1f1b", p));
        // Every group size either works or is refused as a parameter error, never a wrong schedule.
        for (int32_t g = 1; g <= m; ++g) {
          CAPTURE(g);
          Generated x = generate("interleaved-1f1b", p, test::params("group_size", g));
          if (x.ok()) check_valid(x);
          else CHECK(x.diags.has_error_of_kind(DiagKind::FamilyParam));
          // Divisors of m of at least min(pp, m) always work.
          if (m % g == 0 && g >= std::min(pp, m)) CHECK(x.ok());
        }
      }
}

TEST_CASE("random problems: per-stage costs, comm latency, W = 0, odd memory models, F&B durations") {
  std::mt19937 rng(20240601);
  std::uniform_real_distribution<double> u(0, 1);
  auto q = [&](double lo, double hi) { return std::round((lo + (hi - lo) * u(rng)) * 8) / 8; };
  const auto& names = test::all_family_names();
  int generated = 0;
  for (int it = 0; it < 600; ++it) {
    const std::string& name = names[static_cast<size_t>(it) % names.size()];
    const solver::FamilyInfo* info = solver::find_family(name);
    Problem base;
    std::vector<ir::Field> given;
    if (info->stages_per_rank == 0) {
      bool interleaved = name == "interleaved-1f1b" || name == "interleaved-zb";  // vpp >= 2
      base.stages_per_rank = 1 + static_cast<int32_t>(rng() % 3) + (interleaved ? 1 : 0);
      given.push_back(ir::Field::StagesPerRank);
    }
    int32_t pp = 1 + static_cast<int32_t>(rng() % 6);
    int32_t m = 1 + static_cast<int32_t>(rng() % 24);
    if (name == "dualpipe") pp += pp % 2, m = std::max(m + m % 2, 2 * pp);
    if (name == "dualpipev") m = std::max(m, 2 * pp);
    if (name == "chimera") m += m % 2;
    Problem p = family_problem(name, pp, m, given, base);
    const size_t S = static_cast<size_t>(p.num_stages());
    std::vector<double> f(S), b(S), w(S);
    for (size_t s = 0; s < S; ++s) f[s] = q(0.125, 3), b[s] = q(0.125, 3), w[s] = rng() % 3 ? q(0, 2) : 0;
    p.cost.F = PerStage::list(f);
    p.cost.B = PerStage::list(b);
    p.cost.W = PerStage::list(w);
    p.cost.comm = rng() % 2 ? q(0, 1) : 0;
    if (rng() % 3 == 0) p.cost.FB = PerStage::of(q(0.5, 4));
    if (rng() % 3 == 0) {
      p.memory.F = PerStage::of(q(0.5, 2));
      p.memory.B = PerStage::of(-q(0, 1));
      p.memory.W = PerStage::of(-q(0, 1));
    }
    CAPTURE(name);
    CAPTURE(pp);
    CAPTURE(m);
    REQUIRE(validate(p).empty());
    Generated g = generate(name, p);
    check_valid(g);
    ++generated;
  }
  CHECK(generated == 600);
}
