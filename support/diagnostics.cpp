#include "support/diagnostics.h"

#include <array>
#include <ostream>
#include <sstream>

namespace schedc {
namespace {

struct KindInfo {
  std::string_view name;
  std::string_view what;
};

constexpr std::array kKinds = {
#define SCHEDC_DIAG(id, name, what) KindInfo{name, what},
#include "support/diag_kinds.def"
#undef SCHEDC_DIAG
};

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

}  // namespace

std::string_view diag_kind_name(DiagKind kind) { return kKinds[static_cast<size_t>(kind)].name; }
std::string_view diag_kind_description(DiagKind kind) { return kKinds[static_cast<size_t>(kind)].what; }

const std::vector<DiagKind>& all_diag_kinds() {
  static const std::vector<DiagKind> kinds = [] {
    std::vector<DiagKind> v;
    for (size_t i = 0; i < kKinds.size(); ++i) v.push_back(static_cast<DiagKind>(i));
    return v;
  }();
  return kinds;
}

void Diagnostics::error(DiagKind kind, SourceLoc loc, std::string message) {
  diags_.push_back({Severity::Error, kind, loc, std::move(message)});
  ++error_count_;
}

void Diagnostics::warning(DiagKind kind, SourceLoc loc, std::string message) {
  diags_.push_back({Severity::Warning, kind, loc, std::move(message)});
}

void Diagnostics::note(SourceLoc loc, std::string message) {
  diags_.push_back({Severity::Note, DiagKind::Syntax, loc, std::move(message)});
}

bool Diagnostics::has_error_of_kind(DiagKind kind) const {
  for (const Diagnostic& d : diags_)
    if (d.severity == Severity::Error && d.kind == kind) return true;
  return false;
}

void Diagnostics::print(std::ostream& os, std::string_view program) const {
  for (const Diagnostic& d : diags_) {
    if (sources_ && d.loc.has_file()) {
      os << sources_->path(d.loc.file) << ':';
      if (d.loc.line > 0) os << d.loc.line << ':' << d.loc.col << ':';
    } else {
      os << program << ':';
    }
    os << ' ' << severity_name(d.severity) << ": " << d.message;
    if (d.severity != Severity::Note) os << " [" << diag_kind_name(d.kind) << ']';
    os << '\n';
    if (!sources_ || !d.loc.has_line()) continue;
    std::string_view line = sources_->line_text(d.loc.file, d.loc.line);
    if (line.empty()) continue;
    os << line << '\n';
    // Keep tabs so that the caret lines up under the column in any terminal.
    std::string caret;
    for (int32_t i = 1; i < d.loc.col && static_cast<size_t>(i - 1) < line.size(); ++i)
      caret += line[static_cast<size_t>(i - 1)] == '\t' ? '\t' : ' ';
    os << caret << "^\n";
  }
}

std::string Diagnostics::str(std::string_view program) const {
  std::ostringstream os;
  print(os, program);
  return os.str();
}

std::string backtick(std::string_view value) {
  std::string s = "`";
  s += value;
  s += '`';
  return s;
}

}  // namespace schedc
