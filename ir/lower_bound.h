#pragma once
// A lower bound on the objective of every valid schedule of a problem, from the problem alone:
// dependency chains with comm latency, per-rank work (Jackson's preemptive one-machine bound with
// heads and tails), and the memory-coupled fill/drain bounds of the Zero Bubble paper's appendix B,
// generalised to per-stage costs, several stages per rank, both directions and any memory deltas.
// docs/solver.md derives each term.

#include <string>

#include "ir/problem.h"

namespace schedc::ir {

struct LowerBound {
  double value = 0;        // in the problem's time units, for its objective
  std::string reason;      // which term gave the value, e.g. "rank 0: fill and drain under the cap"
};

LowerBound lower_bound(const Problem& p);

}  // namespace schedc::ir
