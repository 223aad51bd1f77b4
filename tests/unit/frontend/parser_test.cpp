#include <doctest/doctest.h>

#include "tests/unit/frontend/test_util.h"

using namespace schedc;
using namespace schedc::frontend;
using schedc::frontend::test::run;

namespace {

struct Parsed {
  ast::File file;
  std::vector<Diagnostic> diags;
  SourceManager sources;  // the tree views its text
};

std::unique_ptr<Parsed> parse_text(std::string_view src) {
  auto p = std::make_unique<Parsed>();
  int32_t file = p->sources.add("t.sched", std::string(src));
  Reporter report(file);
  TokenBuffer tokens = lex(p->sources, file, report);
  p->file = parse(tokens, report);
  Diagnostics diags(&p->sources);
  report.flush(diags);
  p->diags = diags.all();
  return p;
}

std::vector<int32_t> error_lines(const test::Result& r) {
  std::vector<int32_t> lines;
  for (const auto& d : r.diags)
    if (d.severity == Severity::Error) lines.push_back(d.loc.line);
  return lines;
}

}  // namespace

TEST_CASE("parser: assignments, blocks and every value form") {
  auto p = parse_text("ranks = 4\ncost { F = [1, 2]  comm = 0.5 }\nx = \"s\"; y = name\nz = [[0, 1], []]");
  REQUIRE(p->diags.empty());
  REQUIRE(p->file.stmts.size() == 5);
  const auto& ranks = std::get<ast::Value>(p->file.stmts[0].body);
  CHECK(ranks.kind == ast::Value::Kind::Number);
  CHECK(ranks.number == 4);
  const auto& cost = std::get<ast::Block>(p->file.stmts[1].body);
  REQUIRE(cost.entries.size() == 2);
  CHECK(cost.entries[0].key.text == "F");
  CHECK(cost.entries[0].value.items.size() == 2);
  CHECK(cost.entries[1].value.number == 0.5);
  CHECK(std::get<ast::Value>(p->file.stmts[2].body).string == "s");
  CHECK(std::get<ast::Value>(p->file.stmts[3].body).kind == ast::Value::Kind::Word);
  const auto& z = std::get<ast::Value>(p->file.stmts[4].body);
  REQUIRE(z.items.size() == 2);
  CHECK(z.items[0].items.size() == 2);
  CHECK(z.items[1].items.empty());
}

TEST_CASE("parser: lists may span lines and end with a comma") {
  auto p = parse_text("x = [\n  1,\n  2,\n]\ny = 3");
  REQUIRE(p->diags.empty());
  REQUIRE(p->file.stmts.size() == 2);
  CHECK(std::get<ast::Value>(p->file.stmts[0].body).items.size() == 2);
}

TEST_CASE("parser: explicit schedules with overlapped units") {
  auto p = parse_text("schedule = explicit {\n  rank 0: F0.s0 (F1.s0 B0.s0), W0.s0\n  rank 1:\n"
                      "  rank 2: F0.s2\n    F1.s2\n}");
  REQUIRE(p->diags.empty());
  const auto& s = std::get<ast::ScheduleValue>(p->file.stmts[0].body);
  REQUIRE(s.orders);
  REQUIRE(s.orders->ranks.size() == 3);
  const auto& r0 = s.orders->ranks[0];
  REQUIRE(r0.items.size() == 3);
  CHECK(!r0.items[0].group);
  CHECK(r0.items[1].group);
  CHECK(r0.items[1].tokens.size() == 2);
  CHECK(r0.items[1].tokens[1].text == "B0.s0");
  CHECK(s.orders->ranks[1].items.empty());
  CHECK(s.orders->ranks[2].items.size() == 2);
}

TEST_CASE("parser: family and solve sources, with and without options") {
  auto p = parse_text("schedule = family interleaved-1f1b { group_size = 4 }\nschedule = solve\n"
                      "schedule = family zb-h1\nschedule = solve { time_limit = 10  deterministic = true }");
  REQUIRE(p->diags.empty());
  REQUIRE(p->file.stmts.size() == 4);
  const auto& a = std::get<ast::ScheduleValue>(p->file.stmts[0].body);
  CHECK(a.family->text == "interleaved-1f1b");
  CHECK(a.options->entries.size() == 1);
  CHECK(!std::get<ast::ScheduleValue>(p->file.stmts[1].body).options);
  CHECK(std::get<ast::ScheduleValue>(p->file.stmts[3].body).options->entries.size() == 2);
}

