// Why the GPU mlp stage's --check tolerances are what they are, measured on the CPU: an emulation
// of the GPU stage's arithmetic (storage rounded to fp32 or bf16 at exactly the points where the
// GPU stores tensors, fp32 accumulation, fp32 tanh) against the CPU reference in fp64. cuBLAS sums
// in another order than these loops, which changes the last bits of each dot product, not the
// size of the error, which the storage rounding dominates. (The device and the CPU stage draw their
// numbers from one function, stages/seed_hash.h.)

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cuda/tolerance.h"
#include "run_internal.h"
#include "stages/stages_internal.h"

using namespace schedrt;

namespace {

float to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);                // round to nearest, ties to even
  u &= 0xffff0000u;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

struct Sizes {
  int32_t stages, hidden, layers, batch, microbatches;
};

enum class Mode { F64Reversed, F32, BF16 };

// The GPU stage's model (stages/cuda/mlp_kernels.cu, mlp_cuda.cpp) run sequentially: per stage
// and layer W (T), bias (A); activations, dz and input gradients stored in T; pre-activations and
// weight gradients in A (float, or double for fp64). F64Reversed sums every dot product in the
// opposite order to the CPU stage's, as a stand-in for cuBLAS's own order.
template <class A> class Emulation {
 public:
  Emulation(const Sizes& z, Mode mode, uint64_t seed)
      : z_(z), bf16_(mode == Mode::BF16), reverse_(mode == Mode::F64Reversed), seed_(seed) {
    const bool bf16 = bf16_;
    size_t h = static_cast<size_t>(z.hidden);
    double scale = 1.0 / std::sqrt(static_cast<double>(h));
    w_.resize(static_cast<size_t>(z.stages * z.layers));
    b_ = w_;
    for (int32_t s = 0; s < z.stages; ++s)
      for (int32_t l = 0; l < z.layers; ++l) {
        uint64_t stream = 1000 + static_cast<uint64_t>(s) * 1000 + static_cast<uint64_t>(l);
        auto& w = w_[static_cast<size_t>(s * z.layers + l)];
        auto& b = b_[static_cast<size_t>(s * z.layers + l)];
        for (size_t i = 0; i < h * h; ++i) {
          double v = uniform_hash(seed, stream, i);
          if (bf16) w.push_back(to_bf16(static_cast<float>(v * scale)));
          else w.push_back(static_cast<A>(static_cast<A>(v) * static_cast<A>(scale)));
        }
        for (size_t o = 0; o < h; ++o) b.push_back(static_cast<A>(0.1 * uniform_hash(seed, stream, h * h + o)));
      }
  }

  A store(A v) const { return bf16_ ? to_bf16(static_cast<float>(v)) : v; }
  // Index k of n in the summation order.
  size_t at(size_t k, size_t n) const { return reverse_ ? n - 1 - k : k; }

  // Loss and per-stage gradients (dW then db per layer, summed over microbatches in order).
  void run(double* loss, std::vector<std::vector<double>>* grads) {
    const size_t h = static_cast<size_t>(z_.hidden), rows = static_cast<size_t>(z_.batch), n = rows * h;
    const size_t L = static_cast<size_t>(z_.layers);
    std::vector<std::vector<A>> acc(static_cast<size_t>(z_.stages), std::vector<A>(L * (h * h + h), A(0)));
    double total = 0;
    for (int32_t mb = 0; mb < z_.microbatches; ++mb) {
      // acts[s][l]: input of layer l of stage s (l = L: the stage's output).
      std::vector<std::vector<std::vector<A>>> acts(static_cast<size_t>(z_.stages));
      std::vector<A> x(n);
      for (size_t i = 0; i < n; ++i)
        x[i] = store(static_cast<A>(uniform_hash(seed_, 1, static_cast<uint64_t>(mb) * n + i)));
      for (int32_t s = 0; s < z_.stages; ++s) {
        acts[static_cast<size_t>(s)].push_back(x);
        for (size_t l = 0; l < L; ++l) {
          const auto& w = w_[static_cast<size_t>(s) * L + l];
          const auto& b = b_[static_cast<size_t>(s) * L + l];
          std::vector<A> y(n);
          for (size_t r = 0; r < rows; ++r)
            for (size_t o = 0; o < h; ++o) {
              A zsum = 0;
              for (size_t k = 0; k < h; ++k) zsum += x[r * h + at(k, h)] * w[o * h + at(k, h)];
              y[r * h + o] = store(std::tanh(zsum + b[o]));
            }
          x = y;
          acts[static_cast<size_t>(s)].push_back(x);
        }
      }
      std::vector<A> g(n);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        A t = store(static_cast<A>(0.5 * uniform_hash(seed_, 2, static_cast<uint64_t>(mb) * n + i)));
        A d = x[i] - t;
        sum += static_cast<double>(d) * static_cast<double>(d);
        g[i] = store(A(2) * d / static_cast<A>(static_cast<double>(n) * z_.microbatches));
      }
      total += sum / static_cast<double>(n);
      for (int32_t s = z_.stages - 1; s >= 0; --s)
        for (size_t l = L; l-- > 0;) {
          const auto& w = w_[static_cast<size_t>(s) * L + l];
          const auto& y = acts[static_cast<size_t>(s)][l + 1];
          const auto& xin = acts[static_cast<size_t>(s)][l];
          std::vector<A> dz(n), next(n);
          for (size_t i = 0; i < n; ++i) dz[i] = store(g[i] * (A(1) - y[i] * y[i]));
          A* dw = acc[static_cast<size_t>(s)].data() + l * (h * h + h);
          for (size_t o = 0; o < h; ++o) {
            for (size_t i = 0; i < h; ++i) {
              A t = 0;
              for (size_t k = 0; k < rows; ++k) t += dz[at(k, rows) * h + o] * xin[at(k, rows) * h + i];
              dw[o * h + i] += t;
            }
            A t = 0;
            for (size_t k = 0; k < rows; ++k) t += dz[at(k, rows) * h + o];
            dw[h * h + o] += t;
          }
          for (size_t r = 0; r < rows; ++r)
            for (size_t i = 0; i < h; ++i) {
              A t = 0;
              for (size_t k = 0; k < h; ++k) t += dz[r * h + at(k, h)] * w[at(k, h) * h + i];
              next[r * h + i] = store(t);
            }
          g = next;
        }
    }
    *loss = total / z_.microbatches;
    grads->clear();
    for (const auto& a : acc) grads->emplace_back(a.begin(), a.end());
  }

 private:
  Sizes z_;
  bool bf16_, reverse_;
  uint64_t seed_;
  std::vector<std::vector<A>> w_, b_;
};

