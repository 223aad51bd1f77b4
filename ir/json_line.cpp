#include "ir/json_line.h"

#include "support/numbers.h"

namespace schedc::ir {

using ojson = nlohmann::ordered_json;

namespace {

void append_line(const ojson& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += ", ";
      first = false;
      out += ojson(k).dump();
      out += ": ";
      append_line(v, out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      append_line(j[i], out);
    }
    out += ']';
  } else {
    out += j.dump();
  }
}

}  // namespace

std::string json_line(const ojson& j) {
  std::string s;
  append_line(j, s);
  return s;
}

ojson json_number(double v) {
  if (is_int32(v)) return static_cast<int64_t>(v);
  return v;
}

}  // namespace schedc::ir
