// The mlp stage: layers_of(stage) x (Linear(h, h) + tanh) on `batch` rows per microbatch, weights
// and data from the seed, mean-squared-error loss on the last stage. B computes only the input
// gradient (and keeps dL/dz of every layer), W only the weight gradient from what B kept, BW
// both. Every loop runs in a fixed order, and microbatch gradients are kept apart and summed in
// microbatch order at the end of the step, so a pipelined run and a sequential one give
// identical bits. A checkpointed forward keeps only its input: `checkpoint` overwrites the layers'
// outputs with NaN (the buffers are allocated once, so no memory is returned to the system; the
// NaNs make a missing or wrong recomputation show in every gradient), `recompute` runs the layers
// again from the input, the same loops in the same order, so the bits are those of the forward.

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "stages/stages_internal.h"

namespace schedrt {

namespace {

template <class T> class MlpStage final : public Stage {
 public:
  MlpStage(const StageConfig& c, int32_t stage)
      : h_(static_cast<size_t>(c.hidden)), layers_(static_cast<size_t>(c.layers_of(stage))),
        rows_(static_cast<size_t>(c.batch)), stage_(stage), last_(stage + 1 == c.num_stages),
        microbatches_(c.microbatches), seed_(c.seed) {
    size_t per_layer = h_ * h_ + h_;
    weights_.resize(layers_ * per_layer);
    T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(h_)));
    for (size_t l = 0; l < layers_; ++l) {
      uint64_t stream = 1000 + static_cast<uint64_t>(stage) * 1000 + l;
      T* w = weights_.data() + l * per_layer;
      for (size_t i = 0; i < h_ * h_; ++i) w[i] = static_cast<T>(uniform_hash(seed_, stream, i)) * scale;
      for (size_t i = 0; i < h_; ++i) w[h_ * h_ + i] = static_cast<T>(0.1 * uniform_hash(seed_, stream, h_ * h_ + i));
    }
    size_t m = static_cast<size_t>(microbatches_), act = rows_ * h_;
    acts_.assign(m * (layers_ + 1) * act, T(0));
    dz_.assign(m * layers_ * act, T(0));
    dloss_.assign(last_ ? m * act : 0, T(0));
    grads_.assign(m * layers_ * per_layer, T(0));
    loss_.assign(m, 0.0);
    scratch_.resize(2 * act);
  }

  size_t boundary_bytes() const override { return rows_ * h_ * sizeof(T); }
  size_t gradient_bytes() const override { return layers_ * (h_ * h_ + h_) * sizeof(T); }
  double loss(int32_t mb) const override { return loss_[static_cast<size_t>(mb)]; }