TEST_CASE("parser: expect clauses") {
  auto p = parse_text("expect {\n makespan == 44\n peak_memory[0] <= 4; peak_memory = [4, 3]\n optimal  same_as 1f1b\n"
                      " bubble_ratio < 0.5, busy > 1 }");
  REQUIRE(p->diags.empty());
  const auto& e = std::get<ast::ExpectBlock>(p->file.stmts[0].body);
  REQUIRE(e.clauses.size() == 7);
  CHECK(e.clauses[0].op->text == "==");
  CHECK(e.clauses[1].index->number == 0);
  CHECK(e.clauses[2].value->items.size() == 2);
  CHECK(!e.clauses[3].op);
  CHECK(e.clauses[4].family->text == "1f1b");
  CHECK(e.clauses[6].op->text == ">");
}

TEST_CASE("parser: every syntax error of a file is reported, one per broken line") {
  auto r = run("ranks = 4\n"
               "microbatches =\n"         // 2: missing value
               "direction single\n"       // 3: missing =
               "cost { F = 1 B }\n"       // 4: missing = in block
               "placement = looped ]\n"   // 5: junk after value
               "stage_to_rank = [0, 1\n"  // 6: unclosed list (reported at `[`, recovers at the next line)
               "objective = makespan\n"
               "}\n");  // 8: stray brace
  CHECK(!r.spec);
  CHECK(error_lines(r) == std::vector<int32_t>{2, 3, 4, 5, 6, 8});
  for (DiagKind k : r.kinds()) CHECK(k == DiagKind::Syntax);
}

TEST_CASE("parser: a value must start on the line of its `=`") {
  auto r = run("ranks =\n4\nmicrobatches = 8");
  REQUIRE(r.errors() >= 1);
  CHECK(r.first().message == "expected a value after `ranks =`, got end of line");
  CHECK(r.first().loc.line == 1);
}

TEST_CASE("parser: an unclosed block before the next block is reported at its `{`") {
  auto r = run("ranks = 4\nmicrobatches = 8\ncost { F = 1\nmemory { cap = 4 }\n");
  REQUIRE(r.errors() == 1);
  CHECK(r.first().message == "the block of `cost` is not closed before `memory` `{`, expected `}`");
  CHECK(r.first().loc.line == 3);
  CHECK(r.first().loc.col == 6);
}

TEST_CASE("parser: unclosed blocks at the end of the file") {
  for (const char* src :
       {"cost { F = 1", "expect { makespan == 3", "schedule = explicit { rank 0: F0.s0", "runtime {\n"}) {
    auto r = run(src);
    INFO(src);
    REQUIRE(r.errors() == 1);
    CHECK(r.first().message.find("is never closed, expected `}`") != std::string::npos);
  }
}

TEST_CASE("parser: explicit block recovery") {
  auto r = run("schedule = explicit {\n F0.s0\n rank 0: F0.s0 = 3\n rank: F1.s0\n rank 1 F0.s1 (F1.s1 B0.s1\n"
               " rank 2: (F0.s2 4)\n}");
  std::vector<std::string> msgs;
  for (const auto& d : r.diags) msgs.push_back(d.message);
  REQUIRE(msgs.size() == 6);
  CHECK(msgs[0] == "expected `rank N:` before the first action, got `F0.s0`");
  CHECK(msgs[1].starts_with("unexpected `=` in an explicit schedule"));
  CHECK(msgs[2] == "expected a rank number after `rank`, got `:`");
  CHECK(msgs[3] == "expected `:` after `rank 1`, got `F0.s1`");
  CHECK(msgs[4] == "`(` is not closed, expected `)` after the actions of the overlapped unit");
  CHECK(msgs[5] == "unexpected number `4` in an overlapped unit, expected two action tokens");
}

