#pragma once
// The mlp stage's small kernels (mlp_kernels.cu, the only file nvcc compiles), launched on the
// caller's stream. Storage type T (`Elem`: fp64, fp32 or bf16) for activations, weights and
// gradients between layers; accumulation type A (fp64 for fp64, else fp32) for pre-activations,
// biases and weight gradients. Every reduction runs in a fixed order: the results do not depend on
// timing.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace schedrt::cuda {

enum class Elem { F64, F32, BF16 };

/// Bytes of one element of storage (T) and of accumulation (A).
inline int64_t storage_bytes(Elem e) { return e == Elem::F64 ? 8 : e == Elem::F32 ? 4 : 2; }
inline int64_t accum_bytes(Elem e) { return e == Elem::F64 ? 8 : 4; }

/// One layer's weights as the CPU stage makes them: w[i] = hash(seed, stream, i) / sqrt(h)
/// (h x h, row-major [out][in], in T) and bias[o] = 0.1 hash(seed, stream, h*h + o) (in A).
void init_layer(Elem e, void* w, void* bias, int64_t h, uint64_t seed, uint64_t stream, cudaStream_t s);
/// Stage 0's input of microbatch `mb`: x[i] = hash(seed, 1, mb*n + i), n elements.
void make_input(Elem e, void* x, int64_t n, uint64_t seed, int64_t mb, cudaStream_t s);
/// y = tanh(z + bias[column]) for a rows x h row-major z (A) into y (T).
void bias_tanh(Elem e, const void* z, const void* bias, void* y, int64_t rows, int64_t h, cudaStream_t s);
/// Last stage: d = y - t with targets t = 0.5 hash(seed, 2, mb*n + i); g = 2 d / (n * microbatches)
/// (T), and loss[mb] = sum(d^2) / n (fp64, summed in a fixed order; `partials` holds
/// `loss_partials()` doubles of scratch).
void mse_loss(Elem e, const void* y, void* g, double* partials, double* loss, int64_t n, int64_t microbatches,
              uint64_t seed, int64_t mb, cudaStream_t s);
int64_t loss_partials();
/// dz = g * (1 - y^2), n elements (T).
void tanh_backward(Elem e, const void* g, const void* y, void* dz, int64_t n, cudaStream_t s);
/// db[o] = sum over rows r, in order, of dz[r][o] (dz in T, db in A).
void bias_grad(Elem e, const void* dz, void* db, int64_t rows, int64_t h, cudaStream_t s);
/// acc[i] += g[i], count elements of A.
void accumulate(Elem e, void* acc, const void* g, int64_t count, cudaStream_t s);
/// out[i] = double(in[i]), count elements of A (the gradients' read-out).
void widen(Elem e, const void* in, double* out, int64_t count, cudaStream_t s);

/// Throws schedrt::Error for a kernel that could not be launched (defined with the stage, so that
/// this file and mlp_kernels.cu need no schedrt headers).
[[noreturn]] void launch_failed(cudaError_t e, const char* kernel);

}  // namespace schedrt::cuda
