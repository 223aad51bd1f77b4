// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", section 6) as PyTorch's
// ScheduleZBVZeroBubble orders it. Each rank holds stage r (chunk 0) and stage 2pp-1-r (chunk 1)
// of the V; it runs 2(pp-r)-1 chunk-0 forwards, r pairs of chunk-1/chunk-0 forwards, pp-r chunk-1
// F, B, W triples, then the steady F0 B0 W0 F1 B1 W1 pattern, and a cool-down that defers W passes.
// Every rank holds at most 2pp chunk activations (pp M_B); with F = B = W no rank idles inside its
// span. The pattern is built for max(m, 2pp-1) microbatches and the extra ones dropped, as PyTorch
// does.

#include <algorithm>

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_zb_v(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t m = p.microbatches, pp = p.ranks;
  const int32_t n = std::max(2 * pp - 1, m);
  OrderBuilder b(p);
  for (int32_t r = 0; r < pp; ++r) {
    const int32_t s0 = stage_on(p, 0, r, 0), s1 = stage_on(p, 0, r, 1);
    int32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    auto push = [&](ir::Action a) {
      if (a.mb.value < m) b.push(a);
    };
    for (int32_t i = 0; i < 2 * (pp - r) - 1; ++i) push(ir::F(f0++, s0));
    for (int32_t i = 0; i < r; ++i) {
      push(ir::F(f1++, s1));
      push(ir::F(f0++, s0));
    }
    for (int32_t i = 0; i < pp - r; ++i) {
      push(ir::F(f1++, s1));
      push(ir::B(b1, s1));
      push(ir::W(b1++, s1));
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n) push(ir::F(f0++, s0));
      push(ir::B(b0, s0));
      push(ir::W(b0++, s0));
      push(ir::F(f1++, s1));
      push(ir::B(b1, s1));
      push(ir::W(b1++, s1));
    }
    int32_t w0 = b0, w1 = b1;
    for (int32_t i = 0; i < r; ++i) {
      push(ir::B(b0++, s0));
      push(ir::B(b1++, s1));
    }
    for (int32_t i = 0; i < pp - r; ++i) {
      push(ir::B(b0++, s0));
      push(ir::W(w0++, s0));
    }
    while (w1 < b1) push(ir::W(w1++, s1));
    while (w0 < b0) push(ir::W(w0++, s0));
  }
  return b.take();
}

}  // namespace schedc::solver::fam
