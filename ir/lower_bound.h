#pragma once
// A lower bound on the objective of every valid schedule of a problem, from the problem alone:
// dependency chains with comm latency, per-rank work (Jackson's preemptive one-machine bound with
// heads and tails), the memory-coupled fill/drain bounds of the Zero Bubble paper's appendix B,
// generalised to per-stage costs, several stages per rank, both directions and any memory deltas,
// and the memory throughput a rank's cap allows. Overlapped F&B units are accounted for (what any
// unit can save is taken off its members). docs/solver.md section 1 derives each term.

#include <string>
#include <vector>

#include "ir/problem.h"

namespace schedc::ir {

struct LowerBound {
  double value = 0;    // in the problem's time units, for its objective
  std::string reason;  // which term gave the value, e.g. "rank 0: memory throughput under the cap"
};

/// Never above the objective of any valid schedule of `p` (overlapped units, mixed backward, caps).
LowerBound lower_bound(const Problem& p);

/// Every term lower_bound(p) weighed, in the order it weighed them (the largest is its value), so
/// that tests can hold each term to the true optimum, not only the one that wins.
std::vector<LowerBound> lower_bound_terms(const Problem& p);

}  // namespace schedc::ir
