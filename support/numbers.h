#pragma once
// Numbers as users read and write them: shortest round-trip decimal text, integers without ".0".

#include <optional>
#include <string>
#include <string_view>

namespace schedc {

/// Shortest text that reads back as the same double; integral values print without a fraction.
std::string format_number(double value);

/// Parses a whole string as a finite decimal number (no trailing characters).
std::optional<double> parse_number(std::string_view text);

/// True when `value` is an integer that fits in int32.
bool is_int32(double value);

}  // namespace schedc
