// GPipe (Huang et al., 2019) as PyTorch's ScheduleGPipe runs it: every rank runs the forwards of
// all microbatches, then their backwards in the same microbatch order. Peak activations: m.

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_gpipe(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  OrderBuilder b(p);
  for (int32_t r = 0; r < p.ranks; ++r) {
    int32_t s = stage_on(p, 0, r, 0);
    for (int32_t mb = 0; mb < p.microbatches; ++mb) b.push(ir::F(mb, s));
    for (int32_t mb = 0; mb < p.microbatches; ++mb) b.push(ir::BW(mb, s));
  }
  return b.take();
}

}  // namespace schedc::solver::fam
