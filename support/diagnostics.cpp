#include "support/diagnostics.h"

#include <algorithm>
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

// Moves `at` back to the start of the UTF-8 character it is inside.
size_t char_start(std::string_view s, size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
  return at;
}

}  // namespace

SourceWindow source_window(std::string_view line, int32_t col) {
  size_t caret = col > 1 ? std::min(static_cast<size_t>(col - 1), line.size()) : 0;
  if (line.size() <= kMaxShownColumns) return {std::string(line), caret};
  // From the start of the line when the caret is in its first two thirds; else the caret a third
  // of the way in: what leads to the spot matters more than what follows.
  size_t begin = caret > kMaxShownColumns * 2 / 3 ? caret - kMaxShownColumns / 3 : 0;
  begin = std::min(begin, line.size() - kMaxShownColumns);
  size_t end = begin + kMaxShownColumns;
  begin = char_start(line, begin);
  end = char_start(line, end);
  SourceWindow w;
  if (begin > 0) w.text = "...";
  w.caret = caret - begin + w.text.size();
  w.text += line.substr(begin, end - begin);
  if (end < line.size()) w.text += "...";
  return w;
}

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
    SourceWindow w = source_window(line, d.loc.col);
    os << w.text << '\n';
    // Keep tabs so that the caret lines up under the column in any terminal.
    std::string caret;
    for (size_t i = 0; i < w.caret && i < w.text.size(); ++i) caret += w.text[i] == '\t' ? '\t' : ' ';
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
  if (value.size() <= kMaxShownValue) {
    s += value;
  } else {
    s += value.substr(0, char_start(value, kMaxShownValue));
    s += "...";
  }
  s += '`';
  return s;
}

}  // namespace schedc
