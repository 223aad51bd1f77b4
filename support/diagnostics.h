#pragma once
// The diagnostics sink: every user-facing error of every phase goes through one `Diagnostics`
// object and is printed as `file:line:col: error: message [kind]`, the source line and a caret.

#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "support/source.h"

namespace schedc {

/// Named diagnostic kinds, from support/diag_kinds.def.
enum class DiagKind {
#define SCHEDC_DIAG(id, name, what) id,
#include "support/diag_kinds.def"
#undef SCHEDC_DIAG
};

/// The bracketed name of a kind, e.g. "unknown-key".
std::string_view diag_kind_name(DiagKind kind);
/// One line saying what a kind means (the `what` column of diag_kinds.def); no command prints
/// these yet.
std::string_view diag_kind_description(DiagKind kind);
/// Every kind, in table order.
const std::vector<DiagKind>& all_diag_kinds();

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  DiagKind kind = DiagKind::Syntax;  // unused for notes
  SourceLoc loc;
  std::string message;
};

/// Collects diagnostics in emission order; printed once a phase ends.
class Diagnostics {
 public:
  explicit Diagnostics(const SourceManager* sources = nullptr) : sources_(sources) {}

  void error(DiagKind kind, SourceLoc loc, std::string message);
  void warning(DiagKind kind, SourceLoc loc, std::string message);
  /// A note attached to the diagnostic before it.
  void note(SourceLoc loc, std::string message);

  bool has_errors() const { return error_count_ > 0; }
  size_t error_count() const { return error_count_; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  /// True when some error has this kind.
  bool has_error_of_kind(DiagKind kind) const;

  /// Prints every diagnostic; `program` prefixes location-less ones ("schedc: error: ...").
  void print(std::ostream& os, std::string_view program = "schedc") const;
  std::string str(std::string_view program = "schedc") const;

 private:
  const SourceManager* sources_;
  std::vector<Diagnostic> diags_;
  size_t error_count_ = 0;
};

/// Wraps a user-provided value for a message: `value` in backticks, cut to its first
/// kMaxShownValue bytes and `...` when longer (a hostile input's token can be megabytes).
std::string backtick(std::string_view value);
inline constexpr size_t kMaxShownValue = 120;

/// A diagnostic shows at most this many bytes of its source line: a window around the caret,
/// with `...` where the line was cut (a one-line JSON or CSV file can be hundreds of megabytes).
inline constexpr size_t kMaxShownColumns = 120;

/// The part of `line` a diagnostic shows for 1-based column `col`, and the caret's byte offset
/// in it.
struct SourceWindow {
  std::string text;
  size_t caret = 0;
};
SourceWindow source_window(std::string_view line, int32_t col);

}  // namespace schedc
