#include "ir/model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
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

namespace {

// The tick every value of `field` over the model's kinds sits on (exact_scale), or nullopt.
std::optional<int64_t> kinds_scale(const Model& m, std::initializer_list<double LayerKind::*> fields) {
  std::vector<double> values;
  for (const LayerKind& k : m.kinds)
    for (double LayerKind::*f : fields) values.push_back(k.*f);
  return exact_scale_of(values);
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

namespace {

// The mixed-kind balanced partition: bisect the slowest stage's time in ticks, each candidate
// checked by filling the stages from the last back (the most layers a stage can take is optimal
// for the stages before it).
std::vector<int32_t> balanced_mixed(const Model& model, int32_t stages) {
  const int64_t scale = kinds_scale(model, {&LayerKind::F, &LayerKind::B, &LayerKind::W}).value_or(1'000'000);
  auto ticks = [&](int32_t kind) {
    const LayerKind& k = model.kinds[static_cast<size_t>(kind)];
    return to_fixed(k.F, scale) + to_fixed(k.B, scale) + to_fixed(k.W, scale);
  };
  std::vector<int64_t> cost;
  for (int32_t kind : model.layers) cost.push_back(ticks(kind));
  const int64_t first = model.embedding ? ticks(*model.embedding) : 0;
  const int64_t last = model.head ? ticks(*model.head) : 0;
  std::vector<int32_t> out(static_cast<size_t>(stages), 0);
  // Fills from the back under t; false when the first stage ends above t.
  auto fill = [&](int64_t t, std::vector<int32_t>& counts) {
    std::fill(counts.begin(), counts.end(), 0);
    size_t left = cost.size();
    for (int32_t s = stages - 1; s >= 1; --s) {
      int64_t load = s == stages - 1 ? last : 0;
      if (load > t) return false;
      while (left > 0 && load + cost[left - 1] <= t) load += cost[--left], ++counts[static_cast<size_t>(s)];
    }
    int64_t load = first + (stages == 1 ? last : 0);
    for (size_t i = 0; i < left; ++i) load += cost[i];
    counts[0] = static_cast<int32_t>(left);
    return load <= t;
  };
  int64_t lo = 0, hi = first + last;
  for (int64_t c : cost) hi += c;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (fill(mid, out)) hi = mid;
    else lo = mid + 1;
  }
  fill(lo, out);
  return out;
}

}  // namespace

std::vector<int32_t> balanced_partition(const Model& model, int32_t stages) {
  if (stages > 0 &&
      std::adjacent_find(model.layers.begin(), model.layers.end(), std::not_equal_to<>()) != model.layers.end())
    return balanced_mixed(model, stages);
  const double layer = model.layers.empty() ? 0 : total(model.kinds[static_cast<size_t>(model.layers[0])]);
  const double first = model.embedding ? total(model.kinds[static_cast<size_t>(*model.embedding)]) : 0;
  const double last = model.head ? total(model.kinds[static_cast<size_t>(*model.head)]) : 0;
  return balanced_partition(stages, model.num_layers(), layer, first, last);
}

StaticFit fit_static(const Problem& base, const Model& model) {
  StaticFit out;
  const int32_t S = base.num_stages(), L = model.num_layers(), pp = base.ranks;
  if (!base.memory.cap || S < 1) return out;
  const Problem empty = with_partition(base, model, std::vector<int32_t>(static_cast<size_t>(S), 0));
  std::vector<double> room(static_cast<size_t>(pp));  // each rank's cap less its fixed static
  for (int32_t r = 0; r < pp; ++r)
    room[static_cast<size_t>(r)] = *base.stated_cap_of(RankId(r)) - empty.static_of(RankId(r));
  auto fits = [&](const std::vector<int32_t>& counts) {
    return !with_partition(base, model, counts).static_over_cap();
  };
  auto static_of = [&](int32_t i) {
    return model.kinds[static_cast<size_t>(model.layers[static_cast<size_t>(i)])].static_memory;
  };
  const double worst_fixed = -*std::min_element(room.begin(), room.end());
  const bool one_kind = L == 0 || std::adjacent_find(model.layers.begin(), model.layers.end(), std::not_equal_to<>()) ==
                                      model.layers.end();
  if (base.num_directions() == 1 && one_kind) {
    const double st = L == 0 ? 0 : static_of(0);
    // The least largest excess: each layer to the rank it leaves with least excess.
    std::vector<int32_t> n(static_cast<size_t>(pp), 0);
    double excess = worst_fixed;
    if (st > 0) {
      using Item = std::pair<double, int32_t>;  // the excess with one more layer, the rank
      std::priority_queue<Item, std::vector<Item>, std::greater<>> next;
      for (int32_t r = 0; r < pp; ++r) next.push({st - room[static_cast<size_t>(r)], r});
      for (int32_t i = 0; i < L; ++i) {
        auto [e, r] = next.top();
        next.pop();
        excess = std::max(excess, e);
        ++n[static_cast<size_t>(r)];
        next.push({e + st, r});
      }
    }
    if (excess > 0) {
      out.exact = true;
      out.excess = excess;
      return out;
    }
    // Closest to balanced: each rank's balanced share clamped to its room, the rest handed to the
    // ranks with most room left, then each rank's layers over its stages in order.
    const std::vector<int32_t> balanced = balanced_partition(model, S);
    std::vector<int64_t> share(static_cast<size_t>(pp), 0), most(static_cast<size_t>(pp), L);
    for (int32_t s = 0; s < S; ++s)
      share[static_cast<size_t>(base.rank_of(0, StageId(s)).value)] += balanced[static_cast<size_t>(s)];
    int64_t left = 0;
    for (int32_t r = 0; r < pp; ++r) {
      const auto z = static_cast<size_t>(r);
      if (st > 0) most[z] = static_cast<int64_t>(std::floor(room[z] / st * (1 + 1e-12)));
      if (share[z] > most[z]) left += share[z] - most[z], share[z] = most[z];
    }
    while (left > 0) {
      int32_t pick = -1;
      for (int32_t r = 0; r < pp; ++r)
        if (share[static_cast<size_t>(r)] < most[static_cast<size_t>(r)] &&
            (pick < 0 || most[static_cast<size_t>(r)] - share[static_cast<size_t>(r)] >
                             most[static_cast<size_t>(pick)] - share[static_cast<size_t>(pick)]))
          pick = r;
      if (pick < 0) return out;  // rounding: the waterfill said it fits
      const int64_t give = std::min(left, most[static_cast<size_t>(pick)] - share[static_cast<size_t>(pick)]);
      share[static_cast<size_t>(pick)] += give, left -= give;
    }
    std::vector<int32_t> counts(static_cast<size_t>(S), 0), held(static_cast<size_t>(pp), 0), seen(held);
    for (int32_t s = 0; s < S; ++s) ++held[static_cast<size_t>(base.rank_of(0, StageId(s)).value)];
    for (int32_t s = 0; s < S; ++s) {
      const auto r = static_cast<size_t>(base.rank_of(0, StageId(s)).value);
      const int64_t k = held[r] - seen[r]++;  // this rank's stages left, this one included
      const auto give = static_cast<int32_t>((share[r] + k - 1) / k);
      counts[static_cast<size_t>(s)] = give;
      share[r] -= give;
    }
    if (fits(counts)) out.counts = std::move(counts);
    return out;
  }
  std::vector<double> prefix(static_cast<size_t>(L) + 1, 0);
  for (int32_t i = 0; i < L; ++i) prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + static_of(i);
  if (base.num_directions() == 1 && base.stages_per_rank == 1 &&
      static_cast<double>(S) * (L + 1.0) * (L + 1.0) <= 4e8) {
    // One stage a rank: the contiguous cut of least largest excess, by dynamic programming.
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> dp(static_cast<size_t>(S) + 1,
                                        std::vector<double>(static_cast<size_t>(L) + 1, inf));
    std::vector<std::vector<int32_t>> take(static_cast<size_t>(S), std::vector<int32_t>(static_cast<size_t>(L) + 1, 0));
    dp[0][0] = -inf;
    for (int32_t s = 0; s < S; ++s) {
      const double r = room[static_cast<size_t>(base.rank_of(0, StageId(s)).value)];
      for (int32_t c = 0; c <= L; ++c) {
        for (int32_t k = 0; k <= c; ++k) {  // this stage takes layers c - k .. c - 1
          const double before = dp[static_cast<size_t>(s)][static_cast<size_t>(c - k)];
          if (before == inf) continue;
          const double v = std::max(before, prefix[static_cast<size_t>(c)] - prefix[static_cast<size_t>(c - k)] - r);
          if (v < dp[static_cast<size_t>(s) + 1][static_cast<size_t>(c)])
            dp[static_cast<size_t>(s) + 1][static_cast<size_t>(c)] = v,
                                        take[static_cast<size_t>(s)][static_cast<size_t>(c)] = k;
        }
      }
    }
    const double excess = dp[static_cast<size_t>(S)][static_cast<size_t>(L)];
    if (excess > 0) {
      out.exact = true;
      out.excess = excess;
      return out;
    }
    std::vector<int32_t> counts(static_cast<size_t>(S), 0);
    for (int32_t s = S - 1, c = L; s >= 0; --s) {
      counts[static_cast<size_t>(s)] = take[static_cast<size_t>(s)][static_cast<size_t>(c)];
      c -= counts[static_cast<size_t>(s)];
    }
    if (fits(counts)) out.counts = std::move(counts);
    return out;
  }
  // Otherwise: each stage in order takes what its rank's room still holds, the last the rest.
  std::vector<double> left = room;
  std::vector<int32_t> counts(static_cast<size_t>(S), 0);
  int32_t next = 0;
  for (int32_t s = 0; s < S; ++s) {
    int32_t k = 0;
    if (s == S - 1) {
      k = L - next;
    } else {
      // A layer of stage s sits on the rank of s in every direction.
      auto room_for = [&](double st) {
        for (int32_t d = 0; d < base.num_directions(); ++d)
          if (st > left[static_cast<size_t>(base.rank_of(d, StageId(s)).value)] * (1 + 1e-12)) return false;
        return true;
      };
      while (next + k < L && room_for(static_of(next + k))) {
        for (int32_t d = 0; d < base.num_directions(); ++d)
          left[static_cast<size_t>(base.rank_of(d, StageId(s)).value)] -= static_of(next + k);
        ++k;
      }
    }
    counts[static_cast<size_t>(s)] = k;
    next += k;
  }
  if (fits(counts)) out.counts = std::move(counts);
  return out;
}

std::optional<double> least_cap_any_partition(const Problem& base, const Model& model) {
  const int32_t S = base.num_stages(), L = model.num_layers();
  if (!base.memory.cap || !base.memory.cap->is_uniform() || base.num_directions() != 1 || base.stages_per_rank != 1 ||
      !model.deltas_follow || S < 1 || static_cast<double>(S) * (L + 1.0) * (L + 1.0) > 4e8)
    return std::nullopt;
  const Problem empty = with_partition(base, model, std::vector<int32_t>(static_cast<size_t>(S), 0));
  std::vector<double> held(static_cast<size_t>(L) + 1, 0);  // prefix sums of static + activations
  for (int32_t i = 0; i < L; ++i) {
    const LayerKind& k = model.kinds[static_cast<size_t>(model.layers[static_cast<size_t>(i)])];
    held[static_cast<size_t>(i) + 1] = held[static_cast<size_t>(i)] + k.static_memory + k.memory;
  }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> dp(static_cast<size_t>(L) + 1, inf), next(dp.size());
  dp[0] = -inf;
  for (int32_t s = 0; s < S; ++s) {
    const auto z = static_cast<size_t>(s);
    // A rank's other stages: none (one stage a rank), so its static is this stage's.
    const double fixed = empty.memory.static_memory.at(z) + empty.memory.F.at(z);
    std::fill(next.begin(), next.end(), inf);
    for (int32_t c = 0; c <= L; ++c) {
      if (dp[static_cast<size_t>(c)] == inf) continue;
      for (int32_t n = s == S - 1 ? L - c : 0; n <= L - c; ++n) {
        const double v = std::max(dp[static_cast<size_t>(c)],
                                  fixed + held[static_cast<size_t>(c + n)] - held[static_cast<size_t>(c)]);
        next[static_cast<size_t>(c + n)] = std::min(next[static_cast<size_t>(c + n)], v);
      }
    }
    dp.swap(next);
  }
  return dp[static_cast<size_t>(L)] == inf ? std::nullopt : std::optional<double>(dp[static_cast<size_t>(L)]);
}

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

namespace {

constexpr size_t kMaxLayoutSymbols = 4'000'000;

// Expands repetitions: the symbols E t m L and | in order, or false with `error`.
bool expand_layout(std::string_view text, size_t& pos, int depth, std::string& out, std::string& error) {
  auto at = [&](size_t i) { return "at character " + std::to_string(i + 1); };
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == ',' || c == ' ') {
      ++pos;
      continue;
    }
    if (c == ')') return true;
    std::string item;
    const size_t start = pos;
    if (c == '(') {
      if (depth >= 16) return error = "the layout nests `(` more than 16 deep", false;
      ++pos;
      if (!expand_layout(text, pos, depth + 1, item, error)) return false;
      if (pos >= text.size()) return error = "the `(` " + at(start) + " is never closed", false;
      ++pos;  // ')'
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
      item = std::string(1, c);
      ++pos;
    } else {
      return error = "unexpected `" + std::string(1, c) + "` " + at(pos) +
                     ": a layout has `E`, `t`, `m`, `L`, `|`, `*N`, `(...)` and `,`",
             false;
    }
    int64_t times = 1;
    if (pos < text.size() && text[pos] == '*') {
      const size_t star = pos++;
      if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
        return error = "`*` " + at(star) + " needs a count", false;
      times = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        times = times * 10 + (text[pos++] - '0');
        if (times > static_cast<int64_t>(kMaxLayoutSymbols)) return error = "the layout is too long", false;
      }
    }
    if (static_cast<int64_t>(out.size()) + times * static_cast<int64_t>(item.size()) >
        static_cast<int64_t>(kMaxLayoutSymbols))
      return error = "the layout is too long (more than " + std::to_string(kMaxLayoutSymbols) + " symbols)", false;
    for (int64_t k = 0; k < times; ++k) out += item;
  }
  return true;
}

