#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profile/profile.h"
#include "support/numbers.h"

namespace schedc::profile {
namespace {

// Stages within this fraction of the largest value are written as one number.
constexpr double kUniformSpread = 0.05;

bool read_list(const nlohmann::json& j, const char* key, int32_t stages, std::vector<double>* out, std::string* error) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != static_cast<size_t>(stages)) {
    *error = std::string("`") + key + "` is not a list of " + std::to_string(stages) + " numbers";
    return false;
  }
  for (const auto& v : *it) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      *error = std::string("`") + key + "` holds a value that is not a non-negative number";
      return false;
    }
    out->push_back(v.get<double>());
  }
  return true;
}

std::string value_text(const std::vector<double>& v) {
  double most = *std::max_element(v.begin(), v.end()), least = *std::min_element(v.begin(), v.end());
  if (most - least <= kUniformSpread * most) {
    double sum = 0;
    for (double x : v) sum += x;
    return format_number(round3(sum / static_cast<double>(v.size()))) + "us";
  }
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + format_number(round3(v[i])) + "us";
  return s + "]";
}

}  // namespace

double round3(double v) {
  if (!std::isfinite(v)) return 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return std::strtod(buf, nullptr);
}

std::optional<Measured> read_measured(const std::string& json, int32_t stages, std::string* error) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "the executor's profile is not a JSON object";
    return std::nullopt;
  }
  const int version = j.value("format", "") == "schedrt.profile" ? j.value("version", 0) : 0;
  if (version != 1 && version != 2) {
    *error = "the executor's profile is not `schedrt.profile` version 1 or 2";
    return std::nullopt;
  }
  Measured m;
  if (!read_list(j, "F", stages, &m.F, error) || !read_list(j, "B", stages, &m.B, error) ||
      !read_list(j, "W", stages, &m.W, error))
    return std::nullopt;
  if (j.contains("FB") && !j["FB"].is_null() && !read_list(j, "FB", stages, &m.FB, error)) return std::nullopt;
  std::optional<double> stage_overhead;
  for (auto [key, slot] : {std::pair{"comm", &m.comm},
                           {"action_overhead", &m.action_overhead},
                           {"message_overhead", &m.message_overhead},
                           {"stage_overhead", &stage_overhead}}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    if (!j[key].is_number() || !(j[key].get<double>() >= 0)) {
      *error = std::string("`") + key + "` is not a non-negative number";
      return std::nullopt;
    }
    *slot = j[key].get<double>();
  }
  m.stage_overhead = m.action_overhead ? std::min(stage_overhead.value_or(0), *m.action_overhead) : 0;
  std::ostringstream how;
  how << j.value("backend", "?") << ", " << j.value("stage", "?");
  if (j.value("stage", "") == "mlp")
    how << " " << j.value("dtype", "?") << " (hidden " << j.value("hidden", 0) << ", layers " << j.value("layers", 0)
        << ", batch " << j.value("batch", 0) << ")";
  m.how = how.str();
  return m;
}

std::string format_cost_block(const Measured& m) {
  std::string s = "cost {\n";
  s += "  # measured by `schedc profile` on " + m.how + "\n";
  // The work alone: what a call of the stage took, less its fixed part (in action_overhead).
  auto work = [&](std::vector<double> v, double calls) {
    for (double& x : v) x = std::max(0.0, x - calls * m.stage_overhead);
    return value_text(v);
  };
  s += "  F = " + work(m.F, 1) + "\n";
  s += "  B = " + work(m.B, 1) + "\n";
  s += "  W = " + work(m.W, 1) + "\n";
  if (!m.FB.empty()) s += "  FB = " + work(m.FB, 2) + "\n";
  const double ends = m.comm && m.message_overhead ? 2 * *m.message_overhead : 0;
  if (m.comm) s += "  comm = " + format_number(round3(std::max(0.0, *m.comm - ends))) + "us\n";
  if (m.action_overhead) s += "  action_overhead = " + format_number(round3(*m.action_overhead)) + "us\n";
  if (m.message_overhead && m.comm) s += "  message_overhead = " + format_number(round3(*m.message_overhead)) + "us\n";
  return s + "}";
}

}  // namespace schedc::profile
