// The mlp stage on the GPU. Row-major tensors as on the CPU (x: rows x h, W: [out][in]); cuBLAS
// is column-major, so a row-major rows x h matrix is its h x rows transpose and:
//   forward         Z^T  = W   X^T        gemm(T, N, h, rows, h)   Z in A (fp32 or fp64)
//   input gradient  G^T  = W^T dZ^T       gemm(N, N, h, rows, h)   G in T
//   weight gradient dW^T = X^T dZ         gemm(N, T, h, h, rows)   dW in A, one per microbatch
// Like the CPU stage, every microbatch keeps its weight gradient apart and reduce_gradients sums
// them in the order given, so the result does not depend on the schedule.

#include "stages/cuda/mlp_cuda.h"

#include <cstring>
#include <vector>

#include "stages/cuda/mlp_kernels.h"

namespace schedrt::cuda {

[[noreturn]] void launch_failed(cudaError_t e, const char* kernel) {
  throw Error(std::string("launching the `") + kernel + "` kernel: " + cudaGetErrorString(e));
}

namespace {

class MlpCudaStage final : public Stage {
 public:
  MlpCudaStage(const StageConfig& c, int32_t stage, DeviceRank& dev)
      : dev_(dev), e_(c.dtype == Dtype::F64   ? Elem::F64
                      : c.dtype == Dtype::F32 ? Elem::F32
                                              : Elem::BF16),
        h_(c.hidden), layers_(c.layers_of(stage)), rows_(c.batch), m_(c.microbatches), last_(stage + 1 == c.num_stages),
        seed_(c.seed) {
    const int64_t n = rows_ * h_, t = storage_bytes(e_), a = accum_bytes(e_);
    per_layer_ = h_ * h_ + h_;
    weights_ = alloc(layers_ * h_ * h_ * t);
    bias_ = alloc(layers_ * h_ * a);
    acts_ = alloc(m_ * (layers_ + 1) * n * t);
    dz_ = alloc(m_ * layers_ * n * t);
    dloss_ = last_ ? alloc(m_ * n * t) : nullptr;
    grads_ = alloc(m_ * layers_ * per_layer_ * a);
    z_ = alloc(n * a);
    scratch_ = alloc(2 * n * t);
    acc_ = alloc(layers_ * per_layer_ * a);
    wide_ = reinterpret_cast<double*>(alloc(layers_ * per_layer_ * 8));
    partials_ = reinterpret_cast<double*>(alloc(loss_partials() * 8));
    loss_ = reinterpret_cast<double*>(alloc(m_ * 8));
    check(cudaMemsetAsync(loss_, 0, static_cast<size_t>(m_) * 8, dev_.compute), "cudaMemset (losses)");
    for (int64_t l = 0; l < layers_; ++l)
      init_layer(e_, weight(l), bias(l), h_, seed_,
                 1000 + static_cast<uint64_t>(stage) * 1000 + static_cast<uint64_t>(l), dev_.compute);
    blas_ = dev_.blas();
  }

  size_t boundary_bytes() const override { return static_cast<size_t>(rows_ * h_ * storage_bytes(e_)); }
  size_t gradient_bytes() const override { return static_cast<size_t>(layers_ * per_layer_) * sizeof(double); }

  void forward(int32_t mb, const void* in, void* out) override {
    const int64_t n = rows_ * h_;
    void* x0 = act(mb, 0);
    if (in)
      check(cudaMemcpyAsync(x0, in, boundary_bytes(), cudaMemcpyDeviceToDevice, dev_.compute), "copying an input");
    else make_input(e_, x0, n, seed_, mb, dev_.compute);
    run_layers(mb);
    const void* y = act(mb, layers_);
    if (out) {
      check(cudaMemcpyAsync(out, y, boundary_bytes(), cudaMemcpyDeviceToDevice, dev_.compute), "copying an output");
      return;
    }
    mse_loss(e_, y, dloss(mb), partials_, loss_, n, m_, seed_, mb, dev_.compute);
  }

  // A checkpointed forward keeps only its input: the layers' outputs are overwritten with all-ones
  // bytes (a NaN in every storage type, so a missing recomputation shows in --check), and
  // recompute() runs the layers again, the same kernels in the same order.
  void checkpoint(int32_t mb) override {
    for (int64_t l = 1; l <= layers_; ++l)
      check(cudaMemsetAsync(act(mb, l), 0xff, boundary_bytes(), dev_.compute), "cudaMemset (a checkpoint)");
  }

  void recompute(int32_t mb) override { run_layers(mb); }

  void backward_input(int32_t mb, const void* grad_out, void* grad_in) override {
    const int64_t n = rows_ * h_;
    const void* g = grad_out ? grad_out : dloss(mb);
    std::byte* next = scratch_;
    for (int64_t l = layers_ - 1; l >= 0; --l) {
      void* dz = dzs(mb, l);
      tanh_backward(e_, g, act(mb, l + 1), dz, n, dev_.compute);
      if (l == 0 && !grad_in) break;
      void* target = l == 0 ? grad_in : next;
      gemm(CUBLAS_OP_N, CUBLAS_OP_N, h_, rows_, h_, weight(l), storage(), dz, storage(), target, storage());
      g = target;
      next = next == scratch_ ? scratch_ + n * storage_bytes(e_) : scratch_;
    }
  }

  void backward_weight(int32_t mb) override {
    for (int64_t l = 0; l < layers_; ++l) {
      std::byte* dw = grad(mb, l);
      gemm(CUBLAS_OP_N, CUBLAS_OP_T, h_, h_, rows_, act(mb, l), storage(), dzs(mb, l), storage(), dw, accum());
      bias_grad(e_, dzs(mb, l), dw + h_ * h_ * accum_bytes(e_), rows_, h_, dev_.compute);
    }
  }

