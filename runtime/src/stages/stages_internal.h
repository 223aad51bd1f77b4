#pragma once
// Constructors of the stages schedrt ships (one file each).

#include <memory>
#include <vector>

#include "schedrt/stage.h"
#include "stages/seed_hash.h"

namespace schedrt {

/// schedrt's own stages, in documentation order (the registry adds them when it is first used).
void register_builtin_stages(std::vector<StageInfo>& out);
/// The cuda backend's device implementations (the mlp stage on cuBLAS); none without CUDA.
void register_cuda_stages(std::vector<StageInfo>& out);

std::unique_ptr<Stage> make_mlp_stage(const StageConfig& config, int32_t stage);
std::unique_ptr<Stage> make_synthetic_stage(const StageConfig& config, int32_t stage);
std::unique_ptr<Stage> make_noop_stage(const StageConfig& config, int32_t stage);

/// Testing: adds `delta` to weight `index` of an mlp stage (weights, then biases, layer by layer)
/// and returns the number of weights (0 when `stage` is not an mlp stage).
size_t perturb_mlp_weight(Stage& stage, size_t index, double delta);

}  // namespace schedrt
