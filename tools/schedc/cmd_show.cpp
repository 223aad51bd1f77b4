// `schedc show SPEC|SCHEDULE.json [--format text|json]`: the schedule's simulated timeline, as a
// time-scaled grid for terminals or as JSON for scripts.

#include "codegen/emit.h"
#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/json_out.h"

namespace schedc::driver {

namespace {

// What the grid shows: every action's start and end, one rank a line, with the metrics.
std::string timeline_json(const ir::Schedule& sched, const ir::Timeline& t) {
  std::string ranks = "[", overlap = "[";
  for (size_t r = 0; r < sched.ranks.size(); ++r) {
    ojson row = ojson::array();
    for (size_t i = 0; i < sched.ranks[r].size(); ++i) {
      ojson a;
      a["action"] = ir::format_action(sched.ranks[r][i]);
      a["start"] = json_number(t.time(t.start[r][i]));
      a["end"] = json_number(t.time(t.end[r][i]));
      row.push_back(a);
    }
    ojson units = ojson::array();
    if (r < sched.overlap.size())
      for (int32_t i : sched.overlap[r]) units.push_back(ojson::array({i, i + 1}));
    ranks += (r ? ",\n    " : "\n    ") + json_line(row);
    overlap += (r ? ",\n    " : "\n    ") + json_line(units);
  }
  ranks += sched.ranks.empty() ? "]" : "\n  ]";
  overlap += sched.ranks.empty() ? "]" : "\n  ]";
  std::vector<std::pair<std::string, std::string>> fields = {{"problem", ir::problem_json(sched.problem)},
                                                             {"ranks", ranks}};
  if (sched.has_overlap()) fields.emplace_back("overlap", overlap);
  fields.emplace_back("metrics", ir::metrics_json(t.metrics));
  if (sched.provenance) fields.emplace_back("provenance", ir::provenance_json(*sched.provenance));
  return json_document("schedc.show", fields);
}

}  // namespace

void add_show_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string format = "text", output;
    ScheduleArgs args;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("show", "print a schedule's timeline as a text grid or JSON");
  cmd->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-o,--output", opts->output, "write to this file instead of stdout");
  opts->args.add_to(*cmd);
  cmd->callback([opts, &rc] {
    Session s;
    auto done = load_and_schedule(s, opts->args);
    if (!done) {
      rc = s.fail();
      return;
    }
    const ir::Schedule& sched = done->schedule;
    std::string out = opts->format == "json" ? timeline_json(sched, done->timeline)
                                             : codegen::emit_text(sched, done->timeline);
    rc = write_output(s, opts->output, out) ? s.finish() : s.fail();
  });
}

}  // namespace schedc::driver
