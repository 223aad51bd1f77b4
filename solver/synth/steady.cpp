#include "solver/synth/steady.h"

#include <algorithm>
#include <cstdlib>

#include "ir/simulate.h"

namespace schedc::solver {

ir::Schedule in_microbatch_order(const ir::Schedule& s) {
  ir::Schedule out = s;
  const int32_t S = s.problem.num_stages();
  // Per (kind, stage): how many of that kind ran on the stage so far, rank orders in any sequence
  // (each stage lives on one rank).
  std::vector<int32_t> seen(static_cast<size_t>(4 * S), 0);
  for (auto& order : out.ranks)
    for (ir::Action& a : order)
      a.mb = ir::MbId(seen[static_cast<size_t>(static_cast<int>(a.kind) * S + a.stage.value)]++);
  return out;
}

std::optional<ir::Schedule> extend_periodic(const ir::Schedule& small_in, const ir::Problem& big, int32_t period) {
  const ir::Problem& sp = small_in.problem;
  if (period <= 0 || big.microbatches <= sp.microbatches || (big.microbatches - sp.microbatches) % period != 0)
    return std::nullopt;
  if (sp.directions != 1 || sp.backward == ir::BackwardMode::Mixed || small_in.has_overlap()) return std::nullopt;
  const ir::Schedule small = in_microbatch_order(small_in);
  ir::SimResult sim = ir::simulate(small);
  if (!sim.timeline) return std::nullopt;
  const ir::Timeline& tl = *sim.timeline;
  const int64_t mid = ir::to_fixed(tl.metrics.makespan, tl.scale) / 2;
  const int32_t reps = (big.microbatches - sp.microbatches) / period;
  const int32_t S = sp.num_stages();
  auto slot = [&](const ir::Action& a) { return static_cast<size_t>(static_cast<int>(a.kind) * S + a.stage.value); };
  ir::Schedule out;
  out.problem = big;
  out.ranks.resize(small.ranks.size());
  for (size_t r = 0; r < small.ranks.size(); ++r) {
    const auto& order = small.ranks[r];
    std::vector<int32_t> total(static_cast<size_t>(4 * S), 0);
    for (const ir::Action& a : order) ++total[slot(a)];
    // A block [i, j): each (kind, stage) of the rank exactly `period` times; i as near the middle
    // of the makespan as such a block is (later first between equals).
    std::vector<size_t> tries(order.size());
    for (size_t i = 0; i < tries.size(); ++i) tries[i] = i;
    std::stable_sort(tries.begin(), tries.end(), [&](size_t a, size_t b) {
      int64_t da = tl.start[r][a] - mid, db = tl.start[r][b] - mid;
      return std::abs(da) != std::abs(db) ? std::abs(da) < std::abs(db) : da > db;
    });
    std::optional<std::pair<size_t, size_t>> block;
    for (size_t i : tries) {
      if (block) break;
      std::vector<int32_t> count(total.size(), 0);
      size_t kinds = 0, full = 0;
      for (int32_t t : total) kinds += t > 0;
      for (size_t j = i; j < order.size(); ++j) {
        int32_t c = ++count[slot(order[j])];
        if (c > period) break;
        if (c == period && ++full == kinds) {
          block = std::pair{i, j + 1};
          break;
        }
      }
    }
    if (!block) return std::nullopt;
    auto [i, j] = *block;
    auto& dst = out.ranks[r];
    dst.assign(order.begin(), order.begin() + static_cast<long>(i));
    for (int32_t k = 0; k <= reps; ++k)
      for (size_t x = i; x < j; ++x) {
        ir::Action a = order[x];
        a.mb = ir::MbId(a.mb.value + k * period);
        dst.push_back(a);
      }
    for (size_t x = j; x < order.size(); ++x) {
      ir::Action a = order[x];
      a.mb = ir::MbId(a.mb.value + reps * period);
      dst.push_back(a);
    }
  }
  return out;
}

}  // namespace schedc::solver
