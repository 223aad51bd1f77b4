// `schedc families [--format text|json]`: every known schedule family with its constraints and
// parameters.

#include <sstream>

#include "solver/families/families.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"
#include "tools/schedc/json_out.h"

namespace schedc::driver {

namespace {

std::string families_text() {
  std::ostringstream os;
  for (const solver::FamilyInfo& f : solver::families()) {
    os << f.name << "\n";
    os << "    " << f.summary << "\n";
    os << "    backward " << ir::to_string(f.backward) << ", " << ir::direction_name(f.directions)
       << (f.any_directions ? " (or more)" : "") << ", placement " << ir::to_string(f.placement) << ", stages per rank "
       << (f.stages_per_rank == 0 ? std::string("any") : std::to_string(f.stages_per_rank)) << "\n";
    os << "    constraints: " << f.constraints << "\n";
    if (!f.params.empty()) os << "    parameters: " << f.params << "\n";
  }
  return os.str();
}

// One family a line, the same facts as the text.
std::string families_json() {
  std::string list = "[";
  for (const solver::FamilyInfo& f : solver::families()) {
    ojson j;
    j["name"] = f.name;
    j["summary"] = f.summary;
    j["backward"] = std::string(ir::to_string(f.backward));
    j["direction"] = ir::direction_name(f.directions);
    j["placement"] = std::string(ir::to_string(f.placement));
    j["stages_per_rank"] = f.stages_per_rank == 0 ? ojson(nullptr) : ojson(f.stages_per_rank);
    j["constraints"] = f.constraints;
    j["parameters"] = f.params;
    list += (list.size() > 1 ? ",\n    " : "\n    ") + json_line(j);
  }
  list += list.size() > 1 ? "\n  ]" : "]";
  return json_document("schedc.families", {{"families", list}});
}

}  // namespace

void add_families_command(CLI::App& app, int& rc) {
  auto out = std::make_shared<OutputFlags>();
  CLI::App* cmd = app.add_subcommand("families", "list the known schedule families and their constraints");
  out->add_to(*cmd, {"text", "json"});
  set_callback(*cmd, rc, [out](Session& s) {
    if (!check_output_path(s, out->output)) return s.finish();
    return finish_with_output(s, out->output, out->format == "json" ? families_json() : families_text());
  });
}

}  // namespace schedc::driver
