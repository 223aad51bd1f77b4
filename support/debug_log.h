#pragma once
// The debug logger (docs/style.md: "debugging output goes through one logger behind a flag"): lines
// for developers, such as what the solver tries and when, printed only when a command's --debug
// asks for them. Off by default; results never depend on it.

#include <iosfwd>

namespace schedc {

class DebugLog {
 public:
  /// Off: print() does nothing.
  DebugLog() = default;
  /// Prints to `out` (nullptr: off).
  explicit DebugLog(std::ostream* out) : out_(out) {}

  bool enabled() const { return out_ != nullptr; }
  /// Writes `debug: ` and the printf-formatted text as one line (lines of threads do not mix).
  void print(const char* format, ...) const __attribute__((format(printf, 2, 3)));

 private:
  std::ostream* out_ = nullptr;
};

}  // namespace schedc
