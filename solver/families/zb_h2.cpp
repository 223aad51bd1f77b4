// ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): more forwards in the warm-up
// to fill the bubble before the first B, and W passes moved to wherever a rank would idle, which
// turns 1F1B's trapezoid into a parallelogram. Built by simulating the execution: a free rank runs
// a ready B first, else a ready F while its activations stay within (2pp-1) forwards' worth (the
// paper's (2p-1) M_B), else its oldest pending W. Bubble (pp-1)(F+B-2W) when F+B >= 2W.

#include <algorithm>
#include <vector>

#include "solver/families/common.h"

namespace schedc::solver::fam {

std::optional<ir::Schedule> generate_zb_h2(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  const int32_t m = p.microbatches;
  ListScheduler ls(p, cx.deadline);
  ls.queue_weights(true);
  std::vector<int64_t> limit(static_cast<size_t>(p.ranks));
  for (int32_t r = 0; r < p.ranks; ++r) {
    int32_t s = stage_on(p, 0, r, 0);
    std::vector<ir::Action> f, b;
    for (int32_t mb = 0; mb < m; ++mb) f.push_back(ir::F(mb, s)), b.push_back(ir::B(mb, s));
    ls.add_stream(r, std::move(f));
    ls.add_stream(r, std::move(b));
    int64_t per_f = std::max<int64_t>(ls.memory_delta(ir::F(0, s)), 0);
    limit[static_cast<size_t>(r)] = per_f * (2 * int64_t{p.num_stages()} - 1);
  }
  bool ok = ls.run(
      [&](int32_t r, const ListScheduler::Candidate& c, const ListScheduler::RankState& st) -> std::optional<int64_t> {
        int64_t after = st.memory + ls.memory_delta(c.action);
        bool fits = after <= limit[static_cast<size_t>(r)] || ls.memory_delta(c.action) <= 0;
        switch (c.action.kind) {
          case ir::ActionKind::B: return fits ? std::optional<int64_t>(0) : std::nullopt;
          case ir::ActionKind::F: return fits ? std::optional<int64_t>(1) : std::nullopt;
          default: return 2;
        }
      });
  if (!ok) return ls.expired() ? std::nullopt : cx.internal("the list scheduler could not complete the streams");
  return ls.take();
}

}  // namespace schedc::solver::fam
