// `schedc import torch-csv FILE.csv [problem flags] -o SCHEDULE.json`.

#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_import_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string format, path, output;
    ProblemFlags problem;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("import", "convert another tool's schedule into schedule JSON");
  cmd->add_option("format", opts->format, "torch-csv")->required()->check(CLI::IsMember({"torch-csv"}));
  cmd->add_option("file", opts->path, "the file to import")->required();
  cmd->add_option("-o,--output", opts->output, "write the schedule JSON here instead of stdout");
  opts->problem.add_to(*cmd);
  cmd->callback([opts, &rc] {
    Session s;
    if (opts->path.size() < 4 || opts->path.substr(opts->path.size() - 4) != ".csv") {
      s.diags.error(DiagKind::BadFlag, {}, "import torch-csv: the file must end in `.csv`, got `" + opts->path + "`");
      rc = s.finish();
      return;
    }
    auto in = load_input(s, opts->path, opts->problem);
    auto sched = in ? obtain_schedule(s, *in, ScheduleFlags{}) : std::nullopt;
    if (!sched) {
      rc = s.fail();
      return;
    }
    sched->provenance = ir::Provenance::of("torch-csv");
    ir::Timeline t = simulate_verified(*sched);
    rc = write_output(s, opts->output, ir::write_schedule_json(*sched, &t.metrics)) ? s.finish() : s.fail();
  });
}

}  // namespace schedc::driver
