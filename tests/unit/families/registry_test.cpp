// The family registry: names, defaults, constraint and parameter diagnostics, memory caps,
// backward-mode adaptation, determinism, provenance and speed.

#include <doctest/doctest.h>

#include <chrono>

#include "ir/json_io.h"
#include "support/numbers.h"
#include "tests/unit/families/family_test_util.h"

using namespace schedc;
using namespace schedc::ir;
using namespace schedc::test;

namespace {

// True when some diagnostic's message contains `text`.
bool mentions(const Generated& g, std::string_view text) {
  for (const Diagnostic& d : g.diags.all())
    if (d.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the registry lists every family once, in a stable order, with its constraints") {
  std::vector<std::string> names;
  for (const solver::FamilyInfo& f : solver::families()) {
    names.push_back(f.name);
    CHECK_FALSE(f.summary.empty());
    CHECK_FALSE(f.constraints.empty());
    CHECK(solver::find_family(f.name) == &f);
  }
  CHECK(names == test::all_family_names());
  CHECK(solver::find_family("ZB-V") == nullptr);
  CHECK(solver::find_family("1F1B") == nullptr);
  CHECK(solver::find_family("") == nullptr);
}

TEST_CASE("an unknown family is reported with the known names") {
  Problem p;
  Generated g = generate("zbv", p);
  CHECK_FALSE(g.ok());
  CHECK(g.diags.has_error_of_kind(DiagKind::UnknownFamily));
  CHECK(mentions(g, "`zbv`"));
  CHECK(mentions(g, "zb-v"));
}

TEST_CASE("defaults fill the fields the user left open") {
  SUBCASE("zb-v: vpp 2, vshape, split") {
    Problem p = family_problem("zb-v", 4, 8);
    CHECK(p.stages_per_rank == 2);
    CHECK(p.placement == PlacementKind::VShape);
    CHECK(p.backward == BackwardMode::Split);
    CHECK(p.directions == 1);
  }
  SUBCASE("interleaved-1f1b: vpp 2 by default, the user's vpp kept") {
    CHECK(family_problem("interleaved-1f1b", 4, 8).stages_per_rank == 2);
    Problem base;
    base.stages_per_rank = 3;
    Problem p = family_problem("interleaved-1f1b", 4, 8, {ir::Field::StagesPerRank}, base);
    CHECK(p.stages_per_rank == 3);
    CHECK(p.backward == BackwardMode::Fused);
  }
  SUBCASE("dualpipe: bidirectional and mixed; a user's split backward kept") {
    Problem p = family_problem("dualpipe", 4, 8);
    CHECK(p.directions == 2);
    CHECK(p.backward == BackwardMode::Mixed);
    Problem base;
    base.backward = BackwardMode::Split;
    CHECK(family_problem("dualpipe", 4, 8, {ir::Field::Backward}, base).backward == BackwardMode::Split);
  }
  SUBCASE("every family's defaults give a valid problem") {
    for (const std::string& name : test::all_family_names()) {
      CAPTURE(name);
      CHECK(validate(family_problem(name, 4, 8)).empty());
    }
  }
}

TEST_CASE("a broken family constraint is a family-constraint error naming the family") {
  SUBCASE("dualpipe needs an even pp") {
    Generated g = generate("dualpipe", family_problem("dualpipe", 3, 12));
    CHECK(g.diags.has_error_of_kind(DiagKind::FamilyConstraint));
    CHECK(mentions(g, "family `dualpipe` needs an even pp, got `3`"));
  }
  SUBCASE("dualpipe and dualpipev need m >= 2 pp") {
    Generated g = generate("dualpipe", family_problem("dualpipe", 4, 6));
    CHECK(g.diags.has_error_of_kind(DiagKind::FamilyConstraint));
    CHECK(mentions(g, "at least 2*pp = 8 microbatches, got `6`"));
    Generated v = generate("dualpipev", family_problem("dualpipev", 4, 7));
    CHECK(mentions(v, "family `dualpipev` needs at least 2*pp = 8 microbatches, got `7`"));
  }
  SUBCASE("a bidirectional family with an odd m") {
    Problem p = family_problem("chimera", 4, 5);
    CHECK(p.directions == 1);  // not forced, so that the family reports it
    Generated g = generate("chimera", p);
    CHECK(g.diags.has_error_of_kind(DiagKind::FamilyConstraint));
    CHECK(mentions(g, "an even number of microbatches"));
  }
  SUBCASE("zb-v with the user's vpp = 3") {
    Problem base;
    base.stages_per_rank = 3;
    Problem p = family_problem("zb-v", 4, 8, {ir::Field::StagesPerRank}, base);
    CHECK(validate(p).empty());
    Generated g = generate("zb-v", p);
    CHECK(g.diags.has_error_of_kind(DiagKind::FamilyConstraint));
    CHECK(mentions(g, "vpp (stages per rank) = 2, got `3`"));
  }
  SUBCASE("1f1b with the user's vshape placement") {
    Problem base;
    base.placement = PlacementKind::VShape;
    Problem p = family_problem("1f1b", 4, 8, {ir::Field::Placement}, base);
    CHECK(validate(p).empty());
    Generated g = generate("1f1b", p);
    CHECK(mentions(g, "placement `looped`, got `vshape`"));
  }
  SUBCASE("a split family given a fused backward") {
    Problem base;
    base.backward = BackwardMode::Fused;
    for (const char* name : {"zb-h1", "zb-h2", "interleaved-zb", "zb-v", "v-half", "v-min", "dualpipe", "dualpipev"}) {
      CAPTURE(name);
      Generated g = generate(name, family_problem(name, 4, 8, {ir::Field::Backward}, base));
      CHECK(g.diags.has_error_of_kind(DiagKind::FamilyConstraint));
      CHECK(mentions(g, "a split backward"));
    }
  }
  SUBCASE("interleaved-1f1b needs vpp >= 2") {
    Problem base;
    base.stages_per_rank = 1;
    Generated g = generate("interleaved-1f1b",
                           family_problem("interleaved-1f1b", 4, 8, {ir::Field::StagesPerRank}, base));
    CHECK(mentions(g, "vpp (stages per rank) >= 2, got `1`"));
  }
  SUBCASE("gpipe is single-direction") {
    Problem base;
    base.directions = 2;
    Generated g = generate("gpipe", family_problem("gpipe", 4, 8, {ir::Field::Direction}, base));
    CHECK(mentions(g, "direction `single`, got `bidirectional`"));
  }
  SUBCASE("every broken constraint is reported, not only the first") {
    Problem base;
    base.backward = BackwardMode::Fused;
    Generated g = generate("dualpipe", family_problem("dualpipe", 3, 4, {ir::Field::Backward}, base));
    CHECK(g.diags.error_count() == 3);  // backward, even pp, m >= 2 pp
  }
}

TEST_CASE("family parameters are checked") {
  Problem p = family_problem("interleaved-1f1b", 4, 8);
  SUBCASE("unknown") {
    Generated g = generate("1f1b", family_problem("1f1b", 4, 8), test::params("warmup", 2));
    CHECK(g.diags.has_error_of_kind(DiagKind::FamilyParam));
    CHECK(mentions(g, "family `1f1b` has no parameter `warmup`, it takes none"));
    Generated h = generate("interleaved-1f1b", p, test::params("group", 4));
    CHECK(mentions(h, "expected `group_size`"));
  }
  SUBCASE("out of range or not an integer") {
    for (double g : {0.0, 9.0, 2.5}) {
      CAPTURE(g);
      Generated x = generate("interleaved-1f1b", p, test::params("group_size", g));
      CHECK(x.diags.has_error_of_kind(DiagKind::FamilyParam));
    }
  }
  SUBCASE("a group size whose table deadlocks is refused with a working one") {
    Problem q = family_problem("interleaved-1f1b", 8, 10);
    Generated g = generate("interleaved-1f1b", q, test::params("group_size", 8));
    CHECK(g.diags.has_error_of_kind(DiagKind::FamilyParam));
    CHECK(mentions(g, "such as `10`"));
    // Without the parameter the family picks that divisor itself.
    CHECK(generate("interleaved-1f1b", q).ok());
  }
  SUBCASE("valid group sizes change the order") {
    Generated a = generate("interleaved-1f1b", p, test::params("group_size", 4));
    Generated b = generate("interleaved-1f1b", p, test::params("group_size", 8));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a.schedule->ranks != b.schedule->ranks);
    CHECK(a.schedule->ranks == generate("interleaved-1f1b", p).schedule->ranks);  // default pp
  }
}

TEST_CASE("a memory cap the family cannot meet is refused, naming the cap it needs") {
  for (const std::string& name : test::all_family_names()) {
    CAPTURE(name);
    Problem p = family_problem(name, 4, 8);
    Generated free = generate(name, p);
    REQUIRE(free.ok());
    double peak = figures(*free.schedule).peak;
    p.memory.cap = PerStage::of(peak);
    CHECK(generate(name, p).ok());
    p.memory.cap = PerStage::of(peak - 0.5);
    Generated capped = generate(name, p);
    CHECK_FALSE(capped.ok());
    CHECK(capped.diags.has_error_of_kind(DiagKind::CapInfeasible));
    CHECK(mentions(capped, "needs a memory cap of at least `" + format_number(peak) + "`"));
  }
  SUBCASE("per-rank caps name the rank and the caps that work") {
    Problem p = family_problem("1f1b", 4, 8);
    p.memory.cap = PerStage::list({4, 3, 1, 1});
    Generated g = generate("1f1b", p);
    CHECK(g.diags.has_error_of_kind(DiagKind::CapInfeasible));
    CHECK(mentions(g, "peaks at `2` on rank 2, above its cap of `1`; it needs per-rank caps of at least `4:3:2:1`"));
    p.memory.cap = PerStage::list({4, 3, 2, 1});
    CHECK(generate("1f1b", p).ok());
  }
}

// The order is the fused one with every BW expanded in place; the timeline can only be earlier,
// since the next stage's backward waits for B alone.
TEST_CASE("a fused family on a split problem runs B right before its W; on a mixed one it keeps BW") {
  for (const char* name : {"gpipe", "1f1b", "interleaved-1f1b", "looped-bfs", "chimera"}) {
    CAPTURE(name);
    Problem fused = family_problem(name, 4, 8);
    Generated f = generate(name, fused);
    REQUIRE(f.ok());
    Problem split = fused;
    split.backward = BackwardMode::Split;
    Generated s = generate(name, split);
    REQUIRE(s.ok());
    for (const auto& order : s.schedule->ranks)
      for (size_t i = 0; i < order.size(); ++i) {
        CHECK(order[i].kind != ActionKind::BW);
        if (order[i].kind == ActionKind::B) {
          REQUIRE(i + 1 < order.size());
          CHECK(order[i + 1] == W(order[i].mb.value, order[i].stage.value));
        }
      }
    CHECK(figures(*s.schedule).makespan <= figures(*f.schedule).makespan);
    Problem mixed = fused;
    mixed.backward = BackwardMode::Mixed;
    Generated m = generate(name, mixed);
    REQUIRE(m.ok());
    CHECK(m.schedule->ranks == f.schedule->ranks);
  }
}

TEST_CASE("dualpipe on a split problem splits its fused backwards, overlapped units included") {
  Problem p = family_problem("dualpipev", 4, 10);
  Generated mixed = generate("dualpipev", p);
  p.backward = BackwardMode::Split;
  Generated split = generate("dualpipev", p);
  REQUIRE(mixed.ok());
  REQUIRE(split.ok());
  CHECK(split.schedule->has_overlap());
  CHECK(split.schedule->overlap.size() == mixed.schedule->overlap.size());
  for (size_t r = 0; r < split.schedule->ranks.size(); ++r) {
    CHECK(split.schedule->overlap[r].size() == mixed.schedule->overlap[r].size());
    for (int32_t i : split.schedule->overlap[r]) {
      Action b = split.schedule->ranks[r][static_cast<size_t>(i) + 1];
      CHECK(b.kind == ActionKind::B);  // the unit's backward, its W right after the unit
      CHECK(split.schedule->ranks[r][static_cast<size_t>(i) + 2] == W(b.mb.value, b.stage.value));
    }
  }
  CHECK(figures(*split.schedule).makespan <= figures(*mixed.schedule).makespan);
}

TEST_CASE("generation is deterministic") {
  for (const std::string& name : test::all_family_names()) {
    CAPTURE(name);
    Problem p = family_problem(name, 4, 12);
    p.cost.F = PerStage::of(1.5);
    p.cost.comm = 0.25;
    Generated a = generate(name, p), b = generate(name, p);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a.schedule->ranks == b.schedule->ranks);
    CHECK(a.schedule->overlap == b.schedule->overlap);
  }
}

TEST_CASE("provenance names the family and its parameters") {
  Generated g = generate("interleaved-1f1b", family_problem("interleaved-1f1b", 4, 8), test::params("group_size", 4));
  REQUIRE(g.ok());
  REQUIRE(g.schedule->provenance.has_value());
  CHECK(ir::provenance_json(*g.schedule->provenance) ==
        R"({"source": "family", "family": "interleaved-1f1b", "params": {"group_size": 4}})");
}

TEST_CASE("generators are fast enough to serve as incumbents (pp = 32, m = 256)") {
  for (const std::string& name : test::all_family_names()) {
    CAPTURE(name);
    Problem p = family_problem(name, 32, 256);
    auto t0 = std::chrono::steady_clock::now();
    Generated g = generate(name, p);  // includes the verifier
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(g.ok());
    // Well under a second in an optimised build; generous for sanitizer builds on shared CI.
    CHECK(seconds < 5.0);
    MESSAGE(name << ": " << seconds << " s");
  }
}
