// tests/test_gru.cpp — the GRU: its fused step (gru_cell op and kernels) against the composed step, finite
// differences through both and through a 2-layer bidirectional stack, every gru_cell kernel against the
// naive reference, a hand-computed answer, PyTorch's parameter layout, and argument errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/random.h"
#include "nn/gru.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// Random float64 weights of one layer and direction, as leaves that require grad.
GruWeights random_weights(int64_t in, int64_t H, DType dtype = DType::float64) {
  GruWeights w;
  w.w_ih = uniform({3 * H, in}, -0.8, 0.8).to(dtype).requires_grad_();
  w.w_hh = uniform({3 * H, H}, -0.8, 0.8).to(dtype).requires_grad_();
  w.b_ih = uniform({3 * H}, -0.5, 0.5).to(dtype).requires_grad_();
  w.b_hh = uniform({3 * H}, -0.5, 0.5).to(dtype).requires_grad_();
  return w;
}

std::vector<Tensor> flatten_weights(const std::vector<GruWeights>& weights) {
  std::vector<Tensor> out;
  for (const GruWeights& w : weights) out.insert(out.end(), {w.w_ih, w.w_hh, w.b_ih, w.b_hh});
  return out;
}

std::vector<GruWeights> unflatten_weights(const std::vector<Tensor>& t, size_t first) {
  std::vector<GruWeights> out;
  for (size_t i = first; i + 3 < t.size(); i += 4) out.push_back({t[i], t[i + 1], t[i + 2], t[i + 3]});
  return out;
}

