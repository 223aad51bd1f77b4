#pragma once
// The mlp stage on the GPU (internal to the cuda backend): the CPU stage's model, weights and data
// (stages/mlp.cpp), with cuBLAS GEMMs on the rank's compute stream and small kernels for the
// activation and the loss. fp64, fp32 (no TF32) or bf16 storage with fp32 accumulation.

#include <memory>

#include "backends/cuda/device.h"
#include "schedrt/stage.h"

namespace schedrt::cuda {

/// Virtual stage `stage` on `dev`: memory from its pool, work on its compute stream. Gradients
/// come back as fp64 values (gradient_bytes() = 8 per weight) whatever the dtype, so that
/// --check compares them with the CPU reference in fp64.
std::unique_ptr<Stage> make_mlp_cuda_stage(const StageConfig& config, int32_t stage, DeviceRank& dev);

}  // namespace schedrt::cuda
