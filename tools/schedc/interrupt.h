#pragma once
// Ctrl-C during a solve (issue: limits that hold). The first SIGINT or SIGTERM ends the search as
// its time limit would: the best schedule found so far is written, with status `feasible` unless
// it was already proved. A second one ends schedc at once, removing the output file being written,
// so no partial file is left (outputs are written to a temporary file and renamed into place).

#include <atomic>
#include <string>

namespace schedc::driver {

/// Installs the handlers (once) and returns the flag the first signal sets.
const std::atomic<bool>* install_interrupt_handlers();
/// True once the first signal arrived.
bool interrupted();

/// While an output is being written to `tmp` (before its rename), a second signal removes it.
class PendingOutput {
 public:
  explicit PendingOutput(const std::string& tmp);
  PendingOutput(const PendingOutput&) = delete;
  PendingOutput& operator=(const PendingOutput&) = delete;
  ~PendingOutput();
};

}  // namespace schedc::driver
