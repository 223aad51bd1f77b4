#pragma once
// Formatting of actions and transfers, and the runtime's errors.

#include <stdexcept>
#include <string>

#include "schedrt/action.h"

namespace schedrt {

/// "F3.s1", as schedc prints actions.
std::string format(Action a);
/// "send F3.s0 -> r1 #3" / "recv B0.s1 <- r1 #0".
std::string format(const Transfer& t);

/// A failure on one rank (bad data, watchdog timeout, a stage's error). It stops every rank.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown on a rank whose work was stopped because another rank failed first.
class Aborted : public Error {
 public:
  using Error::Error;
};

}  // namespace schedrt
