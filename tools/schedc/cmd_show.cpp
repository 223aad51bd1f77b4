// `schedc show SPEC|SCHEDULE.json [--format text|json]`: the schedule's simulated timeline, as a
// time-scaled grid for terminals or as JSON for scripts.

#include <sstream>

#include "codegen/emit.h"
#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/json_out.h"
#include "tools/schedc/stage_table.h"

namespace schedc::driver {

void add_show_command(CLI::App& app, int& rc) {
  add_output_command(app, rc, "show", "print a schedule's timeline as a text grid or JSON", {"text", "json"},
                     Phase::Simulate, [](Session& s, const OutputFlags& out, const Compilation& c) {
                       const bool json = out.format == "json";
                       if (json) return finish_with_output(s, out.output, timeline_json(*c.schedule, *c.timeline));
                       // A planned schedule (`partition = auto`): the partition it chose, then the grid.
                       std::ostringstream plan;
                       if (!c.schedule->layers_per_stage.empty()) {
                         plan << "plan: " << c.schedule->problem.stages_per_rank << " stages per rank, "
                              << ir::to_string(c.schedule->problem.placement) << ", the layers of each stage:\n";
                         stage_table(plan, c.schedule->problem, c.schedule->layers_per_stage);
                       }
                       return finish_with_output(s, out.output,
                                                 plan.str() + codegen::emit_text(*c.schedule, *c.timeline));
                     });
}

}  // namespace schedc::driver
