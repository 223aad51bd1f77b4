#pragma once
// Steady-state decomposition (docs/design.md section 7): quality that holds as the microbatches grow. A
// schedule of the same problem with fewer microbatches, whose middle has reached its steady state,
// is cut on every rank into warm-up, one block and cool-down; repeating the block gives a schedule
// for as many microbatches as asked, which the local search then polishes.

#include <cstdint>
#include <optional>

#include "ir/schedule.h"

namespace schedc::solver {

/// `small` is a valid schedule of `big` with fewer microbatches (single direction, split or fused
/// backward, no overlapped units). Its orders are relabeled so that microbatches run in order on
/// every stage (which keeps it valid and no slower); then every rank is cut at the first place,
/// from the middle of its makespan on, where a block of consecutive actions holds each of its
/// (kind, stage) exactly `period` times. Repeating each rank's block (big.microbatches -
/// small.microbatches) / period more times, microbatches shifted by `period` each time, and
/// shifting the cool-down after them, gives an order of every action of `big`. nullopt when the
/// counts do not divide or a rank has no such block; the result is not verified (deadlocks and the
/// cap are the caller's to check).
std::optional<ir::Schedule> extend_periodic(const ir::Schedule& small, const ir::Problem& big, int32_t period);

/// A copy of `s` with microbatches relabeled in order on every stage: the k-th forward, the k-th
/// backward and the k-th W of a stage become microbatch k (split or fused; units kept by position).
ir::Schedule in_microbatch_order(const ir::Schedule& s);

}  // namespace schedc::solver
