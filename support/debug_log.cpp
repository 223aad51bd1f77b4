#include "support/debug_log.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <ostream>
#include <string>

namespace schedc {

void DebugLog::print(const char* format, ...) const {
  if (!out_) return;
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string line = "debug: ";
  if (n > 0) {
    size_t at = line.size();
    line.resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(line.data() + at, static_cast<size_t>(n) + 1, format, again);
    line.resize(at + static_cast<size_t>(n));
  }
  va_end(again);
  line += '\n';
  // One stream may be shared by every thread of a solve.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  out_->write(line.data(), static_cast<std::streamsize>(line.size()));
  out_->flush();
}

}  // namespace schedc
