#pragma once
// Fitting a schedule's orders under the problem's caps: a hand-designed order that needs a little
// more memory than the cap (dualpipe at 17 microbatches' activations against a cap of 16) keeps
// its structure, with the actions that do not fit yet moved just after those that free their room.

#include <optional>

#include "ir/schedule.h"
#include "support/deadline.h"

namespace schedc::solver {

/// Each rank's order of `s` that goes over the rank's cap of `p` is walked again: an action runs
/// when it is its microbatch's next on the rank and the rank stays safe after it (the banker's
/// rule of GreedyVariant::banker: the microbatches started on the rank, in the order they started,
/// can each finish in the free memory plus what the ones before it give back), else it waits, and
/// the waiting ones, oldest first, go as soon as they may. What frees memory never waits on the
/// cap, so the walk places everything whenever each microbatch fits on its own with balanced
/// memory. Orders that meet the cap are kept. A microbatch's actions on a rank keep their order,
/// but across ranks the new orders can wait on each other in a cycle, which the caller's
/// verification rejects. s's overlapped units are dropped (their pairs run one after the other:
/// valid, though no longer overlapped). nullopt when some rank's waiting actions never fit, or
/// when `p` has no cap, or the deadline passes. The result's problem is `p`.
std::optional<ir::Schedule> defer_to_cap(const ir::Schedule& s, const ir::Problem& p,
                                         const Deadline* deadline = nullptr);

}  // namespace schedc::solver