  // The layers of microbatch mb from its input act(mb, 0): each layer's output act(mb, l + 1).
  void run_layers(int32_t mb) {
    for (int64_t l = 0; l < layers_; ++l) {
      gemm(CUBLAS_OP_T, CUBLAS_OP_N, h_, rows_, h_, weight(l), storage(), act(mb, l), storage(), z_, accum());
      bias_tanh(e_, z_, bias(l), act(mb, l + 1), rows_, h_, dev_.compute);
    }
  }

  double loss(int32_t mb) const override {
    double v = 0;
    check(cudaMemcpyAsync(&v, loss_ + mb, sizeof v, cudaMemcpyDeviceToHost, dev_.compute), "reading a loss");
    check(cudaStreamSynchronize(dev_.compute), "reading a loss");
    return v;
  }

  void reduce_gradients(const std::vector<int32_t>& mbs, void* out) const override {
    const int64_t count = layers_ * per_layer_, bytes = count * accum_bytes(e_);
    if (mbs.empty()) {
      std::memset(out, 0, gradient_bytes());
      return;
    }
    check(cudaMemcpyAsync(acc_, grads_ + mbs[0] * bytes, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                          dev_.compute),
          "summing gradients");
    for (size_t k = 1; k < mbs.size(); ++k) accumulate(e_, acc_, grads_ + mbs[k] * bytes, count, dev_.compute);
    widen(e_, acc_, wide_, count, dev_.compute);
    check(cudaMemcpyAsync(out, wide_, gradient_bytes(), cudaMemcpyDeviceToHost, dev_.compute), "reading gradients");
    check(cudaStreamSynchronize(dev_.compute), "reading gradients");
  }

  void add_gradients(const void* a, const void* b, void* out) const override {
    const auto* x = static_cast<const double*>(a);
    const auto* y = static_cast<const double*>(b);
    auto* o = static_cast<double*>(out);
    for (int64_t i = 0; i < layers_ * per_layer_; ++i) o[i] = x[i] + y[i];
  }

  std::vector<double> gradient_values(const void* grads) const override {
    const auto* g = static_cast<const double*>(grads);
    return std::vector<double>(g, g + layers_ * per_layer_);
  }

 private:
  std::byte* alloc(int64_t bytes) { return static_cast<std::byte*>(dev_.pool.allocate(static_cast<size_t>(bytes))); }

  cudaDataType storage() const { return e_ == Elem::F64 ? CUDA_R_64F : e_ == Elem::F32 ? CUDA_R_32F : CUDA_R_16BF; }
  cudaDataType accum() const { return e_ == Elem::F64 ? CUDA_R_64F : CUDA_R_32F; }

  // C = op(A) op(B), column-major, leading dimensions h (every operand here has h rows).
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const void* a, cudaDataType at,
            const void* b, cudaDataType bt, void* c, cudaDataType ct) {
    const Libs& x = cublas();
    const double one64 = 1, zero64 = 0;
    const float one32 = 1, zero32 = 0;
    bool f64 = e_ == Elem::F64;
    // fp32 stays fp32 (no TF32, whatever NVIDIA_TF32_OVERRIDE says); bf16 accumulates in fp32.
    cublasComputeType_t compute = f64               ? CUBLAS_COMPUTE_64F
                                  : e_ == Elem::F32 ? CUBLAS_COMPUTE_32F_PEDANTIC
                                                    : CUBLAS_COMPUTE_32F;
    const int ld = static_cast<int>(h_);
    check(x.cublasGemmEx(blas_, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                         f64 ? static_cast<const void*>(&one64) : &one32, a, at, ld, b, bt, ld,
                         f64 ? static_cast<const void*>(&zero64) : &zero32, c, ct, ld, compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }

  void* weight(int64_t l) const { return weights_ + l * h_ * h_ * storage_bytes(e_); }
  void* bias(int64_t l) const { return bias_ + l * h_ * accum_bytes(e_); }
  void* act(int32_t mb, int64_t l) const {
    return acts_ + (static_cast<int64_t>(mb) * (layers_ + 1) + l) * rows_ * h_ * storage_bytes(e_);
  }
  void* dzs(int32_t mb, int64_t l) const {
    return dz_ + (static_cast<int64_t>(mb) * layers_ + l) * rows_ * h_ * storage_bytes(e_);
  }
  void* dloss(int32_t mb) const { return dloss_ + static_cast<int64_t>(mb) * rows_ * h_ * storage_bytes(e_); }
  std::byte* grad(int32_t mb, int64_t l) const {
    return grads_ + (static_cast<int64_t>(mb) * layers_ + l) * per_layer_ * accum_bytes(e_);
  }

  DeviceRank& dev_;
  Elem e_;
  int64_t h_, layers_, rows_, m_;
  bool last_;
  uint64_t seed_;
  int64_t per_layer_ = 0;
  cublasHandle_t blas_ = nullptr;
  std::byte *weights_ = nullptr, *bias_ = nullptr, *acts_ = nullptr, *dz_ = nullptr, *dloss_ = nullptr,
            *grads_ = nullptr;
  std::byte *z_ = nullptr, *scratch_ = nullptr, *acc_ = nullptr;
  double *wide_ = nullptr, *partials_ = nullptr, *loss_ = nullptr;
};

}  // namespace

std::unique_ptr<Stage> make_mlp_cuda_stage(const StageConfig& config, int32_t stage, DeviceRank& dev) {
  return std::make_unique<MlpCudaStage>(config, stage, dev);
}

}  // namespace schedrt::cuda
