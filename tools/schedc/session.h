#pragma once
// One run of schedc: the files it read, the diagnostics about them, the exit code they call for,
// and writing an output atomically. Every phase and command works through a Session.

#include <cstdint>
#include <string>
#include <vector>

#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::driver {

/// Exit codes (docs/design.md section 5).
enum ExitCode : int { kOk = 0, kInputError = 1, kBadCommandLine = 2, kInternalError = 3 };

/// The exit code the diagnostics call for: kInternalError when one is `internal`, else
/// kBadCommandLine when one is `bad-flag`, else kInputError when there is an error, else kOk.
int exit_code(const Diagnostics& diags);

/// One run of the compiler: the source files and the diagnostics about them.
struct Session {
  SourceManager sources;
  Diagnostics diags{&sources};

  /// Prints the diagnostics to stderr and returns the exit code they call for (exit_code).
  int finish();
  /// After a step that failed: finish(), but never kOk (a failure with no error reported is still
  /// no success).
  int fail();
  /// Prints the diagnostics and returns `code`: for a status no diagnostic states (a child
  /// process's exit status).
  int finish(int code);
  /// Reads a file into `sources`; reports `io` and returns -1 when it cannot be read.
  int32_t read_file(const std::string& path);
  /// Files read that the output may replace (warm starts: the answer is never worse than them, so
  /// `--warm-start best.json -o best.json` improves a file in place); every other input is kept.
  std::vector<int32_t> replaceable;
};

/// Refuses `-o ""` as a bad command line, before any work is done: an empty path names no file,
/// and standard output is `-o -` (or no -o). False after reporting.
bool check_output_path(Session& s, const std::string& path);

/// Writes `content` to `path` atomically (temporary file + rename), or to stdout when `path` is
/// "-". Reports `io` on failure.
bool write_output(Session& s, const std::string& path, const std::string& content);

/// write_output, then the exit code: finish(), or fail() when the output could not be written.
int finish_with_output(Session& s, const std::string& path, const std::string& content);

}  // namespace schedc::driver
