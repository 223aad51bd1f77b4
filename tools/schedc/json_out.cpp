#include "tools/schedc/json_out.h"

#include "support/numbers.h"

namespace schedc::driver {

ojson json_number(double v) {
  if (is_int32(v)) return static_cast<int64_t>(v);
  return v;
}

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

}  // namespace schedc::driver
