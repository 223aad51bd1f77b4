// `schedc import torch-csv FILE.csv [problem flags] -o SCHEDULE.json`.

#include "ir/json_io.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_import_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string format, output = "-";
    Request rq;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("import", "convert another tool's schedule into schedule JSON");
  cmd->add_option("format", opts->format, "torch-csv")->required()->check(CLI::IsMember({"torch-csv"}));
  cmd->add_option("file", opts->rq.args.path, "the file to import")->required();
  cmd->add_option("-o,--output", opts->output, "write the schedule JSON here instead of stdout (`-`: stdout)");
  opts->rq.args.problem.add_to(*cmd);
  opts->rq.dump.add_to(*cmd, opts->rq.last);
  set_callback(*cmd, rc, [opts](Session& s) {
    if (!check_output_path(s, opts->output)) return s.finish();
    const std::string& path = opts->rq.args.path;
    if (!path.ends_with(".csv")) {
      s.diags.error(DiagKind::BadFlag, {}, "import torch-csv: the file must end in `.csv`, got `" + path + "`");
      return s.finish();
    }
    Compilation c;
    if (!run_until(s, opts->rq, c)) return s.fail();
    c.schedule->provenance = ir::Provenance::of("torch-csv");
    return finish_with_output(s, opts->output, ir::write_schedule_json(*c.schedule, &c.timeline->metrics));
  });
}

}  // namespace schedc::driver
