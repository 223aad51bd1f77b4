#pragma once
// Ctrl-C during a solve (issue: limits that hold). The first SIGINT or SIGTERM ends the search as
// its time limit would: the best schedule found so far is written, with status `feasible` unless
// it was already proved. A second one ends schedc at once, removing the output file being written,
// so no partial file is left (outputs are written to a temporary file and renamed into place).
//
// Once schedc has started a child process (a compiler, an executor, mpiexec; issue: processes and
// files), a signal stops schedc instead: the first is forwarded to the children's process groups
// and schedc ends by that signal after cleaning up; a second kills the groups and schedc at once.

#include <sys/types.h>

#include <atomic>
#include <string>

namespace schedc::driver {

/// Installs the handlers (once) and returns the flag the first signal sets.
const std::atomic<bool>* install_interrupt_handlers();
/// True once the first signal arrived.
bool interrupted();

/// From now on a signal stops schedc and its children (see above); installs the handlers.
void enter_child_phase();
/// A running child's process group (its leader's pid), to forward signals to; at most 64 at once.
void add_child_group(pid_t group);
void remove_child_group(pid_t group);
/// The signal that asked schedc to stop while it had children (0 if none).
int stop_signal();
/// Ends schedc by stop_signal(), if there was one (called by main once everything is cleaned up).
void end_if_stopped();

/// While an output is being written to `tmp` (before its rename), a second signal removes it.
class PendingOutput {
 public:
  explicit PendingOutput(const std::string& tmp);
  PendingOutput(const PendingOutput&) = delete;
  PendingOutput& operator=(const PendingOutput&) = delete;
  ~PendingOutput();
};

}  // namespace schedc::driver