bool is_mtp(const Model& m, int32_t kind) { return m.kinds[static_cast<size_t>(kind)].name == "mtp"; }

}  // namespace

std::optional<std::vector<int32_t>> parse_megatron_layout(std::string_view layout, const Model& model, int32_t stages,
                                                          std::string& error) {
  std::string symbols;
  size_t pos = 0;
  if (!expand_layout(layout, pos, 0, symbols, error)) return std::nullopt;
  if (pos < layout.size()) {
    error = "unexpected `)` at character " + std::to_string(pos + 1);
    return std::nullopt;
  }
  std::vector<std::string> parts{""};
  for (char c : symbols)
    if (c == '|') parts.emplace_back();
    else parts.back() += c;
  if (parts.size() != static_cast<size_t>(stages)) {
    error = "the layout has " + std::to_string(parts.size()) + " stages, the problem " + std::to_string(stages) +
            " (ranks x stages_per_rank)";
    return std::nullopt;
  }
  std::vector<int32_t> counts;
  size_t next = 0;  // the next body layer
  for (size_t s = 0; s < parts.size(); ++s) {
    int32_t n = 0;
    const std::string& part = parts[s];
    for (size_t i = 0; i < part.size(); ++i) {
      const char c = part[i];
      const std::string where = "stage " + std::to_string(s);
      if (c == 'E') {
        if (s != 0 || i != 0) {
          error = where + " holds `E`: the embedding runs first, on stage 0";
          return std::nullopt;
        }
        continue;
      }
      if (c == 'L') {
        if (s + 1 != parts.size() || i + 1 != part.size()) {
          error = where + " holds `L`: the loss and output head run last, on stage " + std::to_string(stages - 1);
          return std::nullopt;
        }
        continue;
      }
      if (next >= model.layers.size()) {
        error = where + " holds more layers than the model's " + std::to_string(model.layers.size());
        return std::nullopt;
      }
      const bool mtp = is_mtp(model, model.layers[next]);
      if ((c == 'm') != mtp) {
        error = where + " holds `" + std::string(1, c) + "` where the model's layer " + std::to_string(next) +
                " is of kind `" + model.kinds[static_cast<size_t>(model.layers[next])].name + "` (`" +
                (mtp ? "m" : "t") + "` in a layout)";
        return std::nullopt;
      }
      ++next, ++n;
    }
    counts.push_back(n);
  }
  if (next != model.layers.size()) {
    error = "the layout holds " + std::to_string(next) + " layers, the model " + std::to_string(model.layers.size());
    return std::nullopt;
  }
  return counts;
}

