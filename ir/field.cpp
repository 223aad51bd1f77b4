#include "ir/field.h"

#include <array>

namespace schedc::ir {

namespace {

constexpr std::array<std::string_view, 26> kNames = {"ranks",
                                                     "stages_per_rank",
                                                     "microbatches",
                                                     "direction",
                                                     "placement",
                                                     "stage_to_rank",
                                                     "backward",
                                                     "objective",
                                                     "recompute",
                                                     "cost.F",
                                                     "cost.B",
                                                     "cost.W",
                                                     "cost.comm",
                                                     "cost.FB",
                                                     "cost.action_overhead",
                                                     "cost.message_overhead",
                                                     "cost.R",
                                                     "memory.F",
                                                     "memory.B",
                                                     "memory.W",
                                                     "memory.cap",
                                                     "memory.static",
                                                     "memory.input",
                                                     "memory.balanced",
                                                     "model",
                                                     "expect"};
static_assert(kNames.size() == static_cast<size_t>(Field::Expect) + 1, "one name per field");

}  // namespace

std::string_view to_string(Field f) { return kNames[static_cast<size_t>(f)]; }

std::optional<Field> parse_field(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<Field>(i);
  return std::nullopt;
}

}  // namespace schedc::ir
