// The plan layer (solver/synth/plan.h): the bound over every partition of a model is below every
// valid schedule of every partition, at every budget of its branch and bound; the plan's answer
// is a valid schedule of the partition it names, and no stated partition beats it by more than
// its printed gap.

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ir/lower_bound.h"
#include "ir/model.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/synth/plan.h"
#include "tests/common/builders.h"
#include "tests/common/random_schedule.h"
#include "tests/common/solve.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

// Every way to cut `layers` into `stages` counts (each 0 or more).
std::vector<std::vector<int32_t>> all_partitions(int32_t stages, int32_t layers) {
  std::vector<std::vector<int32_t>> out;
  std::vector<int32_t> c(static_cast<size_t>(stages), 0);
  std::function<void(int32_t, int32_t)> go = [&](int32_t s, int32_t left) {
    if (s == stages - 1) {
      c[static_cast<size_t>(s)] = left;
      out.push_back(c);
      return;
    }
    for (int32_t k = 0; k <= left; ++k) {
      c[static_cast<size_t>(s)] = k;
      go(s + 1, left - k);
    }
  };
  go(0, layers);
  return out;
}

// A random model of one body kind or two (sometimes an embedding and a head), its values small
// integers and halves, and a problem of random shape around it.
struct Case {
  Problem base;
  Model model;
};

Case random_case(test::Rng& rng) {
  Case c;
  Problem& p = c.base;
  p.ranks = test::uniform(rng, 1, 3);
  switch (test::uniform(rng, 0, 2)) {
    case 0: p.placement = PlacementKind::Looped, p.stages_per_rank = test::uniform(rng, 1, 2); break;
    case 1: p.placement = PlacementKind::VShape, p.stages_per_rank = 2; break;
    default: p.placement = PlacementKind::Wave, p.stages_per_rank = 2; break;
  }
  p.directions = test::uniform(rng, 0, 3) == 0 ? 2 : 1;
  p.microbatches = p.directions * test::uniform(rng, 1, 3);
  p.backward = static_cast<BackwardMode>(test::uniform(rng, 0, 2));
  p.cost.comm = 0.5 * test::uniform(rng, 0, 2);
  if (test::uniform(rng, 0, 2) == 0) test::add_random_overheads(p, rng);
  if (test::uniform(rng, 0, 1) == 0) p.objective = Objective::MaxSpan;
  auto layer = [&](const char* name) {
    return LayerKind{name,
                     0.5 * test::uniform(rng, 0, 4),
                     0.5 * test::uniform(rng, 0, 4),
                     0.5 * test::uniform(rng, 0, 3),
                     0.5 * test::uniform(rng, 1, 4),
                     0.5 * test::uniform(rng, 0, 2),
                     0};
  };
  c.model.kinds.push_back(layer("layer"));
  c.model.layers.assign(static_cast<size_t>(test::uniform(rng, 0, 6)), 0);
  // A third of the models mix two kinds of layer (dense and MoE, say) in a random order.
  if (c.model.layers.size() >= 2 && test::uniform(rng, 0, 2) == 0) {
    c.model.kinds.push_back(layer("moe"));
    for (int32_t& k : c.model.layers) k = test::uniform(rng, 0, 1);
  }
  if (test::uniform(rng, 0, 1)) {
    c.model.kinds.push_back(layer("embedding"));
    c.model.embedding = static_cast<int32_t>(c.model.kinds.size() - 1);
  }
  if (test::uniform(rng, 0, 1)) {
    c.model.kinds.push_back(layer("head"));
    c.model.head = static_cast<int32_t>(c.model.kinds.size() - 1);
  }
  if (test::uniform(rng, 0, 3) == 0) {
    p.recompute = test::uniform(rng, 0, 1) ? Recompute::All : Recompute::Allowed;
    p.memory.input = PerStage::of(0);
    // Half of them keep a layer's input when checkpointed: memory.input follows the partition.
    if (test::uniform(rng, 0, 1)) {
      c.model.derive_input = true;
      for (LayerKind& k : c.model.kinds) k.input = std::min(k.memory, 0.5 * test::uniform(rng, 0, 2));
    }
  }
  return c;
}

}  // namespace

