#pragma once
// One JSON value on one line with ", " and ": " separators (nlohmann's compact form has none):
// how schedule JSON and the commands' JSON documents write their objects.

#include <string>

#include <nlohmann/json.hpp>

namespace schedc::ir {

std::string json_line(const nlohmann::ordered_json& j);

}  // namespace schedc::ir