std::optional<std::vector<int32_t>> parse_torchtitan_modules(const std::vector<std::vector<std::string>>& stages,
                                                             const Model& model, std::string& error, int32_t& stage,
                                                             int32_t& item) {
  const auto S = static_cast<int32_t>(stages.size());
  const int32_t L = model.num_layers();
  std::vector<int32_t> counts(stages.size(), 0);
  int32_t next = 0;  // the next body layer expected
  stage = item = -1;
  for (int32_t s = 0; s < S; ++s) {
    stage = s;
    item = -1;
    bool head = false;  // `norm` or `output` seen on this stage: nothing after them
    bool norm = false, output = false;
    for (const std::string& name : stages[static_cast<size_t>(s)]) {
      ++item;
      if (name == "tok_embeddings") {
        if (!model.embedding)
          return error = "`tok_embeddings` names the embedding, and the model has none", std::nullopt;
        if (s != 0) return error = "`tok_embeddings` runs on the first stage only", std::nullopt;
        if (counts[0] > 0) return error = "`tok_embeddings` comes before the first layer", std::nullopt;
        continue;
      }
      if (name == "norm" || name == "output") {
        if (!model.head)
          return error = "`" + name + "` is part of the output head, and the model has none", std::nullopt;
        if (s != S - 1) return error = "`" + name + "` runs on the last stage only (the output head)", std::nullopt;
        if ((name == "norm" && (norm || output)) || (name == "output" && output))
          return error = "`" + name + "` is named twice, or after `output`", std::nullopt;
        (name == "norm" ? norm : output) = true;
        head = true;
        continue;
      }
      if (name.rfind("layers.", 0) != 0 || name.size() == 7 ||
          name.find_first_not_of("0123456789", 7) != std::string::npos || (name.size() > 8 && name[7] == '0'))
        return error = "`" + name +
                       "` is not a module of a Llama-style model: expected `tok_embeddings`, "
                       "`layers.N`, `norm` or `output`",
               std::nullopt;
      if (head) return error = "`" + name + "` comes after the output head", std::nullopt;
      const std::string digits = name.substr(7);
      if (digits.size() > 9 || std::stoll(digits) != next)
        return error = "`" + name + "` is out of order: the layers run in model order, and `layers." +
                       std::to_string(next) + "` comes next" +
                       (next >= L ? " (the model has " + std::to_string(L) + ")" : ""),
               std::nullopt;
      if (next >= L) return error = "`" + name + "` is past the model's " + std::to_string(L) + " layers", std::nullopt;
      ++next;
      ++counts[static_cast<size_t>(s)];
    }
  }
  stage = item = -1;
  if (next != L)
    return error = "the lists name " + std::to_string(next) + " of the model's " + std::to_string(L) +
                   " layers (`layers.0` .. `layers." + std::to_string(L - 1) + "`)",
           std::nullopt;
  return counts;
}

