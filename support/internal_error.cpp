#include "support/internal_error.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace schedc {
namespace {

// The last two components of `file` (`codegen/lower.cpp`): the build's absolute paths differ
// between checkouts and say nothing more.
std::string_view short_path(std::string_view file) {
  size_t last = file.rfind('/');
  if (last == std::string_view::npos || last == 0) return file;
  size_t before = file.rfind('/', last - 1);
  return before == std::string_view::npos ? file : file.substr(before + 1);
}

}  // namespace

void internal_error(const char* file, int line, std::string_view message) {
  std::string text = "schedc: internal error: ";
  text += message;
  text += " (at ";
  text += short_path(file);
  text += ':' + std::to_string(line) + "; a bug in schedc, please report it)\n";
  // Whatever stdout holds goes out first; then one write, so that threads do not interleave.
  std::fflush(stdout);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  // No destructors or atexit handlers: other threads (the local search's) may still run.
  std::_Exit(kInternalErrorExitCode);
}

}  // namespace schedc
