#pragma once
// Helpers for the frontend tests: run the whole frontend on a string and look at what it said.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/lexer.h"
#include "frontend/parser.h"
#include "frontend/spec.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::frontend::test {

struct Result {
  std::optional<Spec> spec;
  std::vector<Diagnostic> diags;
  std::string text;  // as printed, file name "t.sched"

  size_t errors() const {
    size_t n = 0;
    for (const auto& d : diags) n += d.severity == Severity::Error;
    return n;
  }
  /// Kinds of the errors, in printed order.
  std::vector<DiagKind> kinds() const {
    std::vector<DiagKind> k;
    for (const auto& d : diags)
      if (d.severity == Severity::Error) k.push_back(d.kind);
    return k;
  }
  const Diagnostic& first() const { return diags.at(0); }
};

inline Result run(std::string_view source) {
  SourceManager sources;
  int32_t file = sources.add("t.sched", std::string(source));
  Diagnostics diags(&sources);
  Result r;
  r.spec = parse_spec(sources, file, diags);
  r.diags = diags.all();
  r.text = diags.str();
  return r;
}

/// The spec of a source that must be valid; fails the test with the diagnostics otherwise.
#define SPEC_OF(src)                                                                                                   \
  ([&] {                                                                                                               \
    auto r_ = ::schedc::frontend::test::run(src);                                                                      \
    INFO(r_.text);                                                                                                     \
    REQUIRE(r_.spec.has_value());                                                                                      \
    CHECK(r_.diags.empty());                                                                                           \
    return std::move(*r_.spec);                                                                                        \
  }())

/// Token kinds of `source` (End included) and the diagnostics of lexing it.
struct Lexed {
  std::vector<TokenKind> kinds;
  std::vector<std::string> texts;
  std::vector<Diagnostic> diags;
};

inline Lexed lex_text(std::string_view source) {
  SourceManager sources;
  int32_t file = sources.add("t.sched", std::string(source));
  Reporter report(file);
  TokenBuffer tokens = lex(sources, file, report);
  Diagnostics diags(&sources);
  report.flush(diags);
  Lexed out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    out.kinds.push_back(tokens.kind(i));
    out.texts.emplace_back(tokens.text(i));
  }
  out.diags = diags.all();
  return out;
}

/// A minimal valid head for specs under test.
inline constexpr std::string_view kHead = "ranks = 4\nmicrobatches = 8\n";

}  // namespace schedc::frontend::test