// A 2-layer bidirectional stack's weights: layer 0 reads `in` features, layer 1 reads 2H.
std::vector<GruWeights> stack_weights(int64_t in, int64_t H, DType dtype = DType::float64) {
  return {random_weights(in, H, dtype), random_weights(in, H, dtype), random_weights(2 * H, H, dtype),
          random_weights(2 * H, H, dtype)};
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

TEST_CASE("gru_cell: finite differences, and equal to the composed step in value and gradient", "[gru][grad]") {
  manual_seed(101);
  const int64_t N = 3, H = 4;
  Tensor gi = uniform({N, 3 * H}, -2, 2).requires_grad_();
  Tensor gh = uniform({N, 3 * H}, -2, 2).requires_grad_();
  Tensor h = uniform({N, H}, -1, 1).requires_grad_();
  auto fused = [](const std::vector<Tensor>& in) { return gru_cell(in[0], in[1], in[2]); };
  auto composed = [](const std::vector<Tensor>& in) { return gru_cell_composed(in[0], in[1], in[2]); };
  CHECK(gradcheck(fused, {gi, gh, h}) == "");
  CHECK(gradcheck(composed, {gi, gh, h}) == "");

  const Tensor w = uniform({N, H}, -1, 1);
  std::vector<Tensor> fused_grads, composed_grads;
  for (int k = 0; k < 2; ++k) {
    for (Tensor* t : {&gi, &gh, &h}) t->zero_grad();
    const Tensor y = k == 0 ? fused({gi, gh, h}) : composed({gi, gh, h});
    sum(y * w).backward();
    (k == 0 ? fused_grads : composed_grads) = {y.detach(), gi.grad(), gh.grad(), h.grad()};
  }
  for (size_t i = 0; i < fused_grads.size(); ++i) {
    INFO("tensor " << i << " (output, grad gi, grad gh, grad h)");
    CHECK(compare(fused_grads[i], composed_grads[i], 1e-12, 1e-14) == "");
  }
}

TEST_CASE("GRU (composed): finite differences through a 2-layer bidirectional stack", "[gru][grad]") {
  manual_seed(102);
  const int64_t T = 3, N = 2, in = 3, H = 2;
  const Tensor x = uniform({T, N, in}, -1, 1).requires_grad_();
  std::vector<Tensor> inputs = {x};
  for (const Tensor& t : flatten_weights(stack_weights(in, H))) inputs.push_back(t);
  auto f = [](const std::vector<Tensor>& t) {
    return gru(t[0], unflatten_weights(t, 1), 2, /*bidirectional=*/true, GruPath::composed);
  };
  CHECK(gradcheck(f, inputs) == "");
  // A single layer, one direction, longer sequence (gradients through many steps of h).
  const Tensor x2 = uniform({6, 2, 2}, -1, 1).requires_grad_();
  std::vector<Tensor> inputs2 = {x2};
  for (const Tensor& t : flatten_weights({random_weights(2, 3)})) inputs2.push_back(t);
  auto f2 = [](const std::vector<Tensor>& t) {
    return gru(t[0], unflatten_weights(t, 1), 1, false, GruPath::composed);
  };
  CHECK(gradcheck(f2, inputs2) == "");
}

TEST_CASE("GRU: the fused and composed paths agree through a stack (float64 and float32)", "[gru]") {
  manual_seed(103);
  const int64_t T = 5, N = 3, in = 4, H = 3;
  for (DType dtype : {DType::float64, DType::float32}) {
    INFO("dtype " << dtype_name(dtype));
    const double tol = dtype == DType::float64 ? 1e-12 : 2e-5;
    const std::vector<GruWeights> weights = stack_weights(in, H, dtype);
    const Tensor x = uniform({T, N, in}, -1, 1).to(dtype).requires_grad_();
    const Tensor w = uniform({T, N, 2 * H}, -1, 1).to(dtype);
    std::vector<std::vector<Tensor>> results;
    for (GruPath path : {GruPath::fused, GruPath::composed}) {
      std::vector<Tensor> leaves = flatten_weights(weights);
      leaves.push_back(x);
      for (Tensor& t : leaves) t.zero_grad();
      const Tensor y = gru(x, weights, 2, true, path);
      REQUIRE(y.shape() == Shape{T, N, 2 * H});
      sum(y * w).backward();
      std::vector<Tensor> r = {y.detach()};
      for (const Tensor& t : leaves) r.push_back(t.grad());
      results.push_back(r);
    }
    for (size_t i = 0; i < results[0].size(); ++i) {
      INFO("tensor " << i << " (0: output, then the gradients of each weight, last: x)");
      CHECK(compare(results[0][i], results[1][i], tol, tol) == "");
    }
  }
}

TEST_CASE("gru_cell: every kernel matches the naive reference", "[gru]") {
  manual_seed(104);
  const int64_t N = 5, H = 7;  // odd sizes: no kernel may assume multiples of anything
  const Tensor gi = uniform({N, 3 * H}, -3, 3, DType::float32);
  const Tensor gh = uniform({N, 3 * H}, -3, 3, DType::float32);
  const Tensor h = uniform({N, H}, -1, 1, DType::float32);
  const Tensor w = uniform({N, H}, -1, 1, DType::float32);
  auto run = [&](Device d, std::vector<Tensor>& out) {
    Tensor a = gi.to(d).detach().requires_grad_(), b = gh.to(d).detach().requires_grad_();
    Tensor c = h.to(d).detach().requires_grad_();
    const Tensor y = gru_cell(a, b, c);
    sum(y * w.to(d)).backward();
    out = {y.detach(), a.grad(), b.grad(), c.grad()};
  };
  std::vector<Tensor> ref;
  {
    SelectionReset reset;
    select_kernel("gru_cell", DeviceType::cpu, "naive");
    run(Device::cpu(), ref);
    REQUIRE(last_kernel("gru_cell", DeviceType::cpu) == "naive");
  }
  for_each_kernel("gru_cell", [&](Device d, const std::string& name) {
    std::vector<Tensor> got;
    run(d, got);
    CHECK(last_kernel("gru_cell", d.type) == name);
    CHECK(last_kernel("gru_cell.backward", d.type) == name);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("tensor " << i << " (output, grad gi, grad gh, grad h)");
      CHECK(compare(got[i], ref[i], 1e-5, 1e-6) == "");
    }
  });
}

