// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): 1F1B with the backward split
// into B (input gradient) and W (weight gradient). Rank r runs pp-1-r warm-up forwards like 1F1B,
// then F, B pairs; the W of microbatch j runs right after the B of microbatch j+r, so that the r
// W passes still pending at the end fill the cool-down. Peak memory equals 1F1B's (pp M_B on rank
// 0 in the paper's model) and the bubble shrinks to (pp-1)(F+B-W). This is PyTorch's
// ScheduleInterleavedZeroBubble (ZB1P) with one stage per rank.

#include <algorithm>

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_zb_h1(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t m = p.microbatches;
  OrderBuilder b(p);
  for (int32_t r = 0; r < p.ranks; ++r) {
    const int32_t s = stage_on(p, 0, r, 0);
    const int32_t warmup = std::min(p.num_stages() - 1 - s, m);
    const int32_t deferred = s;  // W passes still pending at the end: r on rank r
    int32_t f = 0, w = 0;
    while (f < warmup) b.push(ir::F(f++, s));
    for (int32_t j = 0; j < m; ++j) {
      if (f < m) b.push(ir::F(f++, s));
      b.push(ir::B(j, s));
      if (j >= deferred) b.push(ir::W(w++, s));
    }
    while (w < m) b.push(ir::W(w++, s));
  }
  return b.take();
}

}  // namespace schedc::solver::fam