TEST_CASE("the plan bound is below every valid schedule of every partition, at every budget") {
  test::Rng rng(2812);
  int checked = 0, capped = 0, trials = 0, cut_short = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Case c = random_case(rng);
    const int32_t S = c.base.num_stages();
    const auto parts = all_partitions(S, c.model.num_layers());
    if (parts.size() > 120) continue;
    // Random valid orders of every partition; the cap is one of their peaks (or none), so that
    // some fit it and some do not.
    std::vector<Schedule> schedules;
    for (const auto& counts : parts) {
      Problem q = with_partition(c.base, c.model, counts);
      if (!validate(q).empty()) continue;
      for (int k = 0; k < 2; ++k) schedules.push_back(test::random_valid_paired(q, rng, 0));
    }
    if (schedules.empty()) continue;
    ++trials;
    Problem base = c.base;
    if (test::uniform(rng, 0, 2) != 0) {
      const Schedule& pick =
          schedules[static_cast<size_t>(test::uniform(rng, 0, static_cast<int>(schedules.size()) - 1))];
      std::vector<double> peaks = peak_memory(pick);
      base.memory.cap = PerStage::of(*std::max_element(peaks.begin(), peaks.end()) + 0.5 * test::uniform(rng, 0, 1));
      ++capped;
    }
    const double inf = std::numeric_limits<double>::infinity();
    struct Budget {
      int64_t full, nodes;
    };
    for (Budget b : {Budget{100000, 1000000}, Budget{0, 1000000}, Budget{1, 3}, Budget{2, 1}}) {
      solver::PartitionBound pb = solver::partition_space_bound(base, c.model, inf, b.full, b.nodes);
      cut_short += !pb.exhaustive;
      for (Schedule s : schedules) {
        s.problem.memory.cap = base.memory.cap;
        if (!verify(s).empty()) continue;  // over the cap
        const double obj = test::objective_of(s);
        INFO("trial " << trial << ", budget " << b.full << "/" << b.nodes << ", bound " << pb.value << ", schedule "
                      << obj);
        CHECK(pb.value <= obj + 1e-9 * std::max(1.0, obj));
        ++checked;
      }
    }
    // With every partition bounded in full, the plan bound is at least the least of their own
    // bounds: the branch and bound loses nothing.
    solver::PartitionBound exact = solver::partition_space_bound(base, c.model, inf, 100000, 1000000);
    double least = inf;
    for (const auto& counts : parts) {
      Problem q = with_partition(base, c.model, counts);
      if (validate(q).empty()) least = std::min(least, lower_bound(q).value);
    }
    if (least < inf) {
      INFO("trial " << trial);
      CHECK(exact.exhaustive);
      CHECK(exact.value >= least - 1e-9 * std::max(1.0, least));
    }
  }
  CHECK(trials > 100);
  CHECK(capped > trials / 2);
  CHECK(checked > 2000);
  CHECK(cut_short > 0);
}

// One microbatch's sure work of each rank of a partition's problem (one direction, no units):
// its stages' forwards and backwards (the cheaper backward where the mode is mixed), with R
// where everything is recomputed.
std::vector<double> rank_work_of(const Problem& q) {
  std::vector<double> work(static_cast<size_t>(q.ranks), 0);
  for (int32_t s = 0; s < q.num_stages(); ++s) {
    const double split = cost_of(q, B(0, s)) + cost_of(q, W(0, s)), fused = cost_of(q, BW(0, s));
    double back = q.backward == BackwardMode::Split   ? split
                  : q.backward == BackwardMode::Fused ? fused
                                                      : std::min(split, fused);
    if (q.recompute == Recompute::All) back += cost_of(q, R(0, s));
    work[static_cast<size_t>(q.rank_of(0, StageId(s)).value)] += q.microbatches * (cost_of(q, F(0, s)) + back);
  }
  return work;
}

