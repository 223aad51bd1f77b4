#include "tools/schedc/stage_table.h"

#include <algorithm>
#include <string>

#include "support/numbers.h"

namespace schedc::driver {

void stage_table(std::ostream& os, const ir::Problem& p, const std::vector<int32_t>& layers_per_stage,
                 const std::vector<int32_t>* recomputed) {
  auto unit = [](const std::string& u) { return u.empty() ? std::string() : " (" + u + ")"; };
  std::vector<std::vector<std::string>> rows{{"stage", "layers", "F" + unit(p.time_unit), "B" + unit(p.time_unit),
                                              "W" + unit(p.time_unit), "memory" + unit(p.memory_unit),
                                              "static" + unit(p.memory_unit)}};
  for (size_t s = 0; s < layers_per_stage.size(); ++s)
    rows.push_back({std::to_string(s), std::to_string(layers_per_stage[s]), format_number(p.cost.F.at(s)),
                    format_number(p.cost.B.at(s)), format_number(p.cost.W.at(s)), format_number(p.memory.F.at(s)),
                    format_number(p.memory.static_memory.at(s))});
  if (p.memory.input) {
    rows[0].push_back("input" + unit(p.memory_unit));
    for (size_t s = 0; s < layers_per_stage.size(); ++s) rows[s + 1].push_back(format_number(p.memory.input->at(s)));
  }
  if (recomputed) {
    rows[0].push_back("recomputed");
    for (size_t s = 0; s < layers_per_stage.size(); ++s)
      rows[s + 1].push_back(std::to_string(s < recomputed->size() ? (*recomputed)[s] : 0) + " of " +
                            std::to_string(p.microbatches));
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c)
      line += row[c] + (c + 1 < row.size() ? std::string(width[c] - row[c].size() + 2, ' ') : "");
    os << line << "\n";
  }
}

}  // namespace schedc::driver
