#pragma once
// Layers to stages (docs/dsl.md, "Model and partition"): how many of a model's equal layers each
// pipeline stage runs, the first stage also running the embedding and the last the output head.

#include <cstdint>
#include <vector>

namespace schedc::frontend {

/// Layer counts per stage (summing to `layers`) that minimise the largest stage time, a stage's
/// time being its layers times `layer` plus `first` on stage 0 and `last` on the last stage.
/// Among the optimal counts: the largest stage time removed layer by layer from the heaviest
/// stage (the later one on ties), so equal stages differ by at most one layer. Deterministic.
std::vector<int32_t> balanced_partition(int32_t stages, int32_t layers, double layer, double first, double last);

}  // namespace schedc::frontend