TEST_CASE("the plan bound at its root already counts whole layers on every rank") {
  // With one kind of layer, every count of layers per rank is some partition's (each rank has a
  // stage of its own), so the least over the partitions of their busiest rank's work is what the
  // root's even spread of whole layers must reach, before any branching: with more stages than
  // ranks, the average it had before stays below that wherever the layers do not divide evenly.
  test::Rng rng(3107);
  int checked = 0, above_average = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Case c = random_case(rng);
    const auto& layers = c.model.layers;
    if (c.base.num_directions() != 1 ||
        std::any_of(layers.begin(), layers.end(), [&](int32_t k) { return k != layers.front(); }))
      continue;
    const int32_t S = c.base.num_stages();
    double least = std::numeric_limits<double>::infinity(), average = 0;
    for (const auto& counts : all_partitions(S, c.model.num_layers())) {
      const std::vector<double> work = rank_work_of(with_partition(c.base, c.model, counts));
      least = std::min(least, *std::max_element(work.begin(), work.end()));
      double total = 0;
      for (double x : work) total += x;
      average = total / c.base.ranks;
    }
    const double inf = std::numeric_limits<double>::infinity();
    const solver::PartitionBound root = solver::partition_space_bound(c.base, c.model, inf, 0, 0);
    INFO("trial " << trial << ", root bound " << root.value << ", least busiest rank " << least);
    CHECK(root.value >= least - 1e-9 * std::max(1.0, least));
    ++checked;
    above_average += least > average + 1e-9 && c.base.stages_per_rank > 1;
  }
  CHECK(checked > 100);
  CHECK(above_average > 10);  // cases the average alone would miss
}

TEST_CASE("the plan bound's root holds each rank to the layers its cap has room for") {
  // Four equal layers (1 GiB of static memory each) over two ranks of two stages: rank 0's cap
  // has room for one layer's static memory, so rank 1 holds three whatever the partition. The
  // even spread alone says two a rank; the root must say three, and the best partition meets it.
  Problem p = test::problem(2, 2, BackwardMode::Split);
  p.stages_per_rank = 2;
  Model model;
  model.kinds.push_back(LayerKind{"layer", 1, 1, 1, 0.5, 1, 0});
  model.layers.assign(4, 0);
  p.memory.cap = PerStage::list({1.5, 10});
  const double inf = std::numeric_limits<double>::infinity();
  const solver::PartitionBound root = solver::partition_space_bound(p, model, inf, 0, 0);
  double least = inf;
  for (const auto& counts : all_partitions(p.num_stages(), model.num_layers())) {
    Problem q = with_partition(p, model, counts);
    if (!validate(q).empty()) continue;  // rank 0's static memory over its cap
    const std::vector<double> work = rank_work_of(q);
    least = std::min(least, *std::max_element(work.begin(), work.end()));
  }
  CHECK(least == doctest::Approx(3 * 3 * 2));  // three layers, F + B + W, two microbatches
  CHECK(root.value >= least * (1 - 1e-9));     // counts err by 1e-9 of a layer, downwards
}

// The memory area of one partition, computed here from its problem alone (docs/solver.md, "The
// plan"): every (microbatch, stage)'s activations times the least time they stay (its F and the
// round trip through the later stages; half of them through a split B), over the room of all
// ranks together. Without recomputation, the plan's dynamic program must reach the least of it.
double area_of(const Problem& q) {
  double room = 0, area = 0;
  for (int32_t r = 0; r < q.ranks; ++r) room += *q.stated_cap_of(RankId(r)) - q.static_of(RankId(r));
  const bool fused = q.backward == BackwardMode::Fused;
  auto back = [&](int32_t s) { return cost_of(q, fused ? BW(0, s) : B(0, s)); };
  for (int32_t d = 0; d < q.num_directions(); ++d)
    for (int32_t s = 0; s < q.num_stages(); ++s) {
      double trip = 0;
      for (int32_t t = s + 1; t < q.num_stages(); ++t)
        trip += cost_of(q, F(0, t)) + back(t) +
                (q.rank_of(d, StageId(t - 1)) != q.rank_of(d, StageId(t)) ? 2 * q.cost.comm : 0);
      const double a = q.memory.F.at(static_cast<size_t>(s));
      area += q.microbatches_of(d) *
              (a * (cost_of(q, F(0, s)) + trip) + (q.backward == BackwardMode::Split ? a / 2 * back(s) : 0));
    }
  return room > 0 ? area / room : std::numeric_limits<double>::infinity();
}

