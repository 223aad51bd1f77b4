// Breadth-first looped schedule (Lamy-Poirier, 2022) as PyTorch's ScheduleLoopedBFS orders it:
// each rank runs every microbatch's forward through its first local stage, then its second, ...;
// then the backwards, last local stage first, microbatches in reverse. Peak activations: vpp * m.

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_looped_bfs(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t m = p.microbatches, v = p.stages_per_rank;
  OrderBuilder b(p);
  for (int32_t r = 0; r < p.ranks; ++r) {
    for (int32_t local = 0; local < v; ++local)
      for (int32_t mb = 0; mb < m; ++mb) b.push(ir::F(mb, stage_on(p, 0, r, local)));
    for (int32_t local = v - 1; local >= 0; --local)
      for (int32_t mb = m - 1; mb >= 0; --mb) b.push(ir::BW(mb, stage_on(p, 0, r, local)));
  }
  return b.take();
}

}  // namespace schedc::solver::fam
