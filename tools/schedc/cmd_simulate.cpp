// `schedc simulate SPEC|SCHEDULE.json [--format text|json]`: the metrics of docs/design.md section 3.

#include <iomanip>
#include <sstream>

#include "ir/json_io.h"
#include "support/numbers.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

namespace {

// Times and memory carry the problem's units when it has them (`makespan 325600 us`).
std::string metrics_text(const ir::Metrics& m, const ir::Problem& p) {
  std::string t = p.time_unit.empty() ? "" : " " + p.time_unit;
  std::string busy = p.time_unit.empty() ? "busy" : "busy (" + p.time_unit + ")";
  std::string peak = p.memory_unit.empty() ? "peak_memory" : "peak_memory (" + p.memory_unit + ")";
  std::ostringstream os;
  os << "makespan          " << format_number(m.makespan) << t << "\n";
  os << "bubble_ratio      " << format_number(m.bubble_ratio) << "\n";
  os << "max_rank_span     " << format_number(m.max_rank_span) << t << "\n";
  os << "span_bubble_rate  " << format_number(m.span_bubble_rate) << "\n";
  os << "rank  " << std::left << std::setw(12) << busy << peak << "\n";
  for (size_t r = 0; r < m.busy.size(); ++r)
    os << std::left << std::setw(6) << r << std::setw(12) << format_number(m.busy[r]) << format_number(m.peak_memory[r])
       << "\n";
  return os.str();
}

// The metrics object, with the problem's `units` when it has them.
std::string metrics_json(const ir::Metrics& m, const ir::Problem& p) {
  std::string out = ir::metrics_json(m);
  if (p.time_unit.empty() && p.memory_unit.empty()) return out;
  std::string units;
  if (!p.time_unit.empty()) units += "\"time\": \"" + p.time_unit + "\"";
  if (!p.memory_unit.empty()) units += std::string(units.empty() ? "" : ", ") + "\"memory\": \"" + p.memory_unit + "\"";
  out.insert(out.size() - 1, ", \"units\": {" + units + "}");
  return out;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& rc) {
  add_output_command(app, rc, "simulate", "simulate a schedule and print its metrics", {"text", "json"},
                     Phase::Simulate, [](Session& s, const OutputFlags& out, const Compilation& c) {
                       const ir::Metrics& m = c.timeline->metrics;
                       const ir::Problem& p = c.schedule->problem;
                       return finish_with_output(s, out.output,
                                                 out.format == "json" ? metrics_json(m, p) + "\n" : metrics_text(m, p));
                     });
}

}  // namespace schedc::driver
