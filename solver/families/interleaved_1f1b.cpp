// Interleaved 1F1B (Narayanan et al., 2021) exactly as Megatron-Core orders it: a schedule table
// lists (microbatch, chunk) pairs, `group_size` microbatches per chunk before moving to the next
// chunk; virtual step k runs the forward of table[k] and, once rank r's
// 2(pp-1-r) + (vpp-1)*group_size warm-up forwards are done, the backward of table[k - warm-up]
// on the mirrored chunk. With group_size = pp this is PyTorch's ScheduleInterleaved1F1B when pp
// divides m. When Megatron's default (pp) would deadlock for this m, the default becomes the
// smallest divisor of m that is at least min(pp, m), which is PyTorch's choice whenever PyTorch
// accepts m.

#include <algorithm>
#include <utility>
#include <vector>

#include "ir/simulate.h"
#include "solver/families/common.h"

namespace schedc::solver::fam {

namespace {

// Megatron-Core's get_schedule_table: groups of g microbatches, each group through every chunk.
std::vector<std::pair<int32_t, int32_t>> schedule_table(int32_t m, int32_t v, int32_t g) {
  std::vector<std::pair<int32_t, int32_t>> table;  // (microbatch, chunk)
  table.reserve(static_cast<size_t>(m) * static_cast<size_t>(v));
  for (int32_t start = 0; start < m; start += g)
    for (int32_t chunk = 0; chunk < v; ++chunk)
      for (int32_t mb = start; mb < std::min(start + g, m); ++mb) table.emplace_back(mb, chunk);
  return table;
}

ir::Schedule build(const ir::Problem& p, int32_t g) {
  const int32_t m = p.microbatches, v = p.stages_per_rank, pp = p.ranks;
  const auto table = schedule_table(m, v, g);
  const int32_t total = m * v;
  OrderBuilder b(p);
  for (int32_t r = 0; r < pp; ++r) {
    auto fwd = [&](int32_t k) {
      auto [mb, chunk] = table[static_cast<size_t>(k)];
      return ir::F(mb, stage_on(p, 0, r, chunk));
    };
    auto bwd = [&](int32_t k) {
      auto [mb, chunk] = table[static_cast<size_t>(k)];
      return ir::BW(mb, stage_on(p, 0, r, v - 1 - chunk));
    };
    int64_t warm = int64_t{2} * (pp - 1 - r) + int64_t{v - 1} * g;
    int32_t warmup = static_cast<int32_t>(std::min<int64_t>(warm, total));
    for (int32_t k = 0; k < warmup; ++k) b.push(fwd(k));
    for (int32_t k = 0; k + warmup < total; ++k) {
      b.push(fwd(k + warmup));
      b.push(bwd(k));
    }
    for (int32_t k = total - warmup; k < total; ++k) b.push(bwd(k));
  }
  return b.take();
}

bool completes(const ir::Schedule& s) { return ir::simulate(s).stalls.empty(); }

}  // namespace

std::optional<ir::Schedule> generate_interleaved_1f1b(const FamilyContext& cx) {
  const ir::Problem& p = cx.problem;
  const int32_t m = p.microbatches, pp = p.ranks;
  if (!cx.only_params({"group_size"})) return std::nullopt;
  const ir::Param* given = cx.params.find("group_size");
  auto group = cx.int_param("group_size", std::min(pp, m), 1, m);
  if (!group) return std::nullopt;
  ir::Schedule s = build(p, *group);
  if (completes(s)) return s;
  // A last group shorter than the others, or groups smaller than pp, can make Megatron's order
  // deadlock (rank 0's warm-up waits on a forward that rank pp-1 runs only after a backward).
  // Groups that divide m and hold at least min(pp, m) microbatches never do.
  int32_t fallback = std::min(pp, m);
  while (m % fallback != 0) ++fallback;
  if (given)
    return cx.bad_param(given, "`group_size` " + backtick(std::to_string(*group)) + " of family " + backtick(cx.name) +
                                   " deadlocks with " + std::to_string(m) + " microbatches on " + std::to_string(pp) +
                                   " ranks; use a divisor of m of at least min(pp, m), such as " +
                                   backtick(std::to_string(fallback)));
  s = build(p, fallback);
  if (!completes(s))
    return cx.internal("the schedule table with group size " + std::to_string(fallback) + " deadlocks");
  return s;
}

}  // namespace schedc::solver::fam
