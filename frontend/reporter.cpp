#include "frontend/reporter.h"

#include <algorithm>
#include <cstdint>

namespace schedc::frontend {

bool Reporter::error(DiagKind kind, SourceLoc loc, std::string message) {
  if (full()) {
    dropped_ = true;
    last_dropped_ = true;
    return false;
  }
  ++error_count_;
  last_dropped_ = false;
  groups_.push_back({Diagnostic{Severity::Error, kind, loc, std::move(message)}, {}});
  return true;
}

void Reporter::note(SourceLoc loc, std::string message) {
  if (last_dropped_ || groups_.empty()) return;
  groups_.back().notes.push_back(Diagnostic{Severity::Note, DiagKind::Syntax, loc, std::move(message)});
}

void Reporter::flush(Diagnostics& diags) {
  // Phases find errors in their own order (lexer, parser, then sema by key); users read files
  // top to bottom, so print in source order. Stable: ties keep the order they were found in.
  auto key = [](const Group& g) {
    const SourceLoc& l = g.error.loc;
    return std::pair(l.has_line() ? l.line : INT32_MAX, l.has_line() ? l.col : INT32_MAX);
  };
  std::stable_sort(groups_.begin(), groups_.end(), [&](const Group& a, const Group& b) { return key(a) < key(b); });
  for (Group& g : groups_) {
    diags.error(g.error.kind, g.error.loc, std::move(g.error.message));
    for (Diagnostic& n : g.notes) diags.note(n.loc, std::move(n.message));
  }
  if (dropped_ || full())
    diags.note(SourceLoc{file_, 0, 0},
               "too many errors, stopped after " + std::to_string(max_errors_) + "; fix these and run again");
  groups_.clear();
  error_count_ = 0;
  dropped_ = last_dropped_ = false;
}

}  // namespace schedc::frontend
