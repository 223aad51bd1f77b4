#pragma once
// Distinct integer id types (RankId, StageId, ...) so that a rank is never passed where a stage is
// expected. Data lives in vectors indexed by `id.value`.

#include <compare>
#include <cstdint>
#include <functional>

namespace schedc {

template <class Tag> struct StrongId {
  int32_t value = -1;

  constexpr StrongId() = default;
  constexpr explicit StrongId(int32_t v) : value(v) {}
  constexpr bool valid() const { return value >= 0; }
  constexpr size_t index() const { return static_cast<size_t>(value); }
  constexpr auto operator<=>(const StrongId&) const = default;
};

}  // namespace schedc

template <class Tag> struct std::hash<schedc::StrongId<Tag>> {
  size_t operator()(schedc::StrongId<Tag> id) const noexcept { return std::hash<int32_t>()(id.value); }
};
