// Diagnostics of bounded size: a window of a long source line, values cut in messages.

#include <doctest/doctest.h>

#include "support/diagnostics.h"

using namespace schedc;

TEST_CASE("a short line is shown whole, the caret under its column") {
  SourceWindow w = source_window("ranks = four", 9);
  CHECK(w.text == "ranks = four");
  CHECK(w.caret == 8);
  CHECK(source_window("ab", 5).caret == 2);  // past the end: after the last character
}

TEST_CASE("a long line is shown as a window around the caret") {
  std::string line;
  for (int i = 0; i < 1000; ++i) line += static_cast<char>('a' + i % 26);
  SourceWindow start = source_window(line, 10);
  CHECK(start.text == line.substr(0, kMaxShownColumns) + "...");
  CHECK(start.caret == 9);
  SourceWindow mid = source_window(line, 501);
  CHECK(mid.text.substr(0, 3) == "...");
  CHECK(mid.text.substr(mid.text.size() - 3) == "...");
  CHECK(mid.text.size() == kMaxShownColumns + 6);
  CHECK(mid.text[mid.caret] == line[500]);
  SourceWindow end = source_window(line, 1000);
  CHECK(end.text == "..." + line.substr(1000 - kMaxShownColumns));
  CHECK(end.text[end.caret] == line[999]);
}

TEST_CASE("a window never splits a UTF-8 character") {
  std::string line;
  for (int i = 0; i < 400; ++i) line += "\xC2\xA7";  // U+00A7, two bytes each
  for (int col : {1, 2, 3, 100, 401, 799, 800}) {
    SourceWindow w = source_window(line, col);
    std::string body = w.text;
    if (body.rfind("...", 0) == 0) body = body.substr(3);
    if (body.size() >= 3 && body.substr(body.size() - 3) == "...") body.resize(body.size() - 3);
    CHECK(body.size() % 2 == 0);
    CHECK(static_cast<unsigned char>(body[0]) == 0xC2);
  }
}

TEST_CASE("printing a diagnostic on a huge one-line file stays small") {
  SourceManager sm;
  std::string text(10'000'000, ',');
  text[5'000'000] = 'x';
  int32_t f = sm.add("big.csv", text);
  Diagnostics d(&sm);
  d.error(DiagKind::BadToken, sm.loc_at(f, 5'000'000), "bad action " + backtick(std::string(1'000'000, 'x')));
  std::string out = d.str();
  CHECK(out.size() < 600);
  CHECK(out.find("big.csv:1:5000001: error: bad action `xxx") == 0);
  CHECK(out.find("...` [bad-token]\n...,,,") != std::string::npos);
  // The caret is under the `x`.
  size_t line = out.find('\n') + 1, caret_line = out.find('\n', line) + 1;
  CHECK(out[line + (out.find('^', caret_line) - caret_line)] == 'x');
}

TEST_CASE("backtick keeps short values and cuts long ones") {
  CHECK(backtick("F3.s1") == "`F3.s1`");
  std::string v(kMaxShownValue, 'a');
  CHECK(backtick(v) == "`" + v + "`");
  CHECK(backtick(v + "b") == "`" + v + "...`");
}

TEST_CASE("line starts of a file of empty lines") {
  SourceManager sm;
  int32_t f = sm.add("n.sched", std::string(1000, '\n') + "x");
  CHECK(sm.loc_at(f, 1000).line == 1001);
  CHECK(sm.loc_at(f, 1000).col == 1);
  CHECK(sm.line_text(f, 1001) == "x");
  CHECK(sm.line_text(f, 500).empty());
}
