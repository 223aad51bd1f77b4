#include "support/units.h"

#include <array>
#include <cmath>

#include "support/numbers.h"

namespace schedc {

namespace {

constexpr std::array<Unit, 13> kUnits{{
    {"ns", Dimension::Time, 1, true},
    {"us", Dimension::Time, 1e3, true},
    {"ms", Dimension::Time, 1e6, true},
    {"s", Dimension::Time, 1e9, true},
    {"B", Dimension::Memory, 1, true},
    {"KB", Dimension::Memory, 1e3, false},
    {"MB", Dimension::Memory, 1e6, false},
    {"GB", Dimension::Memory, 1e9, false},
    {"TB", Dimension::Memory, 1e12, false},
    {"KiB", Dimension::Memory, 1024.0, true},
    {"MiB", Dimension::Memory, 1048576.0, true},
    {"GiB", Dimension::Memory, 1073741824.0, true},
    {"TiB", Dimension::Memory, 1099511627776.0, true},
}};

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

const Unit* find_unit(std::string_view name) {
  for (const Unit& u : kUnits)
    if (u.name == name) return &u;
  return nullptr;
}

std::string unit_names(Dimension dim) {
  std::string out;
  for (const Unit& u : kUnits)
    if (u.dim == dim) out += (out.empty() ? "" : ", ") + std::string(u.name);
  return out;
}

std::string_view to_string(Dimension dim) { return dim == Dimension::Time ? "time" : "memory"; }

size_t unit_suffix_start(std::string_view text) {
  size_t i = text.size();
  while (i > 0 && is_letter(text[i - 1])) --i;
  if (i == text.size() || i == 0) return std::string_view::npos;
  // `1e3` ends in a digit; `3e` would leave `3` and `e`: a number then a (bad) unit.
  if (!parse_number(text.substr(0, i))) return std::string_view::npos;
  return i;
}

std::optional<Quantity> parse_quantity(std::string_view text) {
  if (auto v = parse_number(text)) return Quantity{*v, nullptr};
  size_t at = unit_suffix_start(text);
  if (at == std::string_view::npos) return std::nullopt;
  const Unit* unit = find_unit(text.substr(at));
  if (!unit) return std::nullopt;
  return Quantity{*parse_number(text.substr(0, at)), unit};
}

double convert(double value, const Unit& from, const Unit& to) {
  if (from.scale == to.scale) return value;
  if (from.scale > to.scale) {
    double ratio = from.scale / to.scale;
    if (ratio == std::floor(ratio)) return value * ratio;
  } else {
    double ratio = to.scale / from.scale;
    if (ratio == std::floor(ratio)) return value / ratio;
  }
  return value * from.scale / to.scale;
}

const Unit* finer_unit(const Unit* a, const Unit* b) {
  if (!a) return b;
  if (!b) return a;
  if (a->dim == Dimension::Memory && a->binary != b->binary && a->scale != 1 && b->scale != 1) return find_unit("B");
  return a->scale <= b->scale ? a : b;
}

}  // namespace schedc
