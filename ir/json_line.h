#pragma once
// One JSON value on one line with ", " and ": " separators (nlohmann's compact form has none):
// how schedule JSON and the commands' JSON documents write their objects, and their numbers.

#include <string>

#include <nlohmann/json.hpp>

namespace schedc::ir {

std::string json_line(const nlohmann::ordered_json& j);

/// A number as schedule JSON writes it: integral values (of int32 range) without a fraction.
nlohmann::ordered_json json_number(double v);

}  // namespace schedc::ir
