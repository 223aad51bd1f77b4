// The mlp stage's kernels (see mlp_kernels.h). Grid-stride loops; every reduction has a fixed
// shape (a fixed grid for the loss, one thread per column for bias gradients), so results do not
// depend on scheduling. Kept small: this is the only file nvcc compiles.

#include <cuda_bf16.h>

#include <cmath>
#include <type_traits>

#include "stages/cuda/mlp_kernels.h"
#include "stages/seed_hash.h"

namespace schedrt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kLossBlocks = 256;

template <class T> struct Accum { using type = float; };
template <> struct Accum<double> { using type = double; };

__device__ inline float load(const float* p, int64_t i) { return p[i]; }
__device__ inline double load(const double* p, int64_t i) { return p[i]; }
__device__ inline float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }

__device__ inline void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ inline void store(double* p, int64_t i, double v) { p[i] = v; }
__device__ inline void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// static_cast<T>(v) of the CPU stage, then read back in A.
template <class T> __device__ inline typename Accum<T>::type rounded(double v) {
  return static_cast<typename Accum<T>::type>(static_cast<T>(v));
}
template <> __device__ inline float rounded<__nv_bfloat16>(double v) {
  return __bfloat162float(__float2bfloat16_rn(static_cast<float>(v)));
}

__device__ inline double tanh_of(double x) { return tanh(x); }
__device__ inline float tanh_of(float x) { return tanhf(x); }

inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : b > (1 << 20) ? (1 << 20) : b);
}

#define SCHEDRT_GRID_LOOP(i, n)                                                                                        \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n);                               \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <class T>
__global__ void init_layer_k(T* w, typename Accum<T>::type* bias, int64_t h, uint64_t seed, uint64_t stream,
                             double scale) {
  using A = typename Accum<T>::type;
  const int64_t hh = h * h;
  SCHEDRT_GRID_LOOP(i, hh + h) {
    double v = uniform_hash(seed, stream, static_cast<uint64_t>(i));
    if (i >= hh) {
      bias[i - hh] = static_cast<A>(0.1 * v);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      store(w, i, static_cast<float>(v * scale));  // the fp64 weight, rounded to bf16
    } else {
      store(w, i, rounded<T>(v) * rounded<T>(scale));  // the CPU stage: static_cast<T>(hash) * scale, in T
    }
  }
}

template <class T> __global__ void make_input_k(T* x, int64_t n, uint64_t seed, int64_t mb) {
  SCHEDRT_GRID_LOOP(i, n) store(x, i, rounded<T>(uniform_hash(seed, 1, static_cast<uint64_t>(mb * n + i))));
}

template <class T>
__global__ void bias_tanh_k(const typename Accum<T>::type* z, const typename Accum<T>::type* bias, T* y, int64_t rows,
                            int64_t h) {
  SCHEDRT_GRID_LOOP(i, rows * h) store(y, i, tanh_of(z[i] + bias[i % h]));
}

template <class T>
__global__ void mse_loss_k(const T* y, T* g, double* partials, int64_t n, int64_t microbatches, uint64_t seed,
                           int64_t mb) {
  using A = typename Accum<T>::type;
  __shared__ double sums[kThreads];
  const A denom = static_cast<A>(static_cast<double>(n) * static_cast<double>(microbatches));
  double sum = 0;
  SCHEDRT_GRID_LOOP(i, n) {
    A t = rounded<T>(0.5 * uniform_hash(seed, 2, static_cast<uint64_t>(mb * n + i)));
    A d = load(y, i) - t;
    sum += static_cast<double>(d) * static_cast<double>(d);
    store(g, i, static_cast<A>(2) * d / denom);
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

__global__ void loss_total_k(const double* partials, double* loss, int64_t n, int64_t mb) {
  __shared__ double sums[kLossBlocks];
  sums[threadIdx.x] = partials[threadIdx.x];
  __syncthreads();
  for (int half = kLossBlocks / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[mb] = sums[0] / static_cast<double>(n);
}

template <class T> __global__ void tanh_backward_k(const T* g, const T* y, T* dz, int64_t n) {
  using A = typename Accum<T>::type;
  SCHEDRT_GRID_LOOP(i, n) {
    A v = load(y, i);
    store(dz, i, load(g, i) * (static_cast<A>(1) - v * v));
  }
}

template <class T> __global__ void bias_grad_k(const T* dz, typename Accum<T>::type* db, int64_t rows, int64_t h) {
  using A = typename Accum<T>::type;
  SCHEDRT_GRID_LOOP(o, h) {
    A s = 0;
    for (int64_t r = 0; r < rows; ++r) s += load(dz, r * h + o);
    db[o] = s;
  }
}

template <class A> __global__ void accumulate_k(A* acc, const A* g, int64_t count) {
  SCHEDRT_GRID_LOOP(i, count) acc[i] += g[i];
}

template <class A> __global__ void widen_k(const A* in, double* out, int64_t count) {
  SCHEDRT_GRID_LOOP(i, count) out[i] = static_cast<double>(in[i]);
}

// Runs BODY with T bound to the storage type of `e`.
#define SCHEDRT_DISPATCH(e, BODY)                                                                                      \
  switch (e) {                                                                                                         \
    case Elem::F64: {                                                                                                  \
      using T = double;                                                                                                \
      BODY;                                                                                                            \
    } break;                                                                                                           \
    case Elem::F32: {                                                                                                  \
      using T = float;                                                                                                 \
      BODY;                                                                                                            \
    } break;                                                                                                           \
    case Elem::BF16: {                                                                                                 \
      using T = __nv_bfloat16;                                                                                         \
      BODY;                                                                                                            \
    } break;                                                                                                           \
  }

// Launches report their configuration errors at once; execution errors surface at the next sync.
void launched(const char* kernel) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) launch_failed(e, kernel);
}

}  // namespace

