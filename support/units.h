#pragma once
// Units of time and memory as users write them (`12.5ms`, `1.2GiB`): the table, parsing a number
// with its unit, and exact-as-possible conversion. docs/dsl.md ("Units") is the reference.

#include <optional>
#include <string>
#include <string_view>

namespace schedc {

enum class Dimension { Time, Memory };

struct Unit {
  std::string_view name;  // as written: "ms", "GiB"
  Dimension dim;
  double scale;  // in the dimension's base: nanoseconds for time, bytes for memory (exact integers)
  bool binary;   // KiB, MiB, ... (powers of 1024); B and the time units count as both
};

/// The unit spelled `name` (case-sensitive: `MB` is a megabyte, `mb` is nothing), or nullptr.
const Unit* find_unit(std::string_view name);

/// "ns, us, ms, s" or "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB".
std::string unit_names(Dimension dim);
/// "time" or "memory".
std::string_view to_string(Dimension dim);

/// A number with an optional unit: `12.5ms` -> {12.5, ms}, `4` -> {4, nullptr}.
struct Quantity {
  double value = 0;
  const Unit* unit = nullptr;
};

/// Where the unit of `text` starts: the trailing run of letters after a number-shaped prefix
/// (`12.5ms` -> 4, `1e3us` -> 3); npos when there is none or the prefix is not a number.
size_t unit_suffix_start(std::string_view text);

/// Parses `text` whole as a finite number with an optional known unit.
std::optional<Quantity> parse_quantity(std::string_view text);

/// `value` given in `from`, expressed in `to` (the same dimension). One multiplication or division
/// by the exact ratio when one scale divides the other, so `12.5ms` in `us` is exactly 12500.
double convert(double value, const Unit& from, const Unit& to);

/// The unit in which values of both `a` and `b` are written most exactly: the finer one, or bytes
/// when one is decimal (KB) and the other binary (KiB). Either may be nullptr (then the other).
const Unit* finer_unit(const Unit* a, const Unit* b);

}  // namespace schedc
