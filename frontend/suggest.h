#pragma once
// "Did you mean ...?" for unknown keys and values: known aliases first (`pp` -> `ranks`), then a
// case-insensitive match, then the nearest candidate within a small edit distance.

#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace schedc::frontend {

/// A word users often write for a known one, e.g. {"pp", "ranks"}.
using Alias = std::pair<std::string_view, std::string_view>;

/// The suggestion for `word` among `candidates` (or an alias's target), or "" when nothing is
/// close enough to be worth saying.
std::string_view did_you_mean(std::string_view word, std::span<const std::string_view> candidates,
                              std::span<const Alias> aliases = {});

/// "; did you mean `x`?" or "" when there is no suggestion.
std::string did_you_mean_suffix(std::string_view word, std::span<const std::string_view> candidates,
                                std::span<const Alias> aliases = {});

/// "`a`, `b` or `c`".
std::string one_of(std::span<const std::string_view> items);

/// Optimal-string-alignment edit distance (insert, delete, substitute, swap neighbours).
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace schedc::frontend