int64_t loss_partials() { return kLossBlocks; }

void init_layer(Elem e, void* w, void* bias, int64_t h, uint64_t seed, uint64_t stream, cudaStream_t s) {
  double scale = 1.0 / std::sqrt(static_cast<double>(h));
  SCHEDRT_DISPATCH(e, (init_layer_k<T><<<blocks_for(h * h + h), kThreads, 0, s>>>(
                          static_cast<T*>(w), static_cast<typename Accum<T>::type*>(bias), h, seed, stream, scale)));
  launched("init_layer");
}

void make_input(Elem e, void* x, int64_t n, uint64_t seed, int64_t mb, cudaStream_t s) {
  SCHEDRT_DISPATCH(e, (make_input_k<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(x), n, seed, mb)));
  launched("make_input");
}

void bias_tanh(Elem e, const void* z, const void* bias, void* y, int64_t rows, int64_t h, cudaStream_t s) {
  SCHEDRT_DISPATCH(e, (bias_tanh_k<T><<<blocks_for(rows * h), kThreads, 0, s>>>(
                          static_cast<const typename Accum<T>::type*>(z),
                          static_cast<const typename Accum<T>::type*>(bias), static_cast<T*>(y), rows, h)));
  launched("bias_tanh");
}

void mse_loss(Elem e, const void* y, void* g, double* partials, double* loss, int64_t n, int64_t microbatches,
              uint64_t seed, int64_t mb, cudaStream_t s) {
  SCHEDRT_DISPATCH(e, (mse_loss_k<T><<<kLossBlocks, kThreads, 0, s>>>(static_cast<const T*>(y), static_cast<T*>(g),
                                                                      partials, n, microbatches, seed, mb)));
  loss_total_k<<<1, kLossBlocks, 0, s>>>(partials, loss, n, mb);
  launched("mse_loss");
}

void tanh_backward(Elem e, const void* g, const void* y, void* dz, int64_t n, cudaStream_t s) {
  SCHEDRT_DISPATCH(e, (tanh_backward_k<T><<<blocks_for(n), kThreads, 0, s>>>(
                          static_cast<const T*>(g), static_cast<const T*>(y), static_cast<T*>(dz), n)));
  launched("tanh_backward");
}

void bias_grad(Elem e, const void* dz, void* db, int64_t rows, int64_t h, cudaStream_t s) {
  SCHEDRT_DISPATCH(e, (bias_grad_k<T><<<blocks_for(h), kThreads, 0, s>>>(
                          static_cast<const T*>(dz), static_cast<typename Accum<T>::type*>(db), rows, h)));
  launched("bias_grad");
}

void accumulate(Elem e, void* acc, const void* g, int64_t count, cudaStream_t s) {
  if (e == Elem::F64)
    accumulate_k<double>
        <<<blocks_for(count), kThreads, 0, s>>>(static_cast<double*>(acc), static_cast<const double*>(g), count);
  else
    accumulate_k<float>
        <<<blocks_for(count), kThreads, 0, s>>>(static_cast<float*>(acc), static_cast<const float*>(g), count);
  launched("accumulate");
}

void widen(Elem e, const void* in, double* out, int64_t count, cudaStream_t s) {
  if (e == Elem::F64)
    widen_k<double><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const double*>(in), out, count);
  else widen_k<float><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const float*>(in), out, count);
  launched("widen");
}

}  // namespace schedrt::cuda
