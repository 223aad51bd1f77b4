// Chimera (Li and Hoefler, SC'21): two pipelines over the same ranks in opposite directions.
// Microbatches 0..m/2-1 run down (stage s on rank s), the others up (stage s on rank pp-1-s), so
// every rank holds one stage of each; each direction follows its own 1F1B order, and each rank
// interleaves the two orders by simulating the execution: when free, it runs whichever of the two
// next actions is ready first; when both are, the one of the earlier microbatch (counted within
// its direction), then the backward. With F = B+W this meets the paper's bubble ratio
// (pp-2)/(2m+pp-2) at m = pp, and keeps a bubble of (pp-2)/2 (F+B+W) for larger m.
//
// With k directions (the paper's section on more than two pipelines), the pipelines come in
// mirrored pairs, pair j rotated by j*pp/ceil(k/2) ranks (ir::Problem::direction_rank); every rank
// holds one stage of each of the k pipelines, m/k microbatches each (or the stated counts), and
// merges the k 1F1B orders by the same rule.

#include <algorithm>
#include <vector>

#include "solver/families/common.h"

namespace schedc::solver::fam {
namespace {

// The 1F1B order of one stage of one direction.
std::vector<ir::Action> one_f_one_b(const ir::Problem& p, int32_t dir, int32_t stage) {
  const int32_t n = p.microbatches_of(dir);
  const int32_t warmup = std::min(p.num_stages() - 1 - stage, n);
  std::vector<ir::Action> out;
  int32_t f = 0, b = 0;
  while (f < warmup) out.push_back(ir::F(mb_of(p, dir, f++), stage));
  while (f < n) {
    out.push_back(ir::F(mb_of(p, dir, f++), stage));
    out.push_back(ir::BW(mb_of(p, dir, b++), stage));
  }
  while (b < n) out.push_back(ir::BW(mb_of(p, dir, b++), stage));
  return out;
}

}  // namespace

std::optional<ir::Schedule> generate_chimera(const FamilyContext& cx) {
  if (!cx.only_params({})) return std::nullopt;
  const ir::Problem& p = cx.problem;
  ListScheduler ls(p, cx.deadline);
  for (int32_t r = 0; r < p.ranks; ++r)
    for (int32_t dir = 0; dir < p.num_directions(); ++dir)
      ls.add_stream(r, one_f_one_b(p, dir, stage_on(p, dir, r, 0)));
  // Among ready actions: the earlier microbatch of its direction first, then a backward first.
  bool ok = ls.run([&p](int32_t, const ListScheduler::Candidate& c, const ListScheduler::RankState&) {
    int64_t k = c.action.mb.value - p.first_microbatch(p.direction_of(c.action.mb));
    return std::optional<int64_t>(2 * k + (c.action.kind == ir::ActionKind::F ? 1 : 0));
  });
  if (!ok) return ls.expired() ? std::nullopt : cx.internal("the pipelines could not be merged");
  return ls.take();
}

}  // namespace schedc::solver::fam
