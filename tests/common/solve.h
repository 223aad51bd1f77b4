#pragma once
// Solver options the unit tests share: a deterministic solve on one thread (Z3 resource limits
// instead of wall time), so a case gives the same result on every machine.

#include "solver/synth/synthesize.h"

namespace schedc::test {

inline solver::SolveOptions deterministic(double seconds) {
  solver::SolveOptions o;
  o.time_limit_s = seconds;
  o.deterministic = true;
  o.threads = 1;
  return o;
}

}  // namespace schedc::test
