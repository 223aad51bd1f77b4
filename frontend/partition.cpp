#include "frontend/partition.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <tuple>

namespace schedc::frontend {

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

}  // namespace schedc::frontend
