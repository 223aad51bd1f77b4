#include "profile/profile.h"

namespace schedc::profile {

ir::Schedule probe_schedule(const ir::Problem& p) {
  ir::Schedule s;
  s.problem = p;
  s.ranks.assign(static_cast<size_t>(p.ranks), {});
  s.provenance = ir::Provenance::of("profile probe");
  const int32_t S = p.num_stages();
  const bool fused = p.backward == ir::BackwardMode::Fused;
  auto add = [&](ir::Action a) { s.ranks[ir::rank_of(p, a).index()].push_back(a); };
  for (int32_t mb = 0; mb < p.microbatches; ++mb) {
    for (int32_t st = 0; st < S; ++st) add(ir::F(mb, st));
    for (int32_t st = S - 1; st >= 0; --st) {
      if (fused) {
        add(ir::BW(mb, st));
        continue;
      }
      add(ir::B(mb, st));
      add(ir::W(mb, st));
    }
  }
  return s;
}

}  // namespace schedc::profile
