// DualPipeV (DeepSeek's "cut-in-half" DualPipe, after Sea AI Lab) step by step as
// deepseek-ai/DualPipe's dualpipev.py and PyTorch's ScheduleDualPipeV order it. Rank r holds
// stage r (phase 0) and stage 2pp-1-r (phase 1) of the V. Microbatches enter each stage in
// order; a backward runs as B with its W queued (zero bubble, FIFO) or as a fused BW; the steady
// phase pairs a forward of one phase with a fused backward of the other as an overlapped F&B unit.

#include <cassert>

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_dualpipev(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t pp = p.ranks, m = p.microbatches;
  assert(m >= 2 * pp && "the registry checks m >= 2 pp (DeepSeek's assert)");
  OrderBuilder out(p);
  for (int32_t r = 0; r < pp; ++r) {
    PhaseSteps x(p, out, r, 0, 0);
    const bool last = r == pp - 1;
    // Step 1: forwards of phase 0.
    for (int32_t i = 0; i < 2 * (pp - r - 1); ++i) x.forward(0);
    // Step 2: forwards of phase 0 and phase 1.
    for (int32_t i = 0; i < r + 1; ++i) x.forward(0), x.forward(1);
    // Step 3: zero-bubble backward of phase 1, W, forward of phase 1.
    for (int32_t i = 0; i < pp - r - 1; ++i) x.backward(1, true), x.weight(), x.forward(1);
    // Step 4 (main): F0 with B1 overlapped, F1 with B0 overlapped. The last rank runs its first
    // F0 and B1 apart, which shortens the bubble.
    for (int32_t i = 0; i < m - 2 * pp + r + 1; ++i) {
      if (i == 0 && last) x.forward(0), x.backward(1, false);
      else x.overlapped(0, 1);
      x.overlapped(1, 0);
    }
    // Step 5: B1, then F1 with B0 overlapped.
    for (int32_t i = 0; i < pp - r - 1; ++i) x.backward(1, false), x.overlapped(1, 0);
    // Step 6: B1 B0; the second half of these backwards is zero-bubble.
    const int32_t step6 = r + 1;
    bool zb = false;
    for (int32_t i = 0; i < step6; ++i) {
      if (i == step6 / 2 && r % 2 == 1) zb = true;
      x.backward(1, zb);
      if (i == step6 / 2 && r % 2 == 0) zb = true;
      x.backward(0, zb);
    }
    // Step 7: W, then a zero-bubble B0.
    for (int32_t i = 0; i < pp - r - 1; ++i) x.weight(), x.backward(0, true);
    // Step 8: the remaining W passes.
    for (int32_t i = 0; i < r + 1; ++i) x.weight();
  }
  return out.take();
}

}  // namespace schedc::solver::fam