TEST_CASE("parser: expect recovery") {
  auto r = run("expect {\n makespan 44\n peak_memory[ <= 3\n same_as\n busy[1 <= 2\n bubble_ratio <\n}");
  std::vector<int32_t> lines;
  for (const auto& d : r.diags)
    if (d.severity == Severity::Error) lines.push_back(d.loc.line);
  CHECK(lines == std::vector<int32_t>{2, 3, 4, 5, 6});
  CHECK(r.diags[0].message == "expected a comparison (`==`, `<=`, `<`, `>=`, `>`) after `makespan`, got number `44`");
}

TEST_CASE("parser: lists nest at most kMaxListDepth deep") {
  std::string ok = "x = " + std::string(kMaxListDepth, '[') + std::string(kMaxListDepth, ']');
  CHECK(parse_text(ok)->diags.empty());
  std::string deep = "x = " + std::string(kMaxListDepth + 1, '[') + std::string(kMaxListDepth + 1, ']') + "\ny = 1";
  auto p = parse_text(deep);
  REQUIRE(p->diags.size() == 1);
  CHECK(p->diags[0].kind == DiagKind::TooLarge);
  CHECK(p->file.stmts.size() == 1);  // y = 1 still parsed
}

TEST_CASE("parser: a hundred thousand open brackets neither crash nor overflow the stack") {
  for (char open : {'[', '{', '('}) {
    std::string src = "x = " + std::string(100000, open);
    auto r = run(src);
    CHECK(!r.spec);
    CHECK(r.errors() >= 1);
    CHECK(r.errors() <= kMaxFrontendErrors);
  }
}

TEST_CASE("parser: the lexer's errors are not reported again") {
  auto r = run("ranks = @\nmicrobatches = 1e999\nx = [1, \"open]\n");
  std::vector<DiagKind> want = {DiagKind::BadChar, DiagKind::OutOfRange, DiagKind::UnterminatedString};
  CHECK(r.kinds() == want);
}

TEST_CASE("parser: errors come out in source order, lexer and parser mixed") {
  auto r = run("a = \nb = 1 2\nc = @\nd =\n");
  CHECK(error_lines(r) == std::vector<int32_t>{1, 2, 3, 4});
  CHECK(r.kinds()[2] == DiagKind::BadChar);
}

TEST_CASE("parser: a list left open before the next entry is reported at its `[`") {
  for (const char* src : {"ranks = 4\nmicrobatches = 8\nx = [1, 2\nobjective = makespan\n",
                          "ranks = 4\nmicrobatches = 8\nx = [1, 2,\nobjective = makespan\n",
                          "ranks = 4\nmicrobatches = 8\nx = [1, 2,\ncost { F = 1 }\n"}) {
    auto r = run(src);
    INFO(src);
    REQUIRE(r.errors() == 1);
    CHECK(r.first().loc.line == 3);
    CHECK(r.first().loc.col == 5);
    CHECK(r.first().message.starts_with("the list is not closed before `"));
  }
}

TEST_CASE("parser: an unterminated string that swallows the closer is reported once") {
  for (const char* src : {"runtime { out = \"x }\n", "x = [1, \"a]\n", "expect { same_as \"x }",
                          "schedule = explicit { rank 0: \"F0.s0 }"}) {
    auto r = run(src);
    INFO(src);
    CHECK(r.kinds() == std::vector<DiagKind>{DiagKind::UnterminatedString});
  }
}

TEST_CASE("parser: an unknown schedule source is reported and its block skipped") {
  auto r = run("ranks = 1\nmicrobatches = 1\nschedule = explicitly {\n  rank 0: F0.s0\n}\nexpect { }\n");
  REQUIRE(r.errors() == 1);
  CHECK(r.first().kind == DiagKind::BadValue);
  CHECK(r.first().message ==
        "unknown schedule source `explicitly`, expected `explicit { ... }`, `family NAME` or `solve`; did you mean "
        "`explicit`?");
  auto r2 = run("ranks = 1\nmicrobatches = 1\nschedule = greedy\nfoo = [\n");
  CHECK(r2.kinds() == std::vector<DiagKind>{DiagKind::BadValue, DiagKind::Syntax});
}
