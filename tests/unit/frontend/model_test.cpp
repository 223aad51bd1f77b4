// `model`, `layer`, `embedding`, `head`: per-stage costs and memory derived from a model's
// layers, by an optimal balanced partition or an explicit one.

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "ir/model.h"
#include "tests/unit/frontend/test_util.h"

using namespace schedc;
using namespace schedc::frontend;
using schedc::frontend::test::run;
using schedc::ir::balanced_partition;

namespace {

double max_time(const std::vector<int32_t>& counts, double layer, double first, double last) {
  double worst = 0;
  for (size_t s = 0; s < counts.size(); ++s)
    worst = std::max(worst, counts[s] * layer + (s == 0 ? first : 0) + (s + 1 == counts.size() ? last : 0));
  return worst;
}

// The least largest stage time over every way of splitting `layers` into `stages` counts.
double brute_force(int32_t stages, int32_t layers, double layer, double first, double last) {
  std::vector<int32_t> counts(static_cast<size_t>(stages), 0);
  double best = 1e300;
  std::function<void(int32_t, int32_t)> go = [&](int32_t s, int32_t left) {
    if (s == stages - 1) {
      counts[static_cast<size_t>(s)] = left;
      best = std::min(best, max_time(counts, layer, first, last));
      return;
    }
    for (int32_t k = 0; k <= left; ++k) {
      counts[static_cast<size_t>(s)] = k;
      go(s + 1, left - k);
    }
  };
  go(0, layers);
  return best;
}

}  // namespace

TEST_CASE("balanced partition: optimal largest stage time, every layer placed") {
  std::mt19937 rng(11);
  for (int round = 0; round < 400; ++round) {
    int32_t stages = 1 + static_cast<int32_t>(rng() % 5), layers = 1 + static_cast<int32_t>(rng() % 9);
    double layer = static_cast<double>(rng() % 4), first = static_cast<double>(rng() % 12) / 2,
           last = static_cast<double>(rng() % 12) / 2;
    auto counts = balanced_partition(stages, layers, layer, first, last);
    INFO("stages " << stages << " layers " << layers << " layer " << layer << " first " << first << " last " << last);
    REQUIRE(counts.size() == static_cast<size_t>(stages));
    int32_t sum = 0;
    for (int32_t c : counts) {
      CHECK(c >= 0);
      sum += c;
    }
    CHECK(sum == layers);
    CHECK(max_time(counts, layer, first, last) == doctest::Approx(brute_force(stages, layers, layer, first, last)));
  }
  // Equal stages differ by at most one layer, even when layers cost nothing.
  CHECK(balanced_partition(4, 10, 0, 0, 0) == std::vector<int32_t>{3, 3, 2, 2});
  CHECK(balanced_partition(4, 8, 1, 0, 0) == std::vector<int32_t>{2, 2, 2, 2});
  // A heavy head takes layers off the last stage.
  CHECK(balanced_partition(4, 8, 1, 0, 2) == std::vector<int32_t>{3, 2, 2, 1});
}

TEST_CASE("model: per-stage costs and memory from layers, embedding and head") {
  Spec s = SPEC_OF("ranks = 4\nmicrobatches = 8\n"
                   "model { layers = 8  partition = [1, 3, 3, 1] }\n"
                   "layer { F = 2ms  B = 2ms  W = 1ms  memory = 256MiB  static = 1GiB }\n"
                   "embedding { F = 1ms  B = 1ms  W = 500us  memory = 0  static = 2GiB }\n"
                   "head { F = 3ms  B = 3ms  W = 2ms  memory = 512MiB  static = 2GiB }\n"
                   "memory { cap = 40GiB }\n");
  const ir::Problem& p = s.problem;
  CHECK(s.layers_per_stage == std::vector<int32_t>{1, 3, 3, 1});
  CHECK(p.time_unit == "us");
  CHECK(p.memory_unit == "MiB");
  CHECK(p.cost.F == ir::PerStage::list({3000, 6000, 6000, 5000}));
  CHECK(p.cost.W == ir::PerStage::list({1500, 3000, 3000, 3000}));
  CHECK(p.memory.F == ir::PerStage::list({256, 768, 768, 768}));
  CHECK(p.memory.B == ir::PerStage::list({-128, -384, -384, -384}));  // B and W follow F
  CHECK(p.memory.static_memory == ir::PerStage::of(3072));            // equal on every stage: one number
  CHECK(s.is_given(ir::Field::CostF));

  Spec b = SPEC_OF("ranks = 4\nmicrobatches = 8\nmodel { layers = 32 }\nlayer { F = 1  B = 1  W = 1 }\n");
  CHECK(b.layers_per_stage == std::vector<int32_t>{8, 8, 8, 8});
  CHECK(b.problem.cost.F == ir::PerStage::of(8));
}

TEST_CASE("model: errors") {
  auto first_error = [](const std::string& src) {
    auto r = run(src);
    INFO(r.text);
    CHECK(!r.spec);
    REQUIRE(r.errors() >= 1);
    return r.first();
  };
  const std::string head = "ranks = 4\nmicrobatches = 8\n";
  auto d = first_error(head + "model { layers = 8 }\nlayer { F = 1  B = 1  W = 1 }\ncost { F = 2 }\n");
  CHECK(d.kind == DiagKind::BadValue);
  CHECK(d.message == "`cost.F` is derived from `model` (its layers and partition): give one or the other");
  d = first_error(head + "model { layers = 8  partition = [1, 2, 3] }\nlayer { F = 1  B = 1  W = 1 }\n");
  CHECK(d.kind == DiagKind::BadValue);
  CHECK(d.message == "`model.partition` lists the layers of each stage: 4 numbers summing to 8, got 3 summing to 6");
  d = first_error(head + "model { layers = 8 }\n");
  CHECK(d.kind == DiagKind::MissingKey);
  d = first_error(head + "layer { F = 1  B = 1  W = 1 }\n");
  CHECK(d.kind == DiagKind::MissingKey);
  d = first_error(head + "model { layers = 8 }\nlayer { F = 1ms  B = 1  W = 1ms }\n");
  CHECK(d.kind == DiagKind::BadUnit);
  d = first_error(head + "model { layers = 8 }\nlayer { F = 1GiB  B = 1  W = 1 }\n");
  CHECK(d.kind == DiagKind::BadUnit);
  d = first_error(head + "model { layers = 8  partition = balancd }\nlayer { F = 1  B = 1  W = 1 }\n");
  CHECK(d.kind == DiagKind::WrongType);
  CHECK(d.message.find("did you mean `balanced`?") != std::string::npos);
}
