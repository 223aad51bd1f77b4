#pragma once
// A pre-norm transformer-style block as a schedrt stage (a stage of your own, written against
// schedrt/stage.h only): per block, on T = `batch` tokens of width d = `hidden`,
//
//   x2 = x + Attn(LN1(x))        single-head causal self-attention, Wq, Wk, Wv, Wo: d x d
//   y  = x2 + MLP(LN2(x2))       Linear(d, 4d) + SiLU + Linear(4d, d)
//
// layers_of(stage) blocks on each pipeline stage (the spec's `model` partition, as `schedc check`
// prints it, else the runtime block's `layers` on every stage; a stage of 0 blocks passes its
// input on). Stage 0 makes its microbatch's tokens from the seed, standing in for an embedding;
// the last stage computes a mean-squared-error loss against seeded targets, standing in for a
// head. fp64 or fp32 (the class is a template on the scalar). The backward is split as a zero-bubble schedule wants it:
// B computes the input gradient and keeps the gradient at every weight's output; W computes the weight gradients from
// those and the activations F kept. Every loop runs in a fixed order, and microbatch gradients are kept apart and
// summed in microbatch order at the end of the step (a left fold), so a pipelined run and --check's sequential one give
// identical bits.
//
// block.cpp registers it as `block`; tests/unit/examples/block_test.cpp checks its gradients
// against central finite differences.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "schedrt/stage.h"

