#pragma once
// frontend::Reporter: the frontend's view of the diagnostics sink. It caps the number of errors
// (so that hostile input cannot flood the output or memory), keeps each error with its notes,
// and hands everything to the shared `Diagnostics` in source order once the frontend is done.

#include <cstddef>
#include <string>
#include <vector>

#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::frontend {

/// Errors after this many are dropped; the frontend then stops early.
inline constexpr size_t kMaxFrontendErrors = 50;

class Reporter {
 public:
  explicit Reporter(int32_t file, size_t max_errors = kMaxFrontendErrors) : file_(file), max_errors_(max_errors) {}

  /// Records an error; returns false (and drops it) once the cap is reached.
  bool error(DiagKind kind, SourceLoc loc, std::string message);
  /// A note attached to the last recorded error (dropped with it).
  void note(SourceLoc loc, std::string message);

  /// True once the cap is reached: the phases stop as soon as they see it.
  bool full() const { return error_count_ >= max_errors_; }
  size_t error_count() const { return error_count_; }
  int32_t file() const { return file_; }

  /// Moves every recorded diagnostic into `diags`, sorted by location (errors without a line
  /// last), each error followed by its notes; adds a note when the cap stopped the frontend.
  void flush(Diagnostics& diags);

 private:
  struct Group {
    Diagnostic error;
    std::vector<Diagnostic> notes;
  };
  int32_t file_;
  size_t max_errors_;
  size_t error_count_ = 0;
  bool dropped_ = false;
  bool last_dropped_ = false;
  std::vector<Group> groups_;
};

}  // namespace schedc::frontend
