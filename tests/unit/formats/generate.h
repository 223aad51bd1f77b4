#pragma once
// Valid schedules of any problem for the format tests, without the families: a greedy list
// scheduler in unit steps (backward first, then forward, then W), and optional overlapped units.

#include <string>

#include "ir/schedule.h"
#include "ir/simulate.h"

namespace schedc::test {

/// A problem from the few fields tests vary; the rest keep their defaults.
ir::Problem problem(int32_t pp, int32_t vpp, int32_t m, ir::PlacementKind placement = ir::PlacementKind::Looped,
                    ir::BackwardMode backward = ir::BackwardMode::Split, int32_t directions = 1);

/// A valid schedule of `p` (mixed: even microbatches fused, odd ones split). With `overlap`, every
/// adjacent forward/backward pair that keeps the schedule valid becomes an overlapped unit.
ir::Schedule greedy_schedule(const ir::Problem& p, bool overlap = false);

/// The simulated timeline of a valid schedule (fails the test when it does not complete).
ir::Timeline timeline(const ir::Schedule& s);

/// The text of a file under tests/data.
std::string read_data(const std::string& relative_path);

}  // namespace schedc::test
