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
  add_output_command(
      app, rc, "show", "print a schedule's timeline as a text grid or JSON", {"text", "json"}, Phase::Simulate,
      [](Session& s, const OutputFlags& out, const Compilation& c) {
        const bool json = out.format == "json";
        if (json) return finish_with_output(s, out.output, timeline_json(*c.schedule, *c.timeline));
        // A planned schedule (`partition = auto`): the partition it chose, then the grid.
        std::ostringstream plan;
        if (!c.schedule->layers_per_stage.empty()) {
          plan << "plan: " << c.schedule->problem.stages_per_rank
               << (c.schedule->problem.stages_per_rank == 1 ? " stage" : " stages") << " per rank, "
               << ir::to_string(c.schedule->problem.placement) << ", the layers of each stage:\n";
          // With recomputation, how many microbatches each stage recomputes (its R's).
          std::vector<int32_t> recomputed(c.schedule->layers_per_stage.size(), 0);
          for (const auto& order : c.schedule->ranks)
            for (const ir::Action& a : order)
              if (a.kind == ir::ActionKind::R && a.stage.index() < recomputed.size()) ++recomputed[a.stage.index()];
          const bool recomputes = c.schedule->problem.recompute != ir::Recompute::Off;
          stage_table(plan, c.schedule->problem, c.schedule->layers_per_stage, recomputes ? &recomputed : nullptr);
        }
        return finish_with_output(s, out.output, plan.str() + codegen::emit_text(*c.schedule, *c.timeline));
      });
}

}  // namespace schedc::driver
