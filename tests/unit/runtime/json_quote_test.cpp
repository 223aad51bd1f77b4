// schedrt::json_quote, the one JSON string escaper of the run report, the profile and the trace:
// what it writes is JSON that reads back as the same string, control characters included.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "run_internal.h"

using schedrt::json_quote;

TEST_CASE("json_quote: quotes, backslashes and control characters survive a round trip") {
  const std::string cases[] = {
      "",           "mlp", "a \"quoted\" \\ path", std::string("nul\0here", 8), "tab\there\nnew line", "\x01\x1f\x7f",
      "caf\xc3\xa9"};
  for (const std::string& s : cases) {
    std::string q = json_quote(s);
    INFO("quoted: ", q);
    CHECK(nlohmann::json::parse(q).get<std::string>() == s);
  }
}

TEST_CASE("json_quote: a control character is written as \\u00XX, never raw or dropped") {
  CHECK(json_quote(std::string("a\x01z")) == "\"a\\u0001z\"");
  CHECK(json_quote("line\nnext") == "\"line\\u000anext\"");
}
