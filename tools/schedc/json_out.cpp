#include "tools/schedc/json_out.h"

#include "ir/json_io.h"

namespace schedc::driver {

std::string json_document(const std::string& format, const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out = "{\n  \"format\": " + ojson(format).dump() + ",\n  \"version\": 1";
  for (const auto& [key, value] : fields) out += ",\n  " + ojson(key).dump() + ": " + value;
  return out + "\n}\n";
}

ojson expectation_json(const ir::Expectation& e) {
  ojson j;
  switch (e.kind) {
    case ir::Expectation::Kind::MetricBound:
      j["kind"] = "metric";
      j["metric"] = std::string(ir::to_string(e.metric));
      if (e.rank >= 0) j["rank"] = e.rank;
      j["cmp"] = std::string(ir::to_string(e.cmp));
      j["value"] = json_number(e.value);
      break;
    case ir::Expectation::Kind::PerRank: {
      j["kind"] = "per_rank";
      j["metric"] = std::string(ir::to_string(e.metric));
      ojson values = ojson::array();
      for (double v : e.values) values.push_back(json_number(v));
      j["values"] = values;
      break;
    }
    case ir::Expectation::Kind::Optimal: j["kind"] = "optimal"; break;
    case ir::Expectation::Kind::SameAs:
      j["kind"] = "same_as";
      j["family"] = e.family;
      break;
  }
  return j;
}

ojson params_json(const ir::Params& params) {
  ojson j = ojson::object();
  for (const ir::Param& p : params.items) {
    if (p.is_number()) j[p.key] = json_number(p.number());
    else if (p.is_string()) j[p.key] = p.string();
    else {
      ojson list = ojson::array();
      for (double v : p.list()) list.push_back(json_number(v));
      j[p.key] = list;
    }
  }
  return j;
}

ojson schedule_source_json(const frontend::ScheduleSource& src) {
  ojson j;
  switch (src.kind) {
    case frontend::SourceKind::None: j["kind"] = "none"; break;
    case frontend::SourceKind::Explicit: j["kind"] = "explicit"; break;
    case frontend::SourceKind::Family:
      j["kind"] = "family";
      j["family"] = src.family;
      j["params"] = params_json(src.params);
      break;
    case frontend::SourceKind::Solve:
      j["kind"] = "solve";
      j["params"] = params_json(src.params);
      break;
  }
  return j;
}

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

}  // namespace schedc::driver
