// DualPipe (DeepSeek-V3 technical report, section 3.2) step by step as deepseek-ai/DualPipe's
// dualpipe.py orders it. Microbatches 0..m/2-1 flow from rank 0 to rank pp-1, the others from
// rank pp-1 to rank 0 (the mirrored placement), so every rank holds one stage of each direction.
// On the first half of the ranks phase 0 is direction 0; on the second half it is direction 1.
// The steps are those of DualPipeV with pp/2 "half ranks": rank r behaves as half-rank
// min(r, pp-1-r), and the two middle ranks run their first steady F and B apart.

#include <algorithm>
#include <cassert>

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_dualpipe(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t pp = p.ranks, m = p.microbatches;
  // The registry checked pp even and m >= 2 pp (DeepSeek's asserts).
  assert(pp % 2 == 0 && m >= 2 * pp);
  const int32_t half_ranks = pp / 2, half_mbs = m / 2;
  OrderBuilder out(p);
  for (int32_t r = 0; r < pp; ++r) {
    const bool second_half = r >= half_ranks;
    const int32_t h = std::min(r, pp - 1 - r);
    const bool middle = h == half_ranks - 1;
    PhaseSteps x(p, out, r, second_half ? 1 : 0, second_half ? 0 : 1);
    // Step 1: forwards of phase 0, more the farther the rank is from the middle (warm-up).
    for (int32_t i = 0; i < 2 * (half_ranks - h - 1); ++i) x.forward(0);
    // Step 2: forwards of phase 0 and phase 1, alternating.
    for (int32_t i = 0; i < h + 1; ++i) x.forward(0), x.forward(1);
    // Step 3: zero-bubble backward of phase 1, W, forward of phase 1.
    for (int32_t i = 0; i < half_ranks - h - 1; ++i) x.backward(1, true), x.weight(), x.forward(1);
    // Step 4 (main): F0 with B1 overlapped, F1 with B0 overlapped. The two middle ranks run their
    // first F0 and B1 apart, which shortens the bubble.
    for (int32_t i = 0; i < half_mbs - pp + h + 1; ++i) {
      if (i == 0 && middle) x.forward(0), x.backward(1, false);
      else x.overlapped(0, 1);
      x.overlapped(1, 0);
    }
    // Step 5: B1, then F1 with B0 overlapped (the last forwards).
    for (int32_t i = 0; i < half_ranks - h - 1; ++i) x.backward(1, false), x.overlapped(1, 0);
    // Step 6: B1 B0; the second half of these backwards is zero-bubble (W deferred).
    const int32_t step6 = h + 1;
    bool zb = false;
    for (int32_t i = 0; i < step6; ++i) {
      if (i == step6 / 2 && h % 2 == 1) zb = true;
      x.backward(1, zb);
      if (i == step6 / 2 && h % 2 == 0) zb = true;
      x.backward(0, zb);
    }
    // Step 7: W, then a zero-bubble B0.
    for (int32_t i = 0; i < half_ranks - h - 1; ++i) x.weight(), x.backward(0, true);
    // Step 8: the remaining W passes (cool-down).
    for (int32_t i = 0; i < h + 1; ++i) x.weight();
  }
  return out.take();
}

}  // namespace schedc::solver::fam
