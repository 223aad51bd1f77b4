#pragma once
// The stages a model's partition gives, as `schedc check` and `show` print them.

#include <cstdint>
#include <ostream>
#include <vector>

#include "ir/problem.h"

namespace schedc::driver {

/// One line a stage: its layers, F, B, W, activation and static memory, in the problem's units;
/// with recomputation, what a checkpointed forward keeps (`input`), and with `recomputed` (one
/// count a stage: the microbatches a schedule recomputes there), that count of the microbatches.
void stage_table(std::ostream& os, const ir::Problem& p, const std::vector<int32_t>& layers_per_stage,
                 const std::vector<int32_t>* recomputed = nullptr);

}  // namespace schedc::driver
