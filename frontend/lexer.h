#pragma once
// frontend::lex: `.sched` text -> tokens (docs/dsl.md, "Lexical structure"). Tokens refer to the
// source text by offset; the buffer is valid while the SourceManager holds the file unchanged.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/reporter.h"
#include "support/source.h"

namespace schedc::frontend {

enum class TokenKind : uint8_t {
  Word,          // name, keyword or action token: [A-Za-z0-9_][A-Za-z0-9_.-]* that is not a number
  Number,        // decimal number with optional sign, fraction and exponent
  String,        // "..." on one line; the text includes the quotes
  Newline,       // a line end or `;` (both end an entry)
  Equal,         // =
  EqualEqual,    // ==
  Less,          // <
  LessEqual,     // <=
  Greater,       // >
  GreaterEqual,  // >=
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  LParen,
  RParen,
  Colon,
  Comma,
  Error,  // text that is no token; already reported by the lexer
  End,    // end of file (always the last token)
};

struct Token {
  TokenKind kind = TokenKind::End;
  uint32_t offset = 0;
  uint32_t length = 0;
};

/// Upper limit on tokens in one file: beyond it the lexer reports `too-large` and stops.
inline constexpr size_t kMaxTokens = size_t{1} << 22;

/// The tokens of one file. Always ends with an End token.
class TokenBuffer {
 public:
  TokenBuffer(const SourceManager& sources, int32_t file) : sources_(&sources), file_(file) {}

  size_t size() const { return tokens_.size(); }
  const Token& operator[](size_t i) const { return tokens_[i]; }
  TokenKind kind(size_t i) const { return tokens_[i].kind; }
  std::string_view text(size_t i) const;
  SourceLoc loc(size_t i) const;
  int32_t file() const { return file_; }
  const SourceManager& sources() const { return *sources_; }

  void push(TokenKind kind, size_t offset, size_t length);

 private:
  const SourceManager* sources_;
  int32_t file_;
  std::vector<Token> tokens_;
};

/// Splits `file` into tokens. Characters that start no token, unterminated strings and numbers
/// out of range become Error tokens with a diagnostic; lexing always reaches the end (or stops
/// at the error or token limit) and the result always ends with End.
TokenBuffer lex(const SourceManager& sources, int32_t file, Reporter& report);

/// The characters of a String token without quotes, with `\"`, `\\`, `\n`, `\t` decoded.
std::string decode_string(std::string_view token_text);

/// A token or user text as a message shows it: in backticks, non-printable bytes as `\xNN`,
/// cut to a readable length.
std::string quote(std::string_view text);

}  // namespace schedc::frontend
