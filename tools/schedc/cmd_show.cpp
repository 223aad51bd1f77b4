// `schedc show SPEC|SCHEDULE.json [--format text|json]`: the schedule's simulated timeline, as a
// time-scaled grid for terminals or as JSON for scripts.

#include "codegen/emit.h"
#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/json_out.h"

namespace schedc::driver {

void add_show_command(CLI::App& app, int& rc) {
  add_output_command(app, rc, "show", "print a schedule's timeline as a text grid or JSON", {"text", "json"},
                     Phase::Simulate, [](Session& s, const OutputFlags& out, const Compilation& c) {
                       const bool json = out.format == "json";
                       return finish_with_output(s, out.output,
                                                 json ? timeline_json(*c.schedule, *c.timeline)
                                                      : codegen::emit_text(*c.schedule, *c.timeline));
                     });
}

}  // namespace schedc::driver
