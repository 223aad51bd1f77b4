// libFuzzer target: any bytes as a `.sched` file. The frontend must not crash, hang, leak or
// trip a sanitizer, and what it returns must keep its contract: a spec only without errors; a
// spec's problem passes ir::validate; every explicit token is in range and sits on an existing
// rank with its location; the errors stay under the cap. Printing the diagnostics is exercised too.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "frontend/reporter.h"
#include "frontend/spec.h"
#include "ir/action.h"
#include "ir/problem.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();  // libFuzzer records the input that broke the contract
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedc;
  SourceManager sources;
  int32_t file = sources.add("fuzz.sched", std::string(reinterpret_cast<const char*>(data), size));
  Diagnostics diags(&sources);
  auto spec = frontend::parse_spec(sources, file, diags);
  (void)diags.str();
  require(spec.has_value() == !diags.has_errors());
  require(diags.error_count() <= frontend::kMaxFrontendErrors);
  if (!spec) return 0;
  const ir::Problem& p = spec->problem;
  require(ir::validate(p).empty());
  const frontend::ScheduleSource& src = spec->schedule;
  if (src.kind == frontend::SourceKind::Explicit) {
    require(src.ranks.size() == static_cast<size_t>(p.ranks));
    require(src.token_locs.size() == src.ranks.size());
    require(src.overlap.size() == src.ranks.size());
    for (size_t r = 0; r < src.ranks.size(); ++r) {
      require(src.token_locs[r].size() == src.ranks[r].size());
      for (const ir::Action& a : src.ranks[r]) require(ir::in_range(p, a));
      for (int32_t i : src.overlap[r]) require(i >= 0 && static_cast<size_t>(i) + 1 < src.ranks[r].size());
    }
  }
  for (const auto& [field, loc] : spec->given) require(loc.file == file && loc.line > 0);
  return 0;
}
