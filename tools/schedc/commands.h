#pragma once
// One function per `schedc` command: each adds its subcommand to the app and, when run, stores
// the exit code in `rc`.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/schedc/driver.h"
#include "tools/schedc/session.h"

namespace schedc::driver {

/// Makes `body` the callback of `cmd`: it runs in a fresh Session and returns the command's exit
/// code, which goes to `rc`.
inline void set_callback(CLI::App& cmd, int& rc, std::function<int(Session&)> body) {
  cmd.callback([&rc, body = std::move(body)] {
    Session s;
    rc = body(s);
  });
}

/// The flags of a command that runs phases and writes one document: --format and -o, and its
/// Request (input, problem and schedule flags, --dump-after).
struct OutputCommand {
  OutputFlags out;
  Request rq;
};

/// Adds command `name` that runs every phase up to `last` and writes one document (--format among
/// `formats`, -o): `write` formats what the phases made.
inline void add_output_command(CLI::App& app, int& rc, const std::string& name, const std::string& help,
                               const std::vector<std::string>& formats, Phase last,
                               std::function<int(Session&, const OutputFlags&, const Compilation&)> write) {
  auto opts = std::make_shared<OutputCommand>();
  CLI::App* cmd = app.add_subcommand(name, help);
  opts->out.add_to(*cmd, formats);
  opts->rq.add_to(*cmd, last);
  set_callback(*cmd, rc, [opts, write = std::move(write)](Session& s) {
    if (!check_output_path(s, opts->out.output)) return s.finish();
    Compilation c;
    if (!run_until(s, opts->rq, c)) return s.fail();
    return write(s, opts->out, c);
  });
}

void add_check_command(CLI::App& app, int& rc);
void add_verify_command(CLI::App& app, int& rc);
void add_simulate_command(CLI::App& app, int& rc);
void add_show_command(CLI::App& app, int& rc);
void add_schedule_command(CLI::App& app, int& rc);
void add_import_command(CLI::App& app, int& rc);
void add_families_command(CLI::App& app, int& rc);
void add_emit_command(CLI::App& app, int& rc);
void add_build_command(CLI::App& app, int& rc);
void add_run_command(CLI::App& app, int& rc);
void add_profile_command(CLI::App& app, int& rc);

}  // namespace schedc::driver