TEST_CASE("GRU: hand-computed steps with set weights", "[gru]") {
  // input_size 1, hidden 1; x = (1, 0). Step 1 (h = 0, so gh = b_hh):
  //   r = sigmoid(0 + 0) = 1/2
  //   z = sigmoid(ln 3 + 0) = 3/4                   (W_iz = ln 3)
  //   n = tanh(0 + r * (2 ln 2)) = tanh(ln 2) = 3/5   (b_hn = 2 ln 2: r scales W_hn h + b_hn, PyTorch's form)
  //   h1 = (1 - 3/4) * 3/5 + 3/4 * 0 = 0.15
  // Step 2 (x = 0: gi = b_ih = 0; W_hh = (0, 0, 1)): gh = (0, 0, h1 + 2 ln 2), so
  //   r = 1/2, z = 1/2, n = tanh((0.15 + 2 ln 2) / 2), h2 = (n + 0.15) / 2.
  for (GruPath path : {GruPath::fused, GruPath::composed}) {
    INFO("path " << gru_path_name(path));
    GRU gru_layer(1, 1, 1, false, path);
    const double ln2 = std::log(2.0), ln3 = std::log(3.0);
    copy_(gru_layer.weights[0].w_ih, from_vector({0, ln3, 0}, {3, 1}));
    copy_(gru_layer.weights[0].w_hh, from_vector({0, 0, 1}, {3, 1}));
    copy_(gru_layer.weights[0].b_ih, from_vector({0, 0, 0}, {3}));
    copy_(gru_layer.weights[0].b_hh, from_vector({0, 0, 2 * ln2}, {3}));
    const std::vector<double> y = gru_layer(from_vector({1, 0}, {2, 1, 1})).to_vector<double>();
    REQUIRE(y.size() == 2);
    CHECK(y[0] == Approx(0.15).epsilon(1e-6));
    const double n2 = std::tanh((0.15 + 2 * ln2) / 2);
    CHECK(y[1] == Approx((n2 + 0.15) / 2).epsilon(1e-6));
  }
}

TEST_CASE("GRU: a bidirectional layer's reverse half reads the sequence backwards", "[gru]") {
  // With one input step the reverse direction sees only x_{T-1} at t = T-1: its output there equals a
  // one-step run of its own weights on x_{T-1}, computed here by hand with the equations.
  manual_seed(105);
  const int64_t T = 4, N = 2, in = 3, H = 2;
  GRU layer(in, H, 1, /*bidirectional=*/true);
  const Tensor x = uniform({T, N, in}, -1, 1, DType::float32);
  const Tensor y = layer(x);
  REQUIRE(y.shape() == Shape{T, N, 2 * H});
  const GruWeights& rw = layer.weights[1];
  const std::vector<double> wih = rw.w_ih.to_vector<double>(), bih = rw.b_ih.to_vector<double>(),
                            bhh = rw.b_hh.to_vector<double>(), xs = x.to_vector<double>(), ys = y.to_vector<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < H; ++j) {
      auto gi = [&](int gate) {
        double v = bih[gate * H + j];
        for (int64_t k = 0; k < in; ++k) v += wih[(gate * H + j) * in + k] * xs[((T - 1) * N + n) * in + k];
        return v;
      };
      const double r = sigmoid(gi(0) + bhh[j]), z = sigmoid(gi(1) + bhh[H + j]);
      const double c = std::tanh(gi(2) + r * bhh[2 * H + j]);
      INFO("sample " << n << " unit " << j);
      CHECK(ys[((T - 1) * N + n) * 2 * H + H + j] == Approx((1 - z) * c).epsilon(1e-5).margin(1e-6));
    }
}

