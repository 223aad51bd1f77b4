#pragma once
// The solver's progress line (docs/solver.md): one updating line on a terminal, at least a line a
// second otherwise, also while a long phase (the greedy sweep, a Z3 check, the local search) runs
// and has nothing new to say. The search publishes what it knows; a timer thread repeats the latest
// state with the current elapsed time. It only writes to the stream, so no result depends on it.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

namespace schedc::solver {

/// What a progress line says: the best schedule (absent before the first one) and the bound.
struct ProgressState {
  std::optional<double> best;
  std::string found_by;
  std::optional<double> bound;  // absent until the lower bound is computed
  std::string unit;             // the problem's time unit, "" for plain numbers
};

class ProgressReporter {
 public:
  using Clock = std::chrono::steady_clock;

  /// Writes to `out` (nullptr: nothing, and no thread); `tty` makes it one updating line.
  /// `period` is the longest time without a line on a pipe (a second; tests may shorten it).
  ProgressReporter(std::ostream* out, bool tty, Clock::time_point start,
                   std::chrono::milliseconds period = std::chrono::milliseconds(1000));
  /// Stops the timer; the final line (if any) was written by publish(..., true).
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  /// A new state. Printed at once on a terminal or when `final` (the last line, ending a terminal's
  /// updating line with a newline), else when a period has passed since the last line.
  void publish(const ProgressState& state, bool final = false);

  /// The line for `state` at `seconds` (no newline), e.g. `solve: best 48 (z3), bound 47.5, gap
  /// 1.0%, 0.6 s`; before the first schedule `solve: no schedule yet, bound 47.5, 0.6 s`.
  static std::string format(const ProgressState& state, double seconds);

 private:
  void loop();
  void print_locked(bool final);
  double seconds(Clock::time_point t) const { return std::chrono::duration<double>(t - start_).count(); }

  std::ostream* out_;
  bool tty_;
  Clock::time_point start_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  ProgressState state_;
  Clock::time_point last_line_;
  bool printed_ = false;
  bool printed_best_ = false;
  bool finished_ = false;  // the final line is out: nothing more is printed
  bool stop_ = false;
  std::thread timer_;
};

}  // namespace schedc::solver
