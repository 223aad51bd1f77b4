#include <doctest/doctest.h>

#include "tests/unit/frontend/test_util.h"

using namespace schedc;
using namespace schedc::frontend;
using schedc::frontend::test::lex_text;
using K = TokenKind;

TEST_CASE("lexer: words, numbers and punctuation") {
  auto l = lex_text("ranks = 4 # comment = [ {\ncost { F = [1, -2.5e-1] }");
  std::vector<K> want = {K::Word,     K::Equal,  K::Number, K::Newline, K::Word,     K::LBrace, K::Word, K::Equal,
                         K::LBracket, K::Number, K::Comma,  K::Number,  K::RBracket, K::RBrace, K::End};
  CHECK(l.kinds == want);
  CHECK(l.texts[11] == "-2.5e-1");
  CHECK(l.diags.empty());
}

TEST_CASE("lexer: every number form is a number") {
  for (const char* n : {"0", "42", "-3", "+7", "1.5", "-0.5", ".5", "5.", "1e3", "1E+3", "2.5e-4", "-1e-9"}) {
    auto l = lex_text(n);
    INFO(n);
    REQUIRE(l.kinds.size() == 2);
    CHECK(l.kinds[0] == K::Number);
    CHECK(l.texts[0] == n);
  }
}

TEST_CASE("lexer: family names, action tokens and dashed words are words") {
  for (const char* w : {"1f1b", "interleaved-1f1b", "zb-h1", "v-half", "F0.s1", "BW12.s3", "max-span", "max_rank_span",
                        "_x", "0x10", "4-"}) {
    auto l = lex_text(w);
    INFO(w);
    REQUIRE(l.kinds.size() == 2);
    CHECK(l.kinds[0] == K::Word);
    CHECK(l.diags.empty());
  }
}

TEST_CASE("lexer: comparisons, newlines and semicolons") {
  auto l = lex_text("a == 1; b <= 2\r\nc < 3 >= > :()");
  std::vector<K> want = {K::Word,    K::EqualEqual, K::Number, K::Newline, K::Word,   K::LessEqual,
                         K::Number,  K::Newline,    K::Word,   K::Less,    K::Number, K::GreaterEqual,
                         K::Greater, K::Colon,      K::LParen, K::RParen,  K::End};
  CHECK(l.kinds == want);
}

TEST_CASE("lexer: strings decode their escapes") {
  auto l = lex_text(R"(path = "a \"b\" \\ c\td")");
  REQUIRE(l.kinds[2] == K::String);
  CHECK(decode_string(l.texts[2]) == "a \"b\" \\ c\td");
  CHECK(l.diags.empty());
}

TEST_CASE("lexer: an unterminated string is one error and lexing goes on") {
  auto l = lex_text("x = \"abc\ny = 2");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].kind == DiagKind::UnterminatedString);
  CHECK(l.diags[0].loc.line == 1);
  CHECK(l.diags[0].loc.col == 5);
  CHECK(l.kinds[2] == K::Error);
  CHECK(l.kinds[3] == K::Newline);
  CHECK(l.kinds[4] == K::Word);
}

TEST_CASE("lexer: an unknown escape is reported") {
  auto l = lex_text(R"(x = "a\qb")");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].kind == DiagKind::Syntax);
  CHECK(l.diags[0].message.find("unknown escape `\\q`") != std::string::npos);
}

TEST_CASE("lexer: a run of bad bytes is one bad-char error, shown as hex") {
  std::string src = "ranks = 4 \xC3\xA9\xFF\x01 x";
  src += '\0';
  src += " y";
  auto l = lex_text(src);
  REQUIRE(l.diags.size() == 2);
  CHECK(l.diags[0].kind == DiagKind::BadChar);
  CHECK(l.diags[0].message == "unexpected characters `\\xC3\\xA9\\xFF\\x01`");
  CHECK(l.diags[1].message == "unexpected character `\\x00`");
  CHECK(l.kinds[3] == K::Error);
  CHECK(l.kinds[4] == K::Word);
}

TEST_CASE("lexer: `!=` gets a hint") {
  auto l = lex_text("makespan != 3");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].kind == DiagKind::BadChar);
  CHECK(l.diags[0].message.find("`!=` is not a comparison") != std::string::npos);
}

TEST_CASE("lexer: a number too large for a double is out of range") {
  auto l = lex_text("ranks = 1e999");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].kind == DiagKind::OutOfRange);
  CHECK(l.diags[0].message == "number `1e999` is too large, expected a finite number");
  CHECK(l.kinds[2] == K::Error);
}

TEST_CASE("lexer: text that is neither number nor name") {
  for (const char* bad : {"-x", "+", "a+b", "..", "-"}) {
    auto l = lex_text(bad);
    INFO(bad);
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags[0].kind == DiagKind::Syntax);
    CHECK(l.kinds[0] == K::Error);
  }
}

TEST_CASE("lexer: locations are line and column of the first character") {
  SourceManager sources;
  int32_t file = sources.add("t.sched", "a = 1\n  bb = [2]\n");
  Reporter report(file);
  TokenBuffer t = lex(sources, file, report);
  CHECK(t.loc(0).line == 1);
  CHECK(t.loc(0).col == 1);
  CHECK(t.text(4) == "bb");
  CHECK(t.loc(4).line == 2);
  CHECK(t.loc(4).col == 3);
  CHECK(t.loc(6).col == 8);
}

TEST_CASE("lexer: a comment without a newline at the end of the file") {
  auto l = lex_text("ranks = 4 # no newline");
  CHECK(l.kinds.back() == K::End);
  CHECK(l.kinds.size() == 4);
}

TEST_CASE("lexer: the token limit stops lexing with one too-large error") {
  std::string src;
  src.reserve(2 * (kMaxTokens + 10));
  for (size_t i = 0; i < kMaxTokens + 5; ++i) src += "a ";
  auto l = lex_text(src);
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].kind == DiagKind::TooLarge);
  CHECK(l.kinds.size() == kMaxTokens + 1);
  CHECK(l.kinds.back() == K::End);
}

TEST_CASE("lexer: errors stop at the cap with a note") {
  std::string src;
  for (int i = 0; i < 200; ++i) src += "@ x\n";
  auto l = lex_text(src);
  size_t errors = 0;
  for (const auto& d : l.diags) errors += d.severity == Severity::Error;
  CHECK(errors == kMaxFrontendErrors);
  CHECK(l.diags.back().severity == Severity::Note);
  CHECK(l.diags.back().message.find("too many errors") != std::string::npos);
}

TEST_CASE("quote: escapes and shortens") {
  CHECK(quote("abc") == "`abc`");
  CHECK(quote("a`b") == "`a\\x60b`");
  CHECK(quote(std::string(100, 'x')) == "`" + std::string(40, 'x') + "...`");
}

TEST_CASE("lexer: one well-formed non-ASCII character is shown as itself") {
  auto l = lex_text("ranks = 4 \xC2\xA7");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].message == "unexpected character `\xC2\xA7` (U+00A7)");
  // Overlong and truncated sequences stay hex.
  CHECK(lex_text("\xC0\xA7").diags[0].message == "unexpected characters `\\xC0\\xA7`");
  CHECK(lex_text("\xE2\x82").diags[0].message == "unexpected characters `\\xE2\\x82`");
  CHECK(lex_text("\xF0\x9F\x98\x80").diags[0].message == "unexpected character `\xF0\x9F\x98\x80` (U+1F600)");
}