const int32_t kStageToRank[64] = {};

// The comparison run.cpp makes: per stage max |g - ref| / max |ref|, the maximum over stages.
double max_rel(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want) {
  double worst = 0;
  for (size_t s = 0; s < want.size(); ++s) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < want[s].size(); ++i) {
      diff = std::max(diff, std::abs(got[s][i] - want[s][i]));
      scale = std::max(scale, std::abs(want[s][i]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

Reference reference(const Sizes& z, Dtype dtype) {
  ProgramInfo info;
  info.ranks = 1;
  info.stages = z.stages;
  info.microbatches = z.microbatches;
  info.stage_to_rank = kStageToRank;
  StageConfig c;
  c.hidden = z.hidden;
  c.layers = z.layers;
  c.batch = z.batch;
  c.dtype = dtype;
  c.seed = 1;
  c.num_stages = z.stages;
  c.microbatches = z.microbatches;
  return run_reference(info, c);
}

}  // namespace

TEST_CASE("the emulation is the CPU stage's model: in fp32 it matches the CPU fp32 stage") {
  Sizes z{3, 32, 2, 4, 4};
  Reference cpu32 = reference(z, Dtype::F32);
  Emulation<float> emu(z, Mode::F32, 1);
  double loss = 0;
  std::vector<std::vector<double>> grads;
  emu.run(&loss, &grads);
  // Only the bias's place in the sum (first on the CPU, last on the GPU) and tanh vs tanhf differ.
  CHECK(max_rel(grads, cpu32.gradients) < 1e-5);
  CHECK(std::abs(loss - cpu32.loss) / cpu32.loss < 1e-6);
}

TEST_CASE("fp64, fp32 and bf16 against the fp64 reference stay well inside the --check tolerances") {
  // The sizes scripts/gpu-check and the GPU tests check with, and a small one.
  for (Sizes z : {Sizes{4, 64, 2, 8, 8}, Sizes{8, 256, 2, 32, 8}}) {
    Reference ref = reference(z, Dtype::F64);
    for (Mode mode : {Mode::F64Reversed, Mode::F32, Mode::BF16}) {
      double loss = 0;
      std::vector<std::vector<double>> grads;
      if (mode == Mode::F64Reversed) Emulation<double>(z, mode, 1).run(&loss, &grads);
      else Emulation<float>(z, mode, 1).run(&loss, &grads);
      double rel = max_rel(grads, ref.gradients);
      double loss_rel = std::abs(loss - ref.loss) / ref.loss;
      Dtype dtype = mode == Mode::BF16 ? Dtype::BF16 : mode == Mode::F32 ? Dtype::F32 : Dtype::F64;
      double tolerance = cuda::check_tolerance(dtype);
      MESSAGE(to_string(dtype) << " stages " << z.stages << " hidden " << z.hidden << ": max rel grad diff " << rel
                               << ", loss rel diff " << loss_rel << " (tolerance " << tolerance << ")");
      // A margin below the tolerance (x3 bf16, x100 otherwise), so that cuBLAS's order fits too.
      double margin = mode == Mode::BF16 ? 3 : 100;
      CHECK(rel < tolerance / margin);
      CHECK(loss_rel < tolerance / margin);
    }
  }
}
