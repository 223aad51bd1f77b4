#pragma once
// One function per `schedc` command: each adds its subcommand to the app and, when run, stores
// the exit code in `rc`.

#include <functional>
#include <utility>

#include <CLI/CLI.hpp>

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
