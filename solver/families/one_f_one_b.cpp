// 1F1B (PipeDream-Flush; Megatron's non-interleaved schedule; PyTorch Schedule1F1B): rank r runs
// min(pp-1-r, m) warm-up forwards, then alternates one forward and one backward, then drains the
// remaining backwards. Rank r holds at most min(pp-r, m) activations.

#include <algorithm>

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_one_f_one_b(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t m = p.microbatches;
  OrderBuilder b(p);
  for (int32_t r = 0; r < p.ranks; ++r) {
    int32_t s = stage_on(p, 0, r, 0);
    int32_t warmup = std::min(p.num_stages() - 1 - s, m);
    int32_t f = 0, bw = 0;
    while (f < warmup) b.push(ir::F(f++, s));
    while (f < m) {
      b.push(ir::F(f++, s));
      b.push(ir::BW(bw++, s));
    }
    while (bw < m) b.push(ir::BW(bw++, s));
  }
  return b.take();
}

}  // namespace schedc::solver::fam
