// The mlp stage: gradients against finite differences, B + W = BW bit for bit, determinism.

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "schedrt/stage.h"
#include "stages/stages_internal.h"

using namespace schedrt;

namespace {

StageConfig config(int32_t stages, Dtype dtype = Dtype::F64) {
  StageConfig c;
  c.hidden = 6;
  c.layers = 2;
  c.batch = 3;
  c.dtype = dtype;
  c.seed = 11;
  c.num_stages = stages;
  c.microbatches = 1;
  return c;
}

template <class T> std::vector<double> gradient(Stage& s) {
  std::vector<std::byte> g(s.gradient_bytes());
  s.reduce_gradients({0}, g.data());
  return s.gradient_values(g.data());
}

}  // namespace

TEST_CASE("weight gradients match central finite differences of the loss (fp64)") {
  auto st = make_stage(config(1), 0);  // first and last stage: makes its input, computes the loss
  st->forward(0, nullptr, nullptr);
  st->backward(0, nullptr, nullptr);
  std::vector<double> g = gradient<double>(*st);
  const double h = 1e-6;
  size_t n = perturb_mlp_weight(*st, 0, 0);
  REQUIRE(n == g.size());
  int checked = 0;
  for (size_t i = 0; i < n; i += 7) {
    perturb_mlp_weight(*st, i, h);
    st->forward(0, nullptr, nullptr);
    double up = st->loss(0);
    perturb_mlp_weight(*st, i, -2 * h);
    st->forward(0, nullptr, nullptr);
    double down = st->loss(0);
    perturb_mlp_weight(*st, i, h);
    double numeric = (up - down) / (2 * h);
    CHECK(g[i] == doctest::Approx(numeric).epsilon(1e-6).scale(1e-3));
    ++checked;
  }
  CHECK(checked > 10);
}

TEST_CASE("the input gradient B writes matches finite differences (fp64)") {
  StageConfig c = config(2);
  auto last = make_stage(c, 1);
  std::vector<double> x(static_cast<size_t>(c.hidden * c.batch));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<double>(i));
  last->forward(0, x.data(), nullptr);
  std::vector<double> dx(x.size());
  last->backward_input(0, nullptr, dx.data());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] += h;
    last->forward(0, x.data(), nullptr);
    double up = last->loss(0);
    x[i] -= 2 * h;
    last->forward(0, x.data(), nullptr);
    double down = last->loss(0);
    x[i] += h;
    CHECK(dx[i] == doctest::Approx((up - down) / (2 * h)).epsilon(1e-6).scale(1e-3));
  }
}

TEST_CASE("B then W gives the same bits as BW, and two stages built alike agree") {
  for (Dtype d : {Dtype::F64, Dtype::F32}) {
    StageConfig c = config(1, d);
    auto a = make_stage(c, 0), b = make_stage(c, 0);
    a->forward(0, nullptr, nullptr);
    b->forward(0, nullptr, nullptr);
    CHECK(a->loss(0) == b->loss(0));
    a->backward_input(0, nullptr, nullptr);
    a->backward_weight(0);
    b->backward(0, nullptr, nullptr);
    std::vector<std::byte> ga(a->gradient_bytes()), gb(b->gradient_bytes());
    a->reduce_gradients({0}, ga.data());
    b->reduce_gradients({0}, gb.data());
    CHECK(ga == gb);
  }
}

TEST_CASE("gradients are summed in the order given, not the order computed") {
  StageConfig c = config(1);
  c.microbatches = 3;
  auto a = make_stage(c, 0), b = make_stage(c, 0);
  for (int mb : {0, 1, 2}) a->forward(mb, nullptr, nullptr), a->backward(mb, nullptr, nullptr);
  for (int mb : {2, 0, 1}) b->forward(mb, nullptr, nullptr), b->backward(mb, nullptr, nullptr);
  std::vector<std::byte> ga(a->gradient_bytes()), gb(b->gradient_bytes());
  a->reduce_gradients({0, 1, 2}, ga.data());
  b->reduce_gradients({0, 1, 2}, gb.data());
  CHECK(ga == gb);
}

TEST_CASE("fp32 gradients agree with fp64 to single precision") {
  auto d = make_stage(config(1, Dtype::F64), 0), f = make_stage(config(1, Dtype::F32), 0);
  for (auto* s : {d.get(), f.get()}) s->forward(0, nullptr, nullptr), s->backward(0, nullptr, nullptr);
  std::vector<double> gd = gradient<double>(*d), gf = gradient<float>(*f);
  REQUIRE(gd.size() == gf.size());
  for (size_t i = 0; i < gd.size(); ++i) CHECK(gf[i] == doctest::Approx(gd[i]).epsilon(1e-4).scale(1e-4));
}