TEST_CASE("the plan bound is below the best solved schedule of every partition where the cap binds") {
  // Random valid orders are far above the optimum; here every partition of small capped models
  // is solved (an optimum, or near one), with and without recomputation, the cap between a tight
  // and a loose one from a solved peak: the dynamic programs' bound (the memory area with them)
  // and the whole plan bound stay below the least of them. Without recomputation the programs'
  // bound is at least the least memory area over the partitions, computed independently.
  test::Rng rng(4041);
  int checked = 0, areas = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Case c = random_case(rng);
    Problem& p = c.base;
    p.ranks = 2;
    p.objective = Objective::Makespan;
    p.microbatches = p.directions * test::uniform(rng, 2, 3);
    if (c.model.num_layers() < 2) c.model.layers.assign(3, 0);
    const auto parts = all_partitions(p.num_stages(), c.model.num_layers());
    if (parts.size() > 40) continue;
    Problem balanced = with_partition(p, c.model, balanced_partition(c.model, p.num_stages()));
    if (!validate(balanced).empty()) continue;
    solver::SolveResult loose = solver::synthesize(balanced, test::deterministic(0.05));
    if (!loose.schedule) continue;
    const std::vector<double> peaks = peak_memory(*loose.schedule);
    p.memory.cap = PerStage::of(
        std::round(*std::max_element(peaks.begin(), peaks.end()) * (0.5 + 0.1 * test::uniform(rng, 0, 5))) +
        0.5 * test::uniform(rng, 0, 1));
    const double inf = std::numeric_limits<double>::infinity();
    double best = inf, least_area = inf;
    for (const auto& counts : parts) {
      Problem q = with_partition(p, c.model, counts);
      if (!validate(q).empty()) continue;
      least_area = std::min(least_area, area_of(q));
      solver::SolveResult r = solver::synthesize(q, test::deterministic(0.05));
      if (r.schedule && r.status != solver::SolveStatus::Infeasible && verify(*r.schedule).empty())
        best = std::min(best, r.objective);
    }
    if (best == inf) continue;
    const double dp = solver::partition_dp_bound(p, c.model);
    const double space = solver::partition_space_bound(p, c.model, inf, 100000, 1000000).value;
    INFO("trial " << trial << ", dp " << dp << ", space " << space << ", best " << best << ", area " << least_area);
    CHECK(dp <= best + 1e-9 * std::max(1.0, best));
    CHECK(space <= best + 1e-9 * std::max(1.0, best));
    ++checked;
    if (p.recompute == Recompute::Off && !p.cost.FB && least_area < inf) {
      CHECK(dp >= least_area * (1 - 1e-6));
      areas += least_area > 0;
    }
  }
  CHECK(checked >= 15);
  CHECK(areas >= 10);
}

TEST_CASE("with_partition: a stage's costs and memory are its layers', the embedding's and the head's") {
  Model m;
  m.kinds = {{"layer", 2, 3, 1, 4, 10, 1}, {"embedding", 0.5, 0.5, 0.5, 1, 20, 0}, {"head", 4, 4, 3, 6, 20, 0}};
  m.layers.assign(6, 0);
  m.embedding = 1;
  m.head = 2;
  m.derive_input = true;
  Problem base;
  base.ranks = 3;
  Problem q = with_partition(base, m, std::vector<int32_t>{1, 3, 2});
  CHECK(q.cost.F.values == std::vector<double>{2.5, 6, 8});
  CHECK(q.cost.W.values == std::vector<double>{1.5, 3, 5});
  CHECK(q.memory.F.values == std::vector<double>{5, 12, 14});
  CHECK(q.memory.B.values == std::vector<double>{-2.5, -6, -7});
  CHECK(q.memory.static_memory.values == std::vector<double>{30, 30, 40});
  CHECK(q.memory.input->values == std::vector<double>{1, 3, 2});
  // Equal stages give uniform values, as the frontend writes them.
  m.embedding.reset();
  m.head.reset();
  Problem u = with_partition(base, m, std::vector<int32_t>{2, 2, 2});
  CHECK(u.cost.F.is_uniform());
  CHECK(u.cost.F.uniform == 4);
}

