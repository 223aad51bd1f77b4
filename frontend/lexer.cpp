#include "frontend/lexer.h"

#include <cstdio>

#include "support/input.h"
#include "support/numbers.h"
#include "support/units.h"

namespace schedc::frontend {

std::string_view TokenBuffer::text(size_t i) const {
  const Token& t = tokens_[i];
  return std::string_view(sources_->text(file_)).substr(t.offset, t.length);
}

SourceLoc TokenBuffer::loc(size_t i) const { return sources_->loc_at(file_, tokens_[i].offset); }

void TokenBuffer::push(TokenKind kind, size_t offset, size_t length) {
  tokens_.push_back(Token{kind, static_cast<uint32_t>(offset), static_cast<uint32_t>(length)});
}

namespace {

// Larger files are refused before lexing, so that offsets fit in 32 bits with room to spare. The
// driver reads no more than this (support/input.h); a buffer added another way is checked here.
constexpr size_t kMaxFileBytes = kMaxInputBytes;

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_run_char(char c) { return is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '+'; }

// [+-]? (digits ('.' digits*)? | '.' digits) ([eE] [+-]? digits)?
bool has_number_shape(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i > start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  bool whole = digits();
  bool frac = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    frac = digits();
  }
  if (!whole && !frac) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

// The code point when `s` is exactly one well-formed UTF-8 sequence, else -1.
int32_t single_code_point(std::string_view s) {
  if (s.empty() || s.size() > 4) return -1;
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  size_t n = b(0) < 0x80 ? 1 : (b(0) & 0xE0) == 0xC0 ? 2 : (b(0) & 0xF0) == 0xE0 ? 3 : (b(0) & 0xF8) == 0xF0 ? 4 : 0;
  if (n != s.size()) return -1;
  int32_t cp = n == 1 ? b(0) : n == 2 ? (b(0) & 0x1F) : n == 3 ? (b(0) & 0x0F) : (b(0) & 0x07);
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  static constexpr int32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;  // overlong, surrogate
  return cp;
}

class Lexer {
 public:
  Lexer(const SourceManager& sources, int32_t file, Reporter& report)
      : text_(sources.text(file)), out_(sources, file), report_(report) {}

  TokenBuffer run() {
    if (text_.size() > kMaxFileBytes) {
      report_.error(DiagKind::TooLarge, SourceLoc{out_.file(), 0, 0},
                    "the file has " + std::to_string(text_.size()) + " bytes, more than the limit of " +
                        std::to_string(kMaxFileBytes));
      out_.push(TokenKind::End, 0, 0);
      return std::move(out_);
    }
    while (pos_ < text_.size()) {
      if (report_.full()) break;
      if (out_.size() >= kMaxTokens) {
        report_.error(DiagKind::TooLarge, loc(pos_),
                      "the file has more than " + std::to_string(kMaxTokens) + " tokens; stopped reading here");
        break;
      }
      next();
    }
    out_.push(TokenKind::End, std::min(pos_, text_.size()), 0);
    return std::move(out_);
  }

 private:
  SourceLoc loc(size_t offset) const { return out_.sources().loc_at(out_.file(), offset); }

  void next() {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
      return;
    }
    if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      return;
    }
    if (c == '\n' || c == ';') return single(TokenKind::Newline);
    if (c == '"') return string();
    if (is_run_char(c)) return run_token();
    char n = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
    switch (c) {
      case '=': return n == '=' ? pair(TokenKind::EqualEqual) : single(TokenKind::Equal);
      case '<': return n == '=' ? pair(TokenKind::LessEqual) : single(TokenKind::Less);
      case '>': return n == '=' ? pair(TokenKind::GreaterEqual) : single(TokenKind::Greater);
      case '{': return single(TokenKind::LBrace);
      case '}': return single(TokenKind::RBrace);
      case '[': return single(TokenKind::LBracket);
      case ']': return single(TokenKind::RBracket);
      case '(': return single(TokenKind::LParen);
      case ')': return single(TokenKind::RParen);
      case ':': return single(TokenKind::Colon);
      case ',': return single(TokenKind::Comma);
      default: return bad_chars();
    }
  }

  void single(TokenKind k) {
    out_.push(k, pos_, 1);
    ++pos_;
  }
  void pair(TokenKind k) {
    out_.push(k, pos_, 2);
    pos_ += 2;
  }

