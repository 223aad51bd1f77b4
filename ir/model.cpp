#include "ir/model.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <queue>
#include <tuple>
#include <vector>

#include "ir/schedule.h"

namespace schedc::ir {

namespace {

double extra(int32_t s, int32_t stages, double first, double last) {
  return (s == 0 ? first : 0) + (s == stages - 1 ? last : 0);
}

// How many layers stage s can take while its time stays within t (a large number when layers
// cost nothing).
int64_t room(int32_t s, int32_t stages, double layer, double first, double last, double t, int32_t layers) {
  double left = t - extra(s, stages, first, last);
  if (left < -1e-9 * std::max(1.0, std::abs(t))) return -1;
  if (layer <= 0) return layers;
  return static_cast<int64_t>(std::floor(left / layer + 1e-9));
}

}  // namespace

std::vector<int32_t> balanced_partition(int32_t stages, int32_t layers, double layer, double first, double last) {
  std::vector<int32_t> out(static_cast<size_t>(stages), 0);
  if (stages <= 0) return out;
  auto fits = [&](double t) {
    int64_t total = 0;
    for (int32_t s = 0; s < stages && total < layers; ++s) {
      int64_t r = room(s, stages, layer, first, last, t, layers);
      if (r < 0) return false;
      total += r;
    }
    return total >= layers;
  };
  // The optimum is some stage's time, e + k * layer with e one of the extras a stage can have:
  // for each, bisect the smallest k that fits; the optimum is the least of those times.
  std::vector<double> extras{0, first, last};
  if (stages == 1) extras = {first + last};
  double best = -1;
  for (double e : extras) {
    if (!fits(e + static_cast<double>(layers) * layer)) continue;
    int64_t lo = 0, hi = layers;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (fits(e + static_cast<double>(mid) * layer)) hi = mid;
      else lo = mid + 1;
    }
    double t = e + static_cast<double>(lo) * layer;
    if (best < 0 || t < best) best = t;
  }
  // Every stage filled to its room at the optimum, then the surplus taken back from the heaviest
  // stage (the one with more layers, then the later one, on ties).
  int64_t total = 0;
  for (int32_t s = 0; s < stages; ++s) {
    int64_t r = std::clamp<int64_t>(room(s, stages, layer, first, last, best, layers), 0, layers);
    out[static_cast<size_t>(s)] = static_cast<int32_t>(r);
    total += r;
  }
  using Load = std::tuple<double, int32_t, int32_t>;  // stage time, layers, stage
  std::priority_queue<Load> heavy;
  for (int32_t s = 0; s < stages; ++s)
    if (int32_t n = out[static_cast<size_t>(s)]; n > 0) heavy.push({n * layer + extra(s, stages, first, last), n, s});
  while (total > layers && !heavy.empty()) {
    auto [t, n, s] = heavy.top();
    heavy.pop();
    --out[static_cast<size_t>(s)];
    --total;
    if (n > 1) heavy.push({t - layer, n - 1, s});
  }
  return out;
}

namespace {
double total(const LayerKind& k) { return k.F + k.B + k.W; }
}  // namespace

std::vector<int32_t> balanced_partition(const Model& model, int32_t stages) {
  const double layer = model.layers.empty() ? 0 : total(model.kinds[static_cast<size_t>(model.layers[0])]);
  const double first = model.embedding ? total(model.kinds[static_cast<size_t>(*model.embedding)]) : 0;
  const double last = model.head ? total(model.kinds[static_cast<size_t>(*model.head)]) : 0;
  return balanced_partition(stages, model.num_layers(), layer, first, last);
}

namespace {

// The tick every value of `field` over the model's kinds sits on (exact_scale), or nullopt.
std::optional<int64_t> kinds_scale(const Model& m, std::initializer_list<double LayerKind::*> fields) {
  std::vector<double> values;
  for (const LayerKind& k : m.kinds)
    for (double LayerKind::*f : fields) values.push_back(k.*f);
  return exact_scale_of(values);
}

}  // namespace

StageSums stage_sums(const Model& m, int32_t stage, int32_t num_stages, int32_t first, int32_t count) {
  // Sums of the layers' values counted in their ticks, so that a stage's value is exactly the sum
  // of its layers' decimals (a sum of doubles drifts off the tick, and validate() would refuse
  // it). Where the kinds have no common tick (validate() refuses those anyway), plain sums.
  const std::optional<int64_t> time = kinds_scale(m, {&LayerKind::F, &LayerKind::B, &LayerKind::W});
  const std::optional<int64_t> memory = kinds_scale(m,
                                                    {&LayerKind::memory, &LayerKind::static_memory, &LayerKind::input});
  struct Sum {
    std::optional<int64_t> scale;
    long double ticks = 0;  // whole ticks, exact below 2^64
    double plain = 0;
    void add(double n, double v) {
      if (scale) ticks += static_cast<long double>(n) * static_cast<long double>(to_fixed(v, *scale));
      else plain += n * v;
    }
    double value() const { return scale ? static_cast<double>(ticks / static_cast<long double>(*scale)) : plain; }
  };
  Sum F{time}, B{time}, W{time}, mem{memory}, stat{memory}, input{memory};
  auto add = [&](double n, const LayerKind& k) {
    F.add(n, k.F), B.add(n, k.B), W.add(n, k.W);
    mem.add(n, k.memory), stat.add(n, k.static_memory), input.add(n, k.input);
  };
  for (int32_t i = first; i < first + count;) {
    int32_t j = i;
    const int32_t kind = m.layers[static_cast<size_t>(i)];
    while (j < first + count && m.layers[static_cast<size_t>(j)] == kind) ++j;
    add(j - i, m.kinds[static_cast<size_t>(kind)]);
    i = j;
  }
  if (stage == 0 && m.embedding) add(1, m.kinds[static_cast<size_t>(*m.embedding)]);
  if (stage == num_stages - 1 && m.head) add(1, m.kinds[static_cast<size_t>(*m.head)]);
  return {F.value(), B.value(), W.value(), mem.value(), stat.value(), input.value()};
}

Problem with_partition(const Problem& base, const Model& model, std::span<const int32_t> layers_per_stage) {
  Problem p = base;
  const int32_t S = static_cast<int32_t>(layers_per_stage.size());
  std::vector<StageSums> sums;
  int32_t first = 0;
  for (int32_t s = 0; s < S; ++s) {
    sums.push_back(stage_sums(model, s, S, first, layers_per_stage[static_cast<size_t>(s)]));
    first += layers_per_stage[static_cast<size_t>(s)];
  }
  auto per_stage = [&](double StageSums::*field, double factor = 1) {
    std::vector<double> v;
    for (const StageSums& x : sums) v.push_back(x.*field * factor);
    bool uniform = std::all_of(v.begin(), v.end(), [&](double x) { return x == v[0]; });
    return uniform ? PerStage::of(v.empty() ? 0 : v[0]) : PerStage::list(std::move(v));
  };
  p.cost.F = per_stage(&StageSums::F);
  p.cost.B = per_stage(&StageSums::B);
  p.cost.W = per_stage(&StageSums::W);
  p.memory.F = per_stage(&StageSums::memory);
  p.memory.static_memory = per_stage(&StageSums::static_memory);
  if (model.deltas_follow) p.memory.B = p.memory.W = per_stage(&StageSums::memory, -0.5);
  if (model.derive_input) p.memory.input = per_stage(&StageSums::input);
  return p;
}

}  // namespace schedc::ir
