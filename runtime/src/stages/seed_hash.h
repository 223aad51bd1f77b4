#pragma once
// The mlp stage's deterministic numbers: one definition for the CPU stage and the GPU kernels, so
// that weights, inputs and targets on the GPU are those of the CPU reference by construction.
// Plain C++ for the host compiler and nvcc.

#include <cstdint>

#if defined(__CUDACC__)
#define SCHEDRT_HD __host__ __device__
#else
#define SCHEDRT_HD
#endif

namespace schedrt {

/// Deterministic uniform numbers in [-1, 1) from (seed, stream, index): the same on every rank, in
/// every process, whatever the order of calls; splitmix64 of a mix of the three.
SCHEDRT_HD inline double uniform_hash(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ (stream + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^ index;
  for (int i = 0; i < 2; ++i) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
  }
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

}  // namespace schedrt
