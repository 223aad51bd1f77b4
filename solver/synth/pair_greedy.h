#pragma once
// A list scheduler that builds overlapped F&B units (DualPipe's idea, for every placement and
// direction): where the problem prices a unit below its members (`FB`), a free rank that has a
// forward and a backward ready starts them as one unit; otherwise a backward first, then a
// forward while the rank's in-flight limit and the cap allow, then a weight gradient. The local
// search refines what it builds; on its own the search does not find such orders (from the best
// schedule without units it stays far above dualpipe).

#include <optional>
#include <string>
#include <vector>

#include "ir/schedule.h"
#include "support/deadline.h"

namespace schedc::solver {

struct PairVariant {
  /// Forwards minus backwards a rank may hold before it runs a forward alone (units keep the
  /// count); negative: no limit. `inflight_slope` lowers it by that many per rank of depth.
  int32_t inflight = -1;
  int32_t inflight_slope = 0;
  /// Mixed problems: a backward that runs alone is a BW (else a B, its W later, filling gaps).
  bool fuse_lone = false;
  /// Mixed problems: a backward in a unit is a BW (else a B).
  bool pair_bw = true;
  /// Forwards: the one of the deepest stage first (else the oldest microbatch).
  bool deep_first = false;
  std::string name() const;
};

/// The variants worth trying on `p` (none when the problem declares no `FB`).
std::vector<PairVariant> pair_variants(const ir::Problem& p);

/// The schedule the rules build, with its units, or nullopt when it gets stuck under the cap or
/// the deadline passes. Not yet verified: the caller verifies it.
std::optional<ir::Schedule> pair_greedy(const ir::Problem& p, const PairVariant& v, const Deadline* deadline = nullptr);

}  // namespace schedc::solver
