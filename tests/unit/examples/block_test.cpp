// The transformer block of examples/stages: input and weight gradients against central finite
// differences (fp64), split B + W equal to the fused backward bit for bit, fp32 against fp64,
// determinism, and its registration under `block`.

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "block.h"

using namespace schedrt;
using block_example::Block;

namespace {

StageConfig config(int32_t stages, Dtype dtype = Dtype::F64) {
  StageConfig c;
  c.stage = "block";
  c.hidden = 4;
  c.layers = 2;
  c.batch = 5;
  c.dtype = dtype;
  c.seed = 7;
  c.num_stages = stages;
  c.microbatches = 1;
  return c;
}

std::vector<double> input(size_t n) {
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = block_example::uniform(99, 5, i);
  return x;
}

// max |a - b| / max |b|: central differences at h = 1e-5 are accurate to about 1e-10 of the
// gradient's scale, so the tolerance below leaves a wide margin while a wrong term (a missing
// residual, a transposed weight) is off by O(1).
double rel_error(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i)
    diff = std::max(diff, std::abs(got[i] - want[i])), scale = std::max(scale, std::abs(want[i]));
  return diff / scale;
}

// Central differences of `objective` with respect to every entry of `values`.
template <class F> std::vector<double> finite_differences(std::vector<double>& values, F objective) {
  std::vector<double> out(values.size());
  const double h = 1e-5;
  for (size_t i = 0; i < values.size(); ++i) {
    double keep = values[i];
    values[i] = keep + h;
    double up = objective();
    values[i] = keep - h;
    double down = objective();
    values[i] = keep;
    out[i] = (up - down) / (2 * h);
  }
  return out;
}

std::vector<double> gradient(const Stage& s) {
  std::vector<std::byte> g(s.gradient_bytes());
  s.reduce_gradients({0}, g.data());
  return s.gradient_values(g.data());
}

}  // namespace

TEST_CASE("the last stage's input and weight gradients match central finite differences of the loss") {
  Block<double> st(config(2), 1);  // the last stage: reads its input, computes the loss
  std::vector<double> x = input(20);
  auto loss = [&] {
    st.forward(0, x.data(), nullptr);
    return st.loss(0);
  };
  loss();
  std::vector<double> dx(20);
  st.backward_input(0, nullptr, dx.data());
  st.backward_weight(0);
  std::vector<double> dw = gradient(st);
  REQUIRE(dw.size() == st.parameters().size());
  CHECK(rel_error(dx, finite_differences(x, loss)) < 1e-8);
  CHECK(rel_error(dw, finite_differences(st.parameters(), loss)) < 1e-8);
}

TEST_CASE("a middle stage's gradients match finite differences of a weighted sum of its output") {
  Block<double> st(config(3), 1);
  std::vector<double> x = input(20), y(20), c(20);
  for (size_t i = 0; i < c.size(); ++i) c[i] = block_example::uniform(5, 6, i);
  auto objective = [&] {
    st.forward(0, x.data(), y.data());
    double sum = 0;
    for (size_t i = 0; i < y.size(); ++i) sum += c[i] * y[i];
    return sum;
  };
  objective();
  std::vector<double> dx(20);
  st.backward_input(0, c.data(), dx.data());
  st.backward_weight(0);
  std::vector<double> dw = gradient(st);
  CHECK(rel_error(dx, finite_differences(x, objective)) < 1e-8);
  CHECK(rel_error(dw, finite_differences(st.parameters(), objective)) < 1e-8);
}

TEST_CASE("the first stage makes its input from the seed; B then W equals the fused backward bit for bit") {
  StageConfig c = config(2);
  c.microbatches = 2;
  Block<double> a(c, 0), b(c, 0);
  std::vector<double> ya(20), yb(20), ga(20, 0.25), gb(20, 0.25);
  for (int32_t mb = 0; mb < 2; ++mb) {
    a.forward(mb, nullptr, ya.data());
    b.forward(mb, nullptr, yb.data());
    CHECK(ya == yb);
    a.backward_input(mb, ga.data(), nullptr);
    a.backward_weight(mb);
    b.backward(mb, gb.data(), nullptr);
  }
  std::vector<double> sa(a.parameters().size()), sb(sa.size());
  a.reduce_gradients({0, 1}, sa.data());
  b.reduce_gradients({0, 1}, sb.data());
  CHECK(sa == sb);
}

TEST_CASE("fp32 follows fp64 to within fp32 rounding") {
  auto d = make_stage(config(1, Dtype::F64), 0), f = make_stage(config(1, Dtype::F32), 0);
  d->forward(0, nullptr, nullptr);
  f->forward(0, nullptr, nullptr);
  CHECK(std::abs(d->loss(0) - f->loss(0)) < 1e-5 * std::abs(d->loss(0)));
  d->backward(0, nullptr, nullptr);
  f->backward(0, nullptr, nullptr);
  CHECK(rel_error(gradient(*f), gradient(*d)) < 1e-4);
}

TEST_CASE("block.cpp registers the stage as `block`, with a sequential reference, in host memory") {
  const StageInfo* info = find_stage("block", StageMemory::Host);
  REQUIRE(info);
  CHECK(info->has_reference);
  CHECK(has_sequential_reference("block"));
  CHECK(find_stage("block", StageMemory::Device) == nullptr);
  CHECK_THROWS_WITH(make_stage(config(1, Dtype::BF16), 0), "the block stage computes in fp64 or fp32, not bf16");
}

TEST_CASE("each stage builds the layers the model's partition gives it; without one, `layers` everywhere") {
  StageConfig c = config(4);
  c.layers_per_stage = {1, 3, 0, 2};
  // Per block: LN1 and LN2 (2 x 2d), Wq Wk Wv Wo (4 d^2), W1 and c1 (4d^2 + 4d), W2 and c2 (4d^2 + d).
  const size_t d = 4, per_block = 4 * d + 4 * d * d + 4 * d * d + 4 * d + 4 * d * d + d;
  for (int32_t s = 0; s < 4; ++s) {
    auto st = make_stage(c, s);
    CHECK(c.layers_of(s) == c.layers_per_stage[static_cast<size_t>(s)]);
    CHECK(st->gradient_bytes() ==
          static_cast<size_t>(c.layers_per_stage[static_cast<size_t>(s)]) * per_block * sizeof(double));
  }
  // A stage of 0 blocks passes its input on and has no gradient.
  Block<double> empty(c, 2);
  std::vector<double> x = input(20), y(20);
  empty.forward(0, x.data(), y.data());
  CHECK(y == x);
  c.layers_per_stage.clear();
  CHECK(make_stage(c, 1)->gradient_bytes() == 2 * per_block * sizeof(double));
}