std::string torchtitan_modules(const Model& model, std::span<const int32_t> layers_per_stage) {
  std::string out = "[";
  int32_t next = 0;
  for (size_t s = 0; s < layers_per_stage.size(); ++s) {
    std::string part;
    auto add = [&](const std::string& name) { part += (part.empty() ? "\"" : ", \"") + name + "\""; };
    if (s == 0 && model.embedding) add("tok_embeddings");
    for (int32_t i = 0; i < layers_per_stage[s]; ++i) add("layers." + std::to_string(next++));
    if (s + 1 == layers_per_stage.size() && model.head) add("norm"), add("output");
    out += (s == 0 ? "[" : ", [") + part + "]";
  }
  return out + "]";
}

std::string megatron_layout(const Model& model, std::span<const int32_t> layers_per_stage) {
  std::vector<std::string> parts;
  size_t next = 0;
  const size_t S = layers_per_stage.size();
  for (size_t s = 0; s < S; ++s) {
    std::string part = s == 0 && model.embedding ? "E" : "";
    for (int32_t i = 0; i < layers_per_stage[s];) {
      const char c = is_mtp(model, model.layers[next]) ? 'm' : 't';
      int32_t run = 0;
      while (i < layers_per_stage[s] && (is_mtp(model, model.layers[next]) ? 'm' : 't') == c) ++run, ++i, ++next;
      part += c;
      if (run > 1) part += "*" + std::to_string(run);
    }
    if (s + 1 == S && model.head) part += "L";
    parts.push_back(std::move(part));
  }
  // Runs of equal stages (the last one aside, which has no `|` after it) as `(X|)*N`.
  std::string out;
  for (size_t s = 0; s < S;) {
    size_t e = s + 1;
    while (e + 1 < S && parts[e] == parts[s]) ++e;
    if (e - s > 1 && s + 1 < S) {
      out += "(" + parts[s] + "|)*" + std::to_string(e - s);
    } else {
      out += parts[s];
      if (s + 1 < S) out += "|";
      e = s + 1;
    }
    s = e;
  }
  return out;
}

}  // namespace schedc::ir