namespace block_example {

/// Uniform in [-1, 1), from (seed, stream, index): the same numbers on every rank and process.
inline double uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ (stream + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
               i * 0x94d049bb133111ebull;
  for (int k = 0; k < 2; ++k) {  // splitmix64's finaliser, twice
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
  }
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

template <class T> class Block final : public schedrt::Stage {
 public:
  Block(const schedrt::StageConfig& c, int32_t stage)
      : d_(static_cast<size_t>(c.hidden)), f_(4 * d_), n_(static_cast<size_t>(c.batch)),
        blocks_(static_cast<size_t>(c.layers_of(stage))), last_(stage + 1 == c.num_stages),
        m_(static_cast<size_t>(c.microbatches)), seed_(c.seed) {
    per_block_ = 4 * d_ + 4 * d_ * d_ + d_ * f_ + f_ + f_ * d_ + d_;
    params_.resize(blocks_ * per_block_);
    for (size_t l = 0; l < blocks_; ++l) {
      uint64_t stream = 1000 + static_cast<uint64_t>(stage) * 100 + l;
      T* p = params_.data() + l * per_block_;
      size_t i = 0;
      auto fill = [&](T* w, size_t count, double scale, double offset) {
        for (size_t k = 0; k < count; ++k, ++i) w[k] = static_cast<T>(offset + scale * uniform(seed_, stream, i));
      };
      const double sd = 1 / std::sqrt(static_cast<double>(d_)), sf = 1 / std::sqrt(static_cast<double>(f_));
      fill(g1(p), d_, 0.1, 1), fill(b1(p), d_, 0.1, 0);
      fill(wq(p), d_ * d_, sd, 0), fill(wk(p), d_ * d_, sd, 0), fill(wv(p), d_ * d_, sd, 0),
          fill(wo(p), d_ * d_, sd, 0);
      fill(g2(p), d_, 0.1, 1), fill(b2(p), d_, 0.1, 0);
      fill(w1(p), d_ * f_, sd, 0), fill(c1(p), f_, 0.1, 0), fill(w2(p), f_ * d_, sf, 0), fill(c2(p), d_, 0.1, 0);
    }
    saved_.resize(m_ * blocks_);
    for (Saved& s : saved_) s.resize(n_, d_, f_);
    grads_.assign(m_ * blocks_ * per_block_, T(0));
    dloss_.assign(last_ ? m_ * n_ * d_ : 0, T(0));
    loss_.assign(m_, 0.0);
    out_.assign(m_ * n_ * d_, T(0));
    tmp_.assign(n_ * std::max(f_, n_), T(0));
    ga_.assign(n_ * d_, T(0));
  }

  size_t boundary_bytes() const override { return n_ * d_ * sizeof(T); }
  size_t gradient_bytes() const override { return params_.size() * sizeof(T); }
  double loss(int32_t mb) const override { return loss_[static_cast<size_t>(mb)]; }

  void forward(int32_t mb, const void* in, void* out) override {
    const size_t nd = n_ * d_, b = static_cast<size_t>(mb);
    std::vector<T> x(nd);
    if (in) {
      std::memcpy(x.data(), in, nd * sizeof(T));
    } else {
      for (size_t i = 0; i < nd; ++i) x[i] = static_cast<T>(uniform(seed_, 1, b * nd + i));
    }
    for (size_t l = 0; l < blocks_; ++l) block_forward(params_.data() + l * per_block_, saved(mb, l), x);
    T* y = out_.data() + b * nd;
    std::copy(x.begin(), x.end(), y);
    if (out) {
      std::memcpy(out, y, nd * sizeof(T));
      return;
    }
    // The step's loss is the mean over microbatches of mean((y - t)^2).
    T* g = dloss_.data() + b * nd;
    double sum = 0;
    for (size_t i = 0; i < nd; ++i) {
      T d = y[i] - static_cast<T>(0.5 * uniform(seed_, 2, b * nd + i));
      sum += static_cast<double>(d) * static_cast<double>(d);
      g[i] = T(2) * d / static_cast<T>(static_cast<double>(nd) * static_cast<double>(m_));
    }
    loss_[b] = sum / static_cast<double>(nd);
  }

  // A checkpointed forward keeps only the stage's input (the first block's x): everything else
  // its blocks saved is released, and recompute() runs them again from that input (the same
  // loops, so the same bits).
  void checkpoint(int32_t mb) override {
    for (size_t l = 0; l < blocks_; ++l) {
      Saved& s = saved(mb, l);
      for (auto* t :
           {&s.xhat1, &s.rstd1, &s.h1, &s.q, &s.k, &s.v, &s.p, &s.a, &s.x2, &s.xhat2, &s.rstd2, &s.h2, &s.u, &s.s})
        std::vector<T>().swap(*t);
      if (l > 0) std::vector<T>().swap(s.x);
    }
  }

  void recompute(int32_t mb) override {
    std::vector<T> x = saved(mb, 0).x;
    for (size_t l = 0; l < blocks_; ++l) {
      Saved& s = saved(mb, l);
      s.resize(n_, d_, f_);
      block_forward(params_.data() + l * per_block_, s, x);
    }
  }

  void backward_input(int32_t mb, const void* grad_out, void* grad_in) override {
    const size_t nd = n_ * d_;
    std::vector<T> g(nd);
    std::memcpy(g.data(), grad_out ? grad_out : dloss_.data() + static_cast<size_t>(mb) * nd, nd * sizeof(T));
    for (size_t l = blocks_; l-- > 0;) block_backward_input(params_.data() + l * per_block_, saved(mb, l), g);
    if (grad_in) std::memcpy(grad_in, g.data(), nd * sizeof(T));
  }

  void backward_weight(int32_t mb) override {
    for (size_t l = 0; l < blocks_; ++l)
      block_backward_weight(saved(mb, l), grads_.data() + (static_cast<size_t>(mb) * blocks_ + l) * per_block_);
  }

  void reduce_gradients(const std::vector<int32_t>& mbs, void* out) const override {
    const size_t count = params_.size();
    T* o = static_cast<T*>(out);
    std::fill(o, o + count, T(0));
    for (size_t k = 0; k < mbs.size(); ++k) {
      const T* g = grads_.data() + static_cast<size_t>(mbs[k]) * count;
      for (size_t i = 0; i < count; ++i) o[i] = k == 0 ? g[i] : o[i] + g[i];
    }
  }

  void add_gradients(const void* a, const void* b, void* out) const override {
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    for (size_t i = 0; i < params_.size(); ++i) o[i] = x[i] + y[i];
  }

  std::vector<double> gradient_values(const void* grads) const override {
    const T* g = static_cast<const T*>(grads);
    return std::vector<double>(g, g + params_.size());
  }

  /// The parameters, block by block (g1 b1 Wq Wk Wv Wo g2 b2 W1 c1 W2 c2), for tests.
  std::vector<T>& parameters() { return params_; }

 private:
  // What one block's F keeps for B and W, and what B keeps for W (the gradients at each weight's
  // output), for one microbatch.
  struct Saved {
    std::vector<T> x, xhat1, rstd1, h1, q, k, v, p, a, x2, xhat2, rstd2, h2, u, s;  // F
    std::vector<T> dh1, dq, dk, dv, dx2, dh2, du, dy;                               // B
    void resize(size_t n, size_t d, size_t f) {
      for (auto* t : {&x, &xhat1, &h1, &q, &k, &v, &a, &x2, &xhat2, &h2, &dh1, &dq, &dk, &dv, &dx2, &dh2, &dy})
        t->assign(n * d, T(0));
      rstd1.assign(n, T(0)), rstd2.assign(n, T(0)), p.assign(n * n, T(0));
      u.assign(n * f, T(0)), s.assign(n * f, T(0)), du.assign(n * f, T(0));
    }
  };

  // Parameter views of one block.
  T* g1(T* p) const { return p; }
  T* b1(T* p) const { return p + d_; }
  T* wq(T* p) const { return p + 2 * d_; }
  T* wk(T* p) const { return wq(p) + d_ * d_; }
  T* wv(T* p) const { return wk(p) + d_ * d_; }
  T* wo(T* p) const { return wv(p) + d_ * d_; }
  T* g2(T* p) const { return wo(p) + d_ * d_; }
  T* b2(T* p) const { return g2(p) + d_; }
  T* w1(T* p) const { return b2(p) + d_; }
  T* c1(T* p) const { return w1(p) + d_ * f_; }
  T* w2(T* p) const { return c1(p) + f_; }
  T* c2(T* p) const { return w2(p) + f_ * d_; }

  Saved& saved(int32_t mb, size_t l) { return saved_[static_cast<size_t>(mb) * blocks_ + l]; }

  // y[r][o] = sum_i x[r][i] w[i][o] (+ bias[o]); x: rows x in, w: in x out.
  static void linear(const T* x, const T* w, const T* bias, T* y, size_t rows, size_t in, size_t out) {
    for (size_t r = 0; r < rows; ++r)
      for (size_t o = 0; o < out; ++o) {
        T z = bias ? bias[o] : T(0);
        for (size_t i = 0; i < in; ++i) z += x[r * in + i] * w[i * out + o];
        y[r * out + o] = z;
      }
  }
  // dx[r][i] (+)= sum_o dy[r][o] w[i][o].
  static void linear_dx(const T* dy, const T* w, T* dx, size_t rows, size_t in, size_t out, bool add) {
    for (size_t r = 0; r < rows; ++r)
      for (size_t i = 0; i < in; ++i) {
        T z = 0;
        for (size_t o = 0; o < out; ++o) z += dy[r * out + o] * w[i * out + o];
        dx[r * in + i] = add ? dx[r * in + i] + z : z;
      }
  }
  // dw[i][o] = sum_r x[r][i] dy[r][o]; dbias[o] = sum_r dy[r][o].
  static void linear_dw(const T* x, const T* dy, T* dw, T* dbias, size_t rows, size_t in, size_t out) {
    for (size_t i = 0; i < in; ++i)
      for (size_t o = 0; o < out; ++o) {
        T z = 0;
        for (size_t r = 0; r < rows; ++r) z += x[r * in + i] * dy[r * out + o];
        dw[i * out + o] = z;
      }
    if (!dbias) return;
    for (size_t o = 0; o < out; ++o) {
      T z = 0;
      for (size_t r = 0; r < rows; ++r) z += dy[r * out + o];
      dbias[o] = z;
    }
  }

  void layer_norm(const T* x, const T* g, const T* b, T* xhat, T* rstd, T* h) const {
    for (size_t r = 0; r < n_; ++r) {
      const T* xr = x + r * d_;
      T mean = 0, var = 0;
      for (size_t i = 0; i < d_; ++i) mean += xr[i];
      mean /= static_cast<T>(d_);
      for (size_t i = 0; i < d_; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      var /= static_cast<T>(d_);
      rstd[r] = T(1) / std::sqrt(var + static_cast<T>(1e-5));
      for (size_t i = 0; i < d_; ++i) {
        xhat[r * d_ + i] = (xr[i] - mean) * rstd[r];
        h[r * d_ + i] = g[i] * xhat[r * d_ + i] + b[i];
      }
    }
  }
  // dx (+)= the input gradient of a layer norm with gain g, from dh.
  void layer_norm_dx(const T* dh, const T* g, const T* xhat, const T* rstd, T* dx) const {
    for (size_t r = 0; r < n_; ++r) {
      T mean_d = 0, mean_dx = 0;
      for (size_t i = 0; i < d_; ++i) {
        T dxhat = dh[r * d_ + i] * g[i];
        mean_d += dxhat;
        mean_dx += dxhat * xhat[r * d_ + i];
      }
      mean_d /= static_cast<T>(d_), mean_dx /= static_cast<T>(d_);
      for (size_t i = 0; i < d_; ++i) {
        T dxhat = dh[r * d_ + i] * g[i];
        dx[r * d_ + i] += rstd[r] * (dxhat - mean_d - xhat[r * d_ + i] * mean_dx);
      }
    }
  }
  void layer_norm_dw(const T* dh, const T* xhat, T* dg, T* db) const {
    for (size_t i = 0; i < d_; ++i) {
      T sg = 0, sb = 0;
      for (size_t r = 0; r < n_; ++r) sg += dh[r * d_ + i] * xhat[r * d_ + i], sb += dh[r * d_ + i];
      dg[i] = sg, db[i] = sb;
    }
  }

  void block_forward(T* p, Saved& s, std::vector<T>& x) {
    const size_t n = n_, d = d_;
    s.x = x;
    layer_norm(s.x.data(), g1(p), b1(p), s.xhat1.data(), s.rstd1.data(), s.h1.data());
    linear(s.h1.data(), wq(p), nullptr, s.q.data(), n, d, d);
    linear(s.h1.data(), wk(p), nullptr, s.k.data(), n, d, d);
    linear(s.h1.data(), wv(p), nullptr, s.v.data(), n, d, d);
    // Causal softmax(q k^T / sqrt(d)) row by row; p[i][j] = 0 for j > i.
    const T scale = T(1) / std::sqrt(static_cast<T>(d));
    for (size_t i = 0; i < n; ++i) {
      T* pi = s.p.data() + i * n;
      T top = -std::numeric_limits<T>::infinity();
      for (size_t j = 0; j <= i; ++j) {
        T z = 0;
        for (size_t e = 0; e < d; ++e) z += s.q[i * d + e] * s.k[j * d + e];
        pi[j] = z * scale;
        top = std::max(top, pi[j]);
      }
      T sum = 0;
      for (size_t j = 0; j <= i; ++j) sum += pi[j] = std::exp(pi[j] - top);
      for (size_t j = 0; j < n; ++j) pi[j] = j <= i ? pi[j] / sum : T(0);
    }
    linear(s.p.data(), s.v.data(), nullptr, s.a.data(), n, n, d);  // a = p v
    linear(s.a.data(), wo(p), nullptr, s.x2.data(), n, d, d);
    for (size_t i = 0; i < n * d; ++i) s.x2[i] += s.x[i];
    layer_norm(s.x2.data(), g2(p), b2(p), s.xhat2.data(), s.rstd2.data(), s.h2.data());
    linear(s.h2.data(), w1(p), c1(p), s.u.data(), n, d, f_);
    for (size_t i = 0; i < n * f_; ++i) s.s[i] = s.u[i] / (T(1) + std::exp(-s.u[i]));  // SiLU
    linear(s.s.data(), w2(p), c2(p), x.data(), n, f_, d);
    for (size_t i = 0; i < n * d; ++i) x[i] += s.x2[i];
  }

  // g: dL/dy on entry, dL/dx on return; keeps in `s` what W needs.
  void block_backward_input(T* p, Saved& s, std::vector<T>& g) {
    const size_t n = n_, d = d_;
    s.dy = g;
    T* ds = tmp_.data();  // dL/d silu output, n x f
    linear_dx(s.dy.data(), w2(p), ds, n, f_, d, false);
    for (size_t i = 0; i < n * f_; ++i) {
      T sig = T(1) / (T(1) + std::exp(-s.u[i]));
      s.du[i] = ds[i] * sig * (T(1) + s.u[i] * (T(1) - sig));
    }
    linear_dx(s.du.data(), w1(p), s.dh2.data(), n, d, f_, false);
    s.dx2 = s.dy;  // the residual
    layer_norm_dx(s.dh2.data(), g2(p), s.xhat2.data(), s.rstd2.data(), s.dx2.data());
    // Attention: do = dx2 (residual x2 = x + o).
    T* da = ga_.data();
    linear_dx(s.dx2.data(), wo(p), da, n, d, d, false);
    const T scale = T(1) / std::sqrt(static_cast<T>(d));
    std::fill(s.dv.begin(), s.dv.end(), T(0));
    std::fill(s.dq.begin(), s.dq.end(), T(0));
    std::fill(s.dk.begin(), s.dk.end(), T(0));
    T* dp = tmp_.data();  // one row of dL/dp, then of dL/dscores
    for (size_t i = 0; i < n; ++i) {
      const T* pi = s.p.data() + i * n;
      T dot = 0;
      for (size_t j = 0; j <= i; ++j) {
        T z = 0;
        for (size_t e = 0; e < d; ++e) z += da[i * d + e] * s.v[j * d + e];
        dp[j] = z;
        dot += pi[j] * z;
      }
      for (size_t j = 0; j <= i; ++j) dp[j] = pi[j] * (dp[j] - dot) * scale;
      for (size_t j = 0; j <= i; ++j)
        for (size_t e = 0; e < d; ++e) {
          s.dq[i * d + e] += dp[j] * s.k[j * d + e];
          s.dk[j * d + e] += dp[j] * s.q[i * d + e];
        }
    }
    // dv[j] = sum_i p[i][j] da[i], in i order.
    for (size_t j = 0; j < n; ++j)
      for (size_t e = 0; e < d; ++e) {
        T z = 0;
        for (size_t i = j; i < n; ++i) z += s.p[i * n + j] * da[i * d + e];
        s.dv[j * d + e] = z;
      }
    linear_dx(s.dq.data(), wq(p), s.dh1.data(), n, d, d, false);
    linear_dx(s.dk.data(), wk(p), s.dh1.data(), n, d, d, true);
    linear_dx(s.dv.data(), wv(p), s.dh1.data(), n, d, d, true);
    g = s.dx2;
    layer_norm_dx(s.dh1.data(), g1(p), s.xhat1.data(), s.rstd1.data(), g.data());
  }

  void block_backward_weight(Saved& s, T* gp) {
    const size_t n = n_, d = d_;
    layer_norm_dw(s.dh1.data(), s.xhat1.data(), g1(gp), b1(gp));
    linear_dw(s.h1.data(), s.dq.data(), wq(gp), nullptr, n, d, d);
    linear_dw(s.h1.data(), s.dk.data(), wk(gp), nullptr, n, d, d);
    linear_dw(s.h1.data(), s.dv.data(), wv(gp), nullptr, n, d, d);
    linear_dw(s.a.data(), s.dx2.data(), wo(gp), nullptr, n, d, d);
    layer_norm_dw(s.dh2.data(), s.xhat2.data(), g2(gp), b2(gp));
    linear_dw(s.h2.data(), s.du.data(), w1(gp), c1(gp), n, d, f_);
    linear_dw(s.s.data(), s.dy.data(), w2(gp), c2(gp), n, f_, d);
  }

  size_t d_, f_, n_, blocks_;
  bool last_;
  size_t m_;
  uint64_t seed_;
  size_t per_block_ = 0;
  std::vector<T> params_, grads_, dloss_, out_, tmp_, ga_;
  std::vector<Saved> saved_;
  std::vector<double> loss_;
};

/// The factory SCHEDRT_REGISTER_STAGE names: fp64 or fp32 by the dtype.
inline std::unique_ptr<schedrt::Stage> make_block(const schedrt::StageConfig& c, int32_t stage,
                                                  const schedrt::StageEnv&) {
  if (c.dtype == schedrt::Dtype::F32) return std::make_unique<Block<float>>(c, stage);
  if (c.dtype == schedrt::Dtype::F64) return std::make_unique<Block<double>>(c, stage);
  throw schedrt::Error("the block stage computes in fp64 or fp32, not " + schedrt::to_string(c.dtype));
}

}  // namespace block_example
