#pragma once
// The --check tolerances of the GPU mlp stage against the CPU reference in fp64 (no CUDA headers:
// tests/unit/cuda measures on the CPU why they are what they are).

#include "schedrt/stage.h"

namespace schedrt::cuda {

/// Largest relative difference (max |g - g_ref| / max |g_ref| per stage, and of the loss) allowed
/// for a GPU run in `dtype`.
double check_tolerance(Dtype dtype);

}  // namespace schedrt::cuda
