#pragma once
// The schedule JSON's version gates, as the format tests check them: a document written in the
// version a feature needs reads back as it was written, and the same text labelled one version
// lower is refused with the message naming the key.

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "ir/json_io.h"
#include "support/diagnostics.h"

namespace schedc::test {

/// Writes `s` (expected as version `version`), reads it back (same problem, same bytes), and
/// checks that the text relabelled as version `version - 1` is refused with `refusal` and is a
/// `bad-format` error. Returns the written text.
inline std::string check_version_gate(const ir::Schedule& s, int version, std::string_view refusal) {
  std::string text = ir::write_schedule_json(s, nullptr);
  const std::string label = "\"version\": " + std::to_string(version);
  REQUIRE(text.find(label + ",") != std::string::npos);
  SourceManager sm;
  Diagnostics d(&sm);
  auto back = ir::read_schedule_json(sm, sm.add("t.json", text), d);
  REQUIRE(back);
  CHECK(back->problem == s.problem);
  CHECK(ir::write_schedule_json(*back, nullptr) == text);
  std::string older = text;
  older.replace(older.find(label), label.size(), "\"version\": " + std::to_string(version - 1));
  Diagnostics d2(&sm);
  CHECK_FALSE(ir::read_schedule_json(sm, sm.add("older.json", older), d2));
  CHECK(d2.str().find(refusal) != std::string::npos);
  CHECK(d2.str().find("[bad-format]") != std::string::npos);
  return text;
}

}  // namespace schedc::test
