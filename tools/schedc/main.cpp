// schedc: the pipeline-parallel schedule compiler's command line (docs/design.md section 5).
// Exit codes: 0 success; 1 input wrong or a verification/expectation failed; 2 bad command line;
// 3 internal error.

#include <string>

#include <CLI/CLI.hpp>

#include "support/internal_error.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/interrupt.h"

int main(int argc, char** argv) {
  using namespace schedc::driver;
  CLI::App app{"schedc: a pipeline-parallel schedule compiler"};
  app.name("schedc");
  app.require_subcommand(1);
  app.set_version_flag("--version", "schedc 0.1.0");
  int rc = kOk;
  add_check_command(app, rc);
  add_verify_command(app, rc);
  add_simulate_command(app, rc);
  add_show_command(app, rc);
  add_schedule_command(app, rc);
  add_import_command(app, rc);
  add_families_command(app, rc);
  add_emit_command(app, rc);
  add_build_command(app, rc);
  add_run_command(app, rc);
  add_profile_command(app, rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kOk : kBadCommandLine;
  } catch (const std::exception& e) {
    SCHEDC_INTERNAL_ERROR(std::string("uncaught exception: ") + e.what());
  }
  end_if_stopped();  // interrupted while it ran child processes: end by the signal, as they did
  return rc;
}