namespace {

// A Llama-like model in small numbers under a cap that binds: the early ranks hold the most
// microbatches in flight.
Case capped_model(int32_t pp, int32_t layers, double cap) {
  Case c;
  c.base.ranks = pp;
  c.base.microbatches = 2 * pp;
  c.base.backward = BackwardMode::Split;
  c.base.cost.comm = 0.1;
  c.model.kinds = {
      {"layer", 1, 1, 0.8, 1, 2, 0}, {"embedding", 0.2, 0.2, 0.2, 0.5, 4, 0}, {"head", 1.5, 1.5, 1, 2, 4, 0}};
  c.model.layers.assign(static_cast<size_t>(layers), 0);
  c.model.embedding = 1;
  c.model.head = 2;
  c.base.memory.cap = PerStage::of(cap);
  return c;
}

}  // namespace

TEST_CASE("solve_plan: a valid schedule of the partition it names, and no stated partition beats its bound") {
  Case c = capped_model(4, 12, 26);
  solver::PlanSpace space;
  space.base = with_partition(c.base, c.model, balanced_partition(c.model, 4));
  space.model = &c.model;
  solver::PlanResult plan = solver::solve_plan(space, test::deterministic(4));
  REQUIRE(plan.error.empty());
  REQUIRE(plan.solve.schedule);
  CHECK(plan.problem == with_partition(space.base, c.model, plan.layers_per_stage));
  CHECK(plan.solve.schedule->problem == plan.problem);
  CHECK(verify(*plan.solve.schedule).empty());
  const double makespan = test::objective_of(*plan.solve.schedule);
  CHECK(makespan == doctest::Approx(plan.solve.objective));
  CHECK(plan.solve.lower_bound <= plan.solve.objective);
  int sum = 0;
  for (int32_t n : plan.layers_per_stage) sum += n;
  CHECK(sum == 12);
  // Sampled stated partitions, each solved on its own: none ends below the plan's bound, and the
  // balanced one (today's default) is no better than the plan.
  test::Rng rng(7);
  auto parts = all_partitions(4, 12);
  std::vector<std::vector<int32_t>> sample = {balanced_partition(c.model, 4)};
  for (int k = 0; k < 4; ++k)
    sample.push_back(parts[static_cast<size_t>(test::uniform(rng, 0, static_cast<int>(parts.size()) - 1))]);
  for (const auto& counts : sample) {
    Problem q = with_partition(space.base, c.model, counts);
    if (!validate(q).empty()) continue;
    solver::SolveResult r = solver::synthesize(q, test::deterministic(1));
    if (!r.schedule || r.status == solver::SolveStatus::Infeasible) continue;
    INFO("partition " << counts[0] << " " << counts[1] << " " << counts[2] << " " << counts[3]);
    CHECK(plan.solve.lower_bound <= r.objective + 1e-9);
    if (counts == sample.front()) CHECK(plan.solve.objective <= r.objective);
  }
}

TEST_CASE(
    "solve_plan: with stages_per_rank = auto the candidates share one limit, and a stated space of one passes through") {
  Problem p;
  p.ranks = 4;
  p.microbatches = 8;
  p.cost.F = PerStage::of(4);
  p.cost.B = PerStage::of(4);
  p.cost.W = PerStage::of(2);
  p.cost.comm = 0.1;
  solver::PlanSpace space;
  space.base = p;
  space.vpp_auto = true;
  solver::PlanResult plan = solver::solve_plan(space, test::deterministic(3));
  REQUIRE(plan.solve.schedule);
  CHECK(plan.candidates.size() == 3);
  CHECK(plan.stages_per_rank > 1);  // interleaving pays without overheads
  CHECK(verify(*plan.solve.schedule).empty());
  CHECK(plan.solve.lower_bound <= plan.solve.objective);
  // No vpp value of the space, solved on its own, ends below the plan's bound.
  for (int32_t v : {1, 2, 4}) {
    solver::SolveResult r = solver::synthesize(with_stages_per_rank(p, v), test::deterministic(1));
    REQUIRE(r.schedule);
    CHECK(plan.solve.lower_bound <= r.objective + 1e-9);
  }
  solver::PlanSpace one;
  one.base = p;
  solver::PlanResult direct = solver::solve_plan(one, test::deterministic(1));
  CHECK(direct.candidates.empty());
  CHECK(direct.solve.objective == solver::synthesize(p, test::deterministic(1)).objective);
}

