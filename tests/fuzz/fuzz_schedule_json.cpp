// libFuzzer target: any bytes as a schedule JSON document (ir::read_schedule_json). The reader
// must not crash, hang or trip a sanitizer; it returns a schedule exactly when it reported no
// error. Printing the diagnostics (which locates JSON paths in the text) is exercised too.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ir/json_io.h"
#include "support/diagnostics.h"
#include "support/source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedc;
  SourceManager sources;
  int32_t file = sources.add("fuzz.json", std::string(reinterpret_cast<const char*>(data), size));
  Diagnostics diags(&sources);
  auto sched = ir::read_schedule_json(sources, file, diags);
  (void)diags.str();
  if (sched.has_value() == diags.has_errors()) std::abort();
  return 0;
}