  // A maximal run of name/number characters, then classified: a number when it has a number's
  // shape, a word when it starts like a name (letters, digits, `_`: `1f1b` is a family name).
  void run_token() {
    size_t start = pos_;
    while (pos_ < text_.size() && is_run_char(text_[pos_])) ++pos_;
    std::string_view s = text_.substr(start, pos_ - start);
    if (has_number_shape(s)) {
      if (parse_number(s)) return out_.push(TokenKind::Number, start, s.size());
      report_.error(DiagKind::OutOfRange, loc(start), "number " + quote(s) + " is too large, expected a finite number");
      return out_.push(TokenKind::Error, start, s.size());
    }
    if (size_t at = unit_suffix_start(s); at != std::string_view::npos && has_number_shape(s.substr(0, at))) {
      std::string_view unit = s.substr(at);
      if (find_unit(unit)) return out_.push(TokenKind::Number, start, s.size());
      report_.error(DiagKind::BadUnit, loc(start + at),
                    "unknown unit " + quote(unit) + " in " + quote(s) + ", expected a time unit (" +
                        unit_names(Dimension::Time) + ") or a memory unit (" + unit_names(Dimension::Memory) + ")");
      return out_.push(TokenKind::Error, start, s.size());
    }
    if ((is_alpha(s[0]) || is_digit(s[0])) && s.find('+') == std::string_view::npos)
      return out_.push(TokenKind::Word, start, s.size());
    report_.error(DiagKind::Syntax, loc(start),
                  quote(s) + " is neither a number nor a name, expected e.g. `-0.5`, `1e3` or `zb-h1`");
    out_.push(TokenKind::Error, start, s.size());
  }

  void string() {
    size_t start = pos_++;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] != '\n') {
        char e = text_[pos_ + 1];
        if (e != '"' && e != '\\' && e != 'n' && e != 't')
          report_.error(DiagKind::Syntax, loc(pos_),
                        "unknown escape " + quote(text_.substr(pos_, 2)) +
                            " in a string, expected `\\\"`, `\\\\`, `\\n` or `\\t`");
        pos_ += 2;
        continue;
      }
      ++pos_;
    }
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      report_.error(DiagKind::UnterminatedString, loc(start), "string has no closing `\"` on its line");
      return out_.push(TokenKind::Error, start, pos_ - start);
    }
    ++pos_;
    out_.push(TokenKind::String, start, pos_ - start);
  }

  // One diagnostic for a whole run of characters that start no token (e.g. a UTF-8 sequence).
  void bad_chars() {
    size_t start = pos_;
    auto starts_token = [&](char c) {
      return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '#' || c == '"' || c == ';' || is_run_char(c) ||
             std::string_view("=<>{}[]():,").find(c) != std::string_view::npos;
    };
    while (pos_ < text_.size() && !starts_token(text_[pos_])) ++pos_;
    std::string_view s = text_.substr(start, pos_ - start);
    std::string what = s.size() == 1 ? "character " + quote(s) : "characters " + quote(s);
    if (int32_t cp = single_code_point(s); cp >= 0x80) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
      what = "character `" + std::string(s) + "` (" + hex + ")";
    }
    if (s == "!" && pos_ < text_.size() && text_[pos_] == '=')
      what += " (`!=` is not a comparison schedc has: use `==`, `<=`, `<`, `>=` or `>`)";
    report_.error(DiagKind::BadChar, loc(start), "unexpected " + what);
    out_.push(TokenKind::Error, start, s.size());
  }

  std::string_view text_;
  size_t pos_ = 0;
  TokenBuffer out_;
  Reporter& report_;
};

}  // namespace

TokenBuffer lex(const SourceManager& sources, int32_t file, Reporter& report) {
  return Lexer(sources, file, report).run();
}

std::string decode_string(std::string_view t) {
  if (t.size() >= 2) t = t.substr(1, t.size() - 2);
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '\\' || i + 1 >= t.size()) {
      out += t[i];
      continue;
    }
    char e = t[++i];
    out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
  }
  return out;
}

std::string quote(std::string_view text) {
  constexpr size_t kMaxShown = 40;
  std::string out = "`";
  size_t shown = 0;
  for (char ch : text) {
    if (shown == kMaxShown) {
      out += "...";
      break;
    }
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '`') {
      out += ch;
    } else {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
    ++shown;
  }
  return out + "`";
}

}  // namespace schedc::frontend
