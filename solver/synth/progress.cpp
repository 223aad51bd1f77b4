#include "solver/synth/progress.h"

#include <iomanip>
#include <sstream>

#include "solver/synth/synthesize.h"
#include "support/numbers.h"

namespace schedc::solver {

ProgressReporter::ProgressReporter(std::ostream* out, bool tty, Clock::time_point start,
                                   std::chrono::milliseconds period)
    : out_(out), tty_(tty), start_(start), period_(period), last_line_(start) {
  if (out_) timer_ = std::thread([this] { loop(); });
}

ProgressReporter::~ProgressReporter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (timer_.joinable()) timer_.join();
  // A search that ends without a final line (an infeasible cap) leaves no half line behind.
  if (tty_ && printed_ && !finished_) {
    *out_ << "\n";
    out_->flush();
  }
}

std::string ProgressReporter::format(const ProgressState& state, double seconds) {
  std::ostringstream line;
  std::string unit = state.unit.empty() ? "" : " " + state.unit;
  line << std::fixed;
  if (!state.best) {
    line << "solve: no schedule yet, ";
    if (state.bound) line << "bound " << format_number(*state.bound) << unit << ", ";
    line << std::setprecision(1) << seconds << " s";
    return line.str();
  }
  double bound = state.bound.value_or(0);
  double gap = relative_gap(*state.best, bound);
  line << "solve: best " << format_number(*state.best) << unit << " (" << state.found_by << "), bound "
       << format_number(bound) << unit << ", gap " << std::setprecision(1) << 100 * gap << "%, " << std::setprecision(1)
       << seconds << " s";
  return line.str();
}

void ProgressReporter::publish(const ProgressState& state, bool final) {
  if (!out_) return;
  std::lock_guard lock(mutex_);
  if (finished_) return;
  state_ = state;
  // On a pipe the first schedule is reported at once, then a line a period.
  bool first_best = state.best && !printed_best_;
  if (final || tty_ || first_best || Clock::now() - last_line_ >= period_) print_locked(final);
}

void ProgressReporter::print_locked(bool final) {
  Clock::time_point now = Clock::now();
  std::string line = format(state_, seconds(now));
  if (tty_) {
    *out_ << "\r" << line << "\x1b[K";
    if (final) *out_ << "\n";
  } else {
    *out_ << line << "\n";
  }
  out_->flush();
  last_line_ = now;
  printed_ = true;
  if (state_.best) printed_best_ = true;
  if (final) finished_ = true;
}

// Between the search's own lines: the latest state again, with the time, once a period has
// passed without a line. Before the first line is due nothing is printed, so a solve that ends
// within a period prints only its final line.
void ProgressReporter::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    Clock::time_point due = last_line_ + period_;
    if (wake_.wait_until(lock, due, [&] { return stop_; })) break;
    if (!finished_ && Clock::now() >= last_line_ + period_) print_locked(false);
  }
}

}  // namespace schedc::solver