  void forward(int32_t mb, const void* in, void* out) override {
    size_t n = rows_ * h_;
    T* x0 = act(mb, 0);
    if (in) {
      std::memcpy(x0, in, n * sizeof(T));
    } else {
      for (size_t i = 0; i < n; ++i) x0[i] = static_cast<T>(uniform_hash(seed_, 1, static_cast<uint64_t>(mb) * n + i));
    }
    run_layers(mb);
    const T* y = act(mb, layers_);
    if (out) {
      std::memcpy(out, y, n * sizeof(T));
      return;
    }
    // Last stage: loss_mb = mean((y - t)^2); the step's loss is the mean over microbatches, so
    // dL/dy = 2 (y - t) / (n m).
    T* g = dloss_.data() + static_cast<size_t>(mb) * n;
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      T t = static_cast<T>(0.5 * uniform_hash(seed_, 2, static_cast<uint64_t>(mb) * n + i));
      T d = y[i] - t;
      sum += static_cast<double>(d) * static_cast<double>(d);
      g[i] = static_cast<T>(2) * d / static_cast<T>(static_cast<double>(n) * microbatches_);
    }
    loss_[static_cast<size_t>(mb)] = sum / static_cast<double>(n);
  }

  void checkpoint(int32_t mb) override {
    const size_t n = rows_ * h_;
    for (size_t l = 1; l <= layers_; ++l) std::fill(act(mb, l), act(mb, l) + n, std::numeric_limits<T>::quiet_NaN());
  }

  void recompute(int32_t mb) override { run_layers(mb); }

  void backward_input(int32_t mb, const void* grad_out, void* grad_in) override {
    size_t n = rows_ * h_;
    const T* g = grad_out ? static_cast<const T*>(grad_out) : dloss_.data() + static_cast<size_t>(mb) * n;
    T* next = scratch_.data();
    for (size_t l = layers_; l-- > 0;) {
      const T* y = act(mb, l + 1);
      T* dz = dzs(mb, l);
      for (size_t i = 0; i < n; ++i) dz[i] = g[i] * (T(1) - y[i] * y[i]);
      if (l == 0 && !grad_in) break;
      const T* w = weight(l);
      for (size_t r = 0; r < rows_; ++r)
        for (size_t i = 0; i < h_; ++i) {
          T s = 0;
          for (size_t o = 0; o < h_; ++o) s += dz[r * h_ + o] * w[o * h_ + i];
          next[r * h_ + i] = s;
        }
      g = next;
      next = next == scratch_.data() ? scratch_.data() + n : scratch_.data();
    }
    if (grad_in) std::memcpy(grad_in, g, n * sizeof(T));
  }

  void backward_weight(int32_t mb) override {
    size_t per_layer = h_ * h_ + h_;
    for (size_t l = 0; l < layers_; ++l) {
      const T* dz = dzs(mb, l);
      const T* x = act(mb, l);
      T* dw = grads_.data() + (static_cast<size_t>(mb) * layers_ + l) * per_layer;
      T* db = dw + h_ * h_;
      for (size_t o = 0; o < h_; ++o) {
        for (size_t i = 0; i < h_; ++i) {
          T s = 0;
          for (size_t r = 0; r < rows_; ++r) s += dz[r * h_ + o] * x[r * h_ + i];
          dw[o * h_ + i] = s;
        }
        T s = 0;
        for (size_t r = 0; r < rows_; ++r) s += dz[r * h_ + o];
        db[o] = s;
      }
    }
  }

  // The layers of microbatch mb from its input act(mb, 0): each layer's output act(mb, l + 1).
  void run_layers(int32_t mb) {
    for (size_t l = 0; l < layers_; ++l) {
      const T* x = act(mb, l);
      T* y = act(mb, l + 1);
      const T* w = weight(l);
      const T* b = w + h_ * h_;
      for (size_t r = 0; r < rows_; ++r)
        for (size_t o = 0; o < h_; ++o) {
          T z = b[o];
          for (size_t i = 0; i < h_; ++i) z += x[r * h_ + i] * w[o * h_ + i];
          y[r * h_ + o] = std::tanh(z);
        }
    }
  }

  void reduce_gradients(const std::vector<int32_t>& mbs, void* out) const override {
    size_t count = layers_ * (h_ * h_ + h_);
    T* o = static_cast<T*>(out);
    std::fill(o, o + count, T(0));
    for (size_t k = 0; k < mbs.size(); ++k) {
      const T* g = grads_.data() + static_cast<size_t>(mbs[k]) * count;
      if (k == 0) std::memcpy(o, g, count * sizeof(T));
      else
        for (size_t i = 0; i < count; ++i) o[i] += g[i];
    }
  }

  void add_gradients(const void* a, const void* b, void* out) const override {
    size_t count = layers_ * (h_ * h_ + h_);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    for (size_t i = 0; i < count; ++i) o[i] = x[i] + y[i];
  }

  void perturb(size_t i, double delta) { weights_[i] += static_cast<T>(delta); }
  size_t num_weights() const { return weights_.size(); }

  std::vector<double> gradient_values(const void* grads) const override {
    size_t count = layers_ * (h_ * h_ + h_);
    const T* g = static_cast<const T*>(grads);
    return std::vector<double>(g, g + count);
  }

 private:
  T* act(int32_t mb, size_t l) { return acts_.data() + (static_cast<size_t>(mb) * (layers_ + 1) + l) * rows_ * h_; }
  T* dzs(int32_t mb, size_t l) { return dz_.data() + (static_cast<size_t>(mb) * layers_ + l) * rows_ * h_; }
  const T* weight(size_t l) const { return weights_.data() + l * (h_ * h_ + h_); }

  size_t h_, layers_, rows_;
  int32_t stage_;
  bool last_;
  int32_t microbatches_;
  uint64_t seed_;
  std::vector<T> weights_, acts_, dz_, dloss_, grads_, scratch_;
  std::vector<double> loss_;
};

}  // namespace

size_t perturb_mlp_weight(Stage& stage, size_t index, double delta) {
  if (auto* s = dynamic_cast<MlpStage<double>*>(&stage)) return s->perturb(index, delta), s->num_weights();
  if (auto* s = dynamic_cast<MlpStage<float>*>(&stage)) return s->perturb(index, delta), s->num_weights();
  return 0;
}

std::unique_ptr<Stage> make_mlp_stage(const StageConfig& config, int32_t stage) {
  if (config.dtype == Dtype::F32) return std::make_unique<MlpStage<float>>(config, stage);
  return std::make_unique<MlpStage<double>>(config, stage);
}

}  // namespace schedrt
