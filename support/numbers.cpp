#include "support/numbers.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace schedc {

std::string format_number(double value) {
  if (value == 0) return "0";  // also turns -0 into 0
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, res.ptr);
}

std::optional<double> parse_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t start = text.front() == '+' ? 1 : 0;
  double v = 0;
  auto res = std::from_chars(text.data() + start, text.data() + text.size(), v);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_int32(double value) {
  return std::isfinite(value) && std::floor(value) == value && value >= std::numeric_limits<int32_t>::min() &&
         value <= std::numeric_limits<int32_t>::max();
}

}  // namespace schedc
