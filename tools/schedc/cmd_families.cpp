// `schedc families`: every known schedule family with its constraints and parameters.

#include <iostream>

#include "solver/families/families.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_families_command(CLI::App& app, int& rc) {
  CLI::App* cmd = app.add_subcommand("families", "list the known schedule families and their constraints");
  cmd->callback([&rc] {
    for (const solver::FamilyInfo& f : solver::families()) {
      std::cout << f.name << "\n";
      std::cout << "    " << f.summary << "\n";
      std::cout << "    backward " << ir::to_string(f.backward) << ", " << ir::to_string(f.direction) << ", placement "
                << ir::to_string(f.placement) << ", stages per rank "
                << (f.stages_per_rank == 0 ? std::string("any") : std::to_string(f.stages_per_rank)) << "\n";
      std::cout << "    constraints: " << f.constraints << "\n";
      if (!f.params.empty()) std::cout << "    parameters: " << f.params << "\n";
    }
    rc = kOk;
  });
}

}  // namespace schedc::driver