TEST_CASE("GRU: PyTorch's parameter names, shapes and initialisation range", "[gru]") {
  manual_seed(106);
  GRU layer(10, 16, 2, /*bidirectional=*/true);
  const NamedTensors params = layer.named_parameters();
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"weight_ih_l0", {48, 10}},         {"weight_hh_l0", {48, 16}},         {"bias_ih_l0", {48}},
      {"bias_hh_l0", {48}},               {"weight_ih_l0_reverse", {48, 10}}, {"weight_hh_l0_reverse", {48, 16}},
      {"bias_ih_l0_reverse", {48}},       {"bias_hh_l0_reverse", {48}},       {"weight_ih_l1", {48, 32}},
      {"weight_hh_l1", {48, 16}},         {"bias_ih_l1", {48}},               {"bias_hh_l1", {48}},
      {"weight_ih_l1_reverse", {48, 32}}, {"weight_hh_l1_reverse", {48, 16}}, {"bias_ih_l1_reverse", {48}},
      {"bias_hh_l1_reverse", {48}}};
  REQUIRE(params.size() == expected.size());
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK(params[i].first == expected[i].first);
    CHECK(params[i].second.shape() == expected[i].second);
    const std::vector<double> v = params[i].second.to_vector<double>();
    double lo = 1, hi = -1;
    for (double e : v) lo = std::min(lo, e), hi = std::max(hi, e);
    INFO(params[i].first);
    CHECK(lo >= -0.25);  // 1/sqrt(16)
    CHECK(hi <= 0.25);
    if (v.size() >= 48) CHECK(hi - lo > 0.4);  // spread over the range, not a constant
  }
  CHECK(layer.describe() == "GRU(10 -> 16, 2 layers, bidirectional, auto)");  // auto: the default path
  CHECK(layer(zeros({3, 2, 10})).shape() == Shape{3, 2, 32});
}

TEST_CASE("GRU and gru_cell: argument errors name the shapes", "[gru]") {
  GRU layer(4, 3);
  CHECK_THROWS_WITH(layer(zeros({2, 5})), Catch::Contains("expected input [T, N, 4]"));
  CHECK_THROWS_WITH(layer(zeros({2, 1, 5})), Catch::Contains("got [2,1,5]"));
  CHECK_THROWS_WITH(layer(zeros({0, 1, 4})), Catch::Contains("no time steps"));
  CHECK_THROWS_WITH(gru_cell(zeros({2, 9}), zeros({2, 8}), zeros({2, 3})), Catch::Contains("[N, 3H] = [2, 9]"));
  CHECK_THROWS_WITH(gru_cell(zeros({2, 9}), zeros({2, 9}), zeros({2, 3}, DType::float64)),
                    Catch::Contains("gru_cell"));
  CHECK_THROWS_WITH(parse_gru_path("cudnn"), Catch::Contains("expected fused or composed"));
  CHECK(parse_gru_path("composed") == GruPath::composed);
}

TEST_CASE("cuda: gru_cell kernels against the CPU naive reference", "[cuda][gru]") {
  if (!minidl::testing::have_gpu()) return;
  manual_seed(107);
  const Device gpu = Device::cuda(0);
  for (int64_t N : {1, 33, 128}) {
    for (int64_t H : {1, 7, 128}) {
      INFO("N " << N << " H " << H);
      const Tensor gi = uniform({N, 3 * H}, -3, 3, DType::float32), gh = uniform({N, 3 * H}, -3, 3, DType::float32);
      const Tensor h = uniform({N, H}, -1, 1, DType::float32), w = uniform({N, H}, -1, 1, DType::float32);
      std::vector<std::vector<Tensor>> results;
      for (Device d : {Device::cpu(), gpu}) {
        SelectionReset reset;
        select_kernel("gru_cell", DeviceType::cpu, "naive");
        Tensor a = gi.to(d).detach().requires_grad_(), b = gh.to(d).detach().requires_grad_();
        Tensor c = h.to(d).detach().requires_grad_();
        const Tensor y = gru_cell(a, b, c);
        sum(y * w.to(d)).backward();
        results.push_back({y.detach(), a.grad(), b.grad(), c.grad()});
      }
      CHECK(last_kernel("gru_cell.backward", DeviceType::cuda) == "elementwise");
      for (size_t i = 0; i < results[0].size(); ++i) CHECK(compare(results[1][i], results[0][i], 1e-5, 1e-6) == "");
    }
  }
}
