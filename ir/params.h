#pragma once
// Named parameters from a spec or the command line: family parameters (`group_size = 4`), solve
// options (`time_limit = 10`) and the runtime block. Each consumer validates its own keys.

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "support/source.h"

namespace schedc::ir {

struct Param {
  std::string key;
  /// A number, a name/string, or a list of numbers.
  std::variant<double, std::string, std::vector<double>> value;
  SourceLoc loc;        // of the key
  SourceLoc value_loc;  // of the value

  bool is_number() const { return std::holds_alternative<double>(value); }
  bool is_string() const { return std::holds_alternative<std::string>(value); }
  bool is_list() const { return std::holds_alternative<std::vector<double>>(value); }
  double number() const { return std::get<double>(value); }
  const std::string& string() const { return std::get<std::string>(value); }
  const std::vector<double>& list() const { return std::get<std::vector<double>>(value); }
};

struct Params {
  std::vector<Param> items;

  const Param* find(std::string_view key) const {
    for (const Param& p : items)
      if (p.key == key) return &p;
    return nullptr;
  }
  bool empty() const { return items.empty(); }
};

}  // namespace schedc::ir
