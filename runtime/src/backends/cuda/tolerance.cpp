#include "backends/cuda/tolerance.h"

namespace schedrt::cuda {

double check_tolerance(Dtype dtype) {
  switch (dtype) {
    // cuBLAS sums in another order than the CPU loops: a few ulps per dot product, far below 1e-12.
    case Dtype::F64: return 1e-12;
    // fp32 GEMMs (never TF32) and tanhf against fp64: the emulation measures 3.3e-7 on 8 stages
    // of 2 layers, hidden 256 (tests/unit/cuda/numerics_test.cpp); 1e-4 leaves a factor of 300,
    // and a routing mistake (a wrong buffer, microbatch or message) is an O(1) difference.
    case Dtype::F32: return 1e-4;
    // bf16 storage (unit roundoff 2^-9 = 2e-3) of weights, activations, dz and input gradients at
    // every layer, fp32 accumulation: the error grows with depth; the emulation measures 1.4e-2 on
    // 16 layers (8 stages x 2) and 3.6e-3 on 8. 5e-2 leaves a factor of 3.5 at 16 layers; deeper
    // models need a looser check (or fp32).
    case Dtype::BF16: return 5e-2;
  }
  return 1e-12;
}

}  // namespace schedrt::cuda
