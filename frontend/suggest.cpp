#include "frontend/suggest.h"

#include <algorithm>
#include <vector>

namespace schedc::frontend {

namespace {

// Beyond this a word is not a typo of a key, and the distance would cost time on hostile input.
constexpr size_t kMaxSuggestLength = 64;

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string_view did_you_mean(std::string_view word, std::span<const std::string_view> candidates,
                              std::span<const Alias> aliases) {
  if (word.empty() || word.size() > kMaxSuggestLength) return {};
  for (const Alias& a : aliases)
    if (equal_ignoring_case(word, a.first)) return a.second;
  for (std::string_view c : candidates)
    if (equal_ignoring_case(word, c)) return c;
  if (word.size() < 3) return {};  // `X` is no typo of `F`
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (std::string_view c : candidates) {
    // One edit in four characters, at least one: `stage_per_rank`, `microbatch`, `vshap`.
    size_t limit = std::max<size_t>(1, std::min(word.size(), c.size()) / 4);
    size_t d = edit_distance(word, c);
    if (d <= limit && d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean_suffix(std::string_view word, std::span<const std::string_view> candidates,
                                std::span<const Alias> aliases) {
  std::string_view s = did_you_mean(word, candidates, aliases);
  if (s.empty()) return {};
  return "; did you mean `" + std::string(s) + "`?";
}

std::string one_of(std::span<const std::string_view> items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += "`" + std::string(items[i]) + "`";
  }
  return out;
}

}  // namespace schedc::frontend