TEST_CASE("solve_plan: the plan bound sits on the time tick, as every makespan does") {
  // examples/solve-plan-moe.sched: its partition bound summed in doubles read 937.4000000000004.
  Problem p = capped_model(4, 1, 40960).base;  // split backward, the cap in MiB
  p.microbatches = 16;
  p.recompute = Recompute::Allowed;
  p.memory.input = PerStage::of(0);
  p.cost.comm = 0.5;
  Model m;
  m.kinds = {{"dense", 2, 2, 1.5, 400, 1024, 32},
             {"moe", 3, 3.2, 2, 600, 5120, 32},
             {"mtp", 2.5, 2.5, 2, 500, 2048, 32},
             {"embedding", 0.5, 0.5, 0.5, 64, 2048, 0},
             {"head", 4, 4, 3, 1024, 2048, 32}};
  m.layers.assign(3, 0);
  m.layers.insert(m.layers.end(), 21, 1);
  m.layers.push_back(2);
  m.embedding = 3;
  m.head = 4;
  m.derive_input = true;
  solver::PlanSpace space;
  space.base = with_partition(p, m, balanced_partition(m, 4));
  space.model = &m;
  solver::PlanResult plan = solver::solve_plan(space, test::deterministic(3));
  REQUIRE(plan.solve.schedule);
  const double tenths = plan.solve.lower_bound * 10;
  INFO("bound " << plan.solve.lower_bound);
  CHECK(tenths == std::round(tenths));
  CHECK(plan.solve.lower_bound <= plan.solve.objective);
}

namespace {

// Layers whose static memory only four a rank can hold (15 GiB each, 16 of them on 4 ranks, the
// embedding's and the head's 4 GiB beside), the plan searching every shape from ir::fit_static's
// partition, as the frontend starts `partition = auto`.
struct StaticHeavy {
  Case c;
  ir::StaticFit fit;
  std::optional<solver::PlanResult> plan;
};
StaticHeavy static_heavy(double cap) {
  StaticHeavy out{capped_model(4, 16, cap), {}, {}};
  Case& c = out.c;
  c.base.microbatches = 16;
  c.model.kinds = {
      {"layer", 1, 1, 0.8, 1, 15, 0}, {"embedding", 0.2, 0.2, 0.2, 0.5, 4, 0}, {"head", 1.5, 1.5, 1, 2, 4, 0}};
  out.fit = ir::fit_static(c.base, c.model);
  if (!out.fit.counts) return out;
  solver::PlanSpace space;
  space.base = with_partition(c.base, c.model, *out.fit.counts);
  space.model = &c.model;
  space.vpp_auto = true;
  space.placement_auto = true;
  out.plan = solver::solve_plan(space, test::deterministic(2));
  return out;
}

}  // namespace

TEST_CASE("solve_plan: where the balanced partition's static memory is over the cap, a partition that fits") {
  // The balanced partition gives a middle rank five layers, over the cap.
  StaticHeavy h = static_heavy(70);
  REQUIRE_FALSE(validate(with_partition(h.c.base, h.c.model, balanced_partition(h.c.model, 4))).empty());
  REQUIRE(h.plan);
  const solver::PlanResult& plan = *h.plan;
  REQUIRE(plan.solve.schedule);
  CHECK(plan.solve.status != solver::SolveStatus::Infeasible);
  CHECK(verify(*plan.solve.schedule).empty());
  CHECK(plan.solve.lower_bound <= plan.solve.objective);
}

TEST_CASE("solve_plan: where no candidate fits, the first tried one's reason, said to be that plan's") {
  // At a cap of 68 only four layers a rank fit the static memory, and then the last rank cannot
  // hold one microbatch's activations. The partition that fits is tried (not every candidate
  // skipped as invalid), and its smallest cap is not claimed for the whole space.
  StaticHeavy h = static_heavy(68);
  REQUIRE(h.fit.counts);
  CHECK(*h.fit.counts == std::vector<int32_t>{4, 4, 4, 4});
  REQUIRE(h.plan);
  const solver::PlanResult& plan = *h.plan;
  CHECK(plan.error.empty());
  REQUIRE(plan.solve.status == solver::SolveStatus::Infeasible);
  REQUIRE(plan.solve.infeasible);
  CHECK(plan.solve.infeasible->smallest_cap == 0);
  CHECK(plan.solve.infeasible->explanation.find("none of the plan's") == 0);
}
