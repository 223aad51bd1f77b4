// The frontend never crashes, hangs or floods on hostile input: random token soup built from the
// grammar's own pieces, truncations of a valid spec, and pathological shapes. Each run must end
// with either a spec and no errors, or no spec and at least one error (never more than the cap).

#include <doctest/doctest.h>

#include <random>

#include "tests/unit/frontend/test_util.h"

using namespace schedc;
using namespace schedc::frontend;
using schedc::frontend::test::run;

namespace {

constexpr std::string_view kValid =
    "# a valid spec\nranks = 2\nstages_per_rank = 1\nmicrobatches = 2\ndirection = single\nplacement = looped\n"
    "backward = fused\nobjective = makespan\ncost { F = [1, 2]  B = 1  W = 1  comm = 0.5  FB = 1.5 }\n"
    "memory { F = 1  B = -0.5  W = -0.5  cap = none }\n"
    "schedule = explicit {\n  rank 0: F0.s0 F1.s0 (BW0.s0 F1.s0) BW1.s0\n  rank 1: F0.s1 BW0.s1 F1.s1 BW1.s1\n}\n"
    "expect { makespan <= 40  peak_memory[0] <= 2  busy = [1, 2]  optimal  same_as 1f1b }\n"
    "runtime { stage = mlp  out = \"x\\\"y\" }\n";

void check_consistent(const test::Result& r) {
  CHECK(r.spec.has_value() == (r.errors() == 0));
  CHECK(r.errors() <= kMaxFrontendErrors);
}

}  // namespace

TEST_CASE("robustness: the base spec is valid") {
  auto r = run(kValid);
  INFO(r.text);
  CHECK(r.spec.has_value());
}

TEST_CASE("robustness: every prefix of a valid spec") {
  for (size_t n = 0; n <= kValid.size(); ++n) check_consistent(run(kValid.substr(0, n)));
}

TEST_CASE("robustness: every single-byte deletion and a few replacements") {
  for (size_t i = 0; i < kValid.size(); ++i) {
    std::string s(kValid);
    s.erase(i, 1);
    check_consistent(run(s));
    for (char c : {'\0', '{', '}', '[', '"', '\n', '\xff', '='}) {
      std::string t(kValid);
      t[i] = c;
      check_consistent(run(t));
    }
  }
}

TEST_CASE("robustness: random token soup") {
  const char* pieces[] = {"ranks",    "microbatches",
                          "=",        "==",
                          "<=",       "{",
                          "}",        "[",
                          "]",        "(",
                          ")",        ":",
                          ",",        ";",
                          "\n",       "4",
                          "-0.5",     "1e999",
                          "\"s\"",    "\"",
                          "rank",     "explicit",
                          "family",   "solve",
                          "schedule", "expect",
                          "cost",     "memory",
                          "runtime",  "F0.s0",
                          "BW1.s0",   "same_as",
                          "optimal",  "peak_memory",
                          "#",        "@",
                          "\xc3\xa9", " ",
                          "none",     "placement",
                          "custom",   "stage_to_rank"};
  std::mt19937 rng(12345);
  std::uniform_int_distribution<size_t> pick(0, std::size(pieces) - 1);
  std::uniform_int_distribution<int> length(0, 60);
  for (int round = 0; round < 3000; ++round) {
    std::string src;
    for (int i = length(rng); i > 0; --i) {
      src += pieces[pick(rng)];
      src += ' ';
    }
    check_consistent(run(src));
  }
}

TEST_CASE("robustness: pathological shapes") {
  std::vector<std::string> inputs = {
      std::string(1 << 20, '['),
      "x = " + std::string(1 << 16, '[') + std::string(1 << 16, ']'),
      std::string(1 << 16, '}'),
      std::string(1 << 16, '\0'),
      "schedule = explicit { rank 0: " + std::string(1 << 16, '(') + " }",
      "ranks = " + std::string(100000, '9'),
      "ranks = 1" + std::string(100000, '0') + ".5e-99999",
      "x = \"" + std::string(100000, 'a'),
      std::string(100000, 'a'),
      "expect { " + std::string(10000, 'x') + "[ }",
  };
  std::string many_errors;
  for (int i = 0; i < 10000; ++i) many_errors += "x\n";
  inputs.push_back(many_errors);
  for (const std::string& s : inputs) {
    auto r = run(s);
    check_consistent(r);
    CHECK(!r.spec);
  }
}

TEST_CASE("robustness: a large explicit schedule is fine") {
  // 8 ranks x 512 microbatches, split backward: 12288 tokens.
  std::string src = "ranks = 8\nmicrobatches = 512\nschedule = explicit {\n";
  for (int r = 0; r < 8; ++r) {
    src += "rank " + std::to_string(r) + ":";
    for (int m = 0; m < 512; ++m)
      for (const char* k : {"F", "B", "W"}) src += std::string(" ") + k + std::to_string(m) + ".s" + std::to_string(r);
    src += "\n";
  }
  src += "}\n";
  auto r = run(src);
  INFO(r.text);
  REQUIRE(r.spec);
  CHECK(r.spec->schedule.ranks[7].size() == 1536);
  CHECK(r.spec->problem.backward == ir::BackwardMode::Split);
}
