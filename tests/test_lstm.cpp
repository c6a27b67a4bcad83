// tests/test_lstm.cpp — the LSTM: its fused step (lstm_cell op, every CPU kernel) against finite
// differences and the composed step, finite differences through a 2-layer bidirectional stack, the three
// paths (fused, composed, sequence) against each other, every lstm_cell kernel against the naive
// reference, a hand-computed answer with PyTorch's equations, PyTorch's parameter layout, and errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/random.h"
#include "nn/lstm.h"
#include "tests/rnn_test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// lstm_cell's inputs at random: gi, gh [N, 4H] (wide enough that every gate saturates somewhere), c [N, H].
std::vector<Tensor> random_cell_inputs(int64_t N, int64_t H, DType dtype) {
  return {uniform({N, 4 * H}, -2, 2).to(dtype).requires_grad_(), uniform({N, 4 * H}, -2, 2).to(dtype).requires_grad_(),
          uniform({N, H}, -1.5, 1.5).to(dtype).requires_grad_()};
}

Tensor fused_cell(const std::vector<Tensor>& in) { return lstm_cell(in[0], in[1], in[2]); }
Tensor composed_cell(const std::vector<Tensor>& in) { return lstm_cell_composed(in[0], in[1], in[2]); }

}  // namespace

TEST_CASE("lstm_cell: finite differences through every CPU kernel and the composed step (float64)",
          "[lstm][grad]") {
  manual_seed(301);
  const std::vector<Tensor> inputs = random_cell_inputs(3, 4, DType::float64);
  for (const std::string& name : kernels_for("lstm_cell", DeviceType::cpu)) {
    INFO("kernel " << name);
    SelectionReset reset;
    select_kernel("lstm_cell", DeviceType::cpu, name);
    CHECK(gradcheck(fused_cell, inputs) == "");
    CHECK(last_kernel("lstm_cell", DeviceType::cpu) == name);
    CHECK(last_kernel("lstm_cell.backward", DeviceType::cpu) == name);
  }
  CHECK(kernels_for("lstm_cell", DeviceType::cpu).size() >= 2);  // naive and rows_omp at least
  CHECK(gradcheck(composed_cell, inputs) == "");
}

TEST_CASE("lstm_cell: equal to the composed step in value and every gradient", "[lstm]") {
  manual_seed(302);
  const std::vector<Tensor> inputs = random_cell_inputs(3, 5, DType::float64);
  const Tensor w = uniform({2, 3, 5}, -1, 1);  // weighs h' and c' both
  std::vector<std::vector<Tensor>> results;
  for (auto f : {fused_cell, composed_cell}) {
    for (const Tensor& t : inputs) t.zero_grad();
    const Tensor hc = f(inputs);
    REQUIRE(hc.shape() == Shape{2, 3, 5});
    sum(hc * w).backward();
    results.push_back({hc.detach(), inputs[0].grad(), inputs[1].grad(), inputs[2].grad()});
  }
  for (size_t i = 0; i < results[0].size(); ++i) {
    INFO("tensor " << i << " (output (h', c'), grad gi, grad gh, grad c)");
    CHECK(compare(results[0][i], results[1][i], 1e-12, 1e-14) == "");
  }
}

TEST_CASE("LSTM (composed): finite differences through a 2-layer bidirectional stack", "[lstm][grad]") {
  manual_seed(303);
  const int64_t T = 3, N = 2, in = 3, H = 2;
  std::vector<Tensor> inputs = {uniform({T, N, in}, -1, 1).requires_grad_()};
  for (const Tensor& p : random_rnn_params(in, H, 2, true, 4, DType::float64)) inputs.push_back(p);
  auto f = [](const std::vector<Tensor>& t) {
    return lstm(t[0], as_rnn_weights(t, 1), 2, /*bidirectional=*/true, RnnPath::composed);
  };
  CHECK(gradcheck(f, inputs) == "");
  // A single layer, one direction, a longer sequence (gradients through many steps of h and c).
  std::vector<Tensor> inputs2 = {uniform({6, 2, 2}, -1, 1).requires_grad_()};
  for (const Tensor& p : random_rnn_params(2, 3, 1, false, 4, DType::float64)) inputs2.push_back(p);
  auto f2 = [](const std::vector<Tensor>& t) { return lstm(t[0], as_rnn_weights(t, 1), 1, false, RnnPath::composed); };
  CHECK(gradcheck(f2, inputs2) == "");
}

TEST_CASE("LSTM: the fused, composed and sequence paths agree through a stack (float64 and float32)", "[lstm]") {
  manual_seed(304);
  const int64_t T = 5, N = 3, in = 4, H = 3;
  for (DType dtype : {DType::float64, DType::float32}) {
    INFO("dtype " << dtype_name(dtype));
    const double tol = dtype == DType::float64 ? 1e-12 : 5e-5;
    const std::vector<Tensor> params = random_rnn_params(in, H, 2, true, 4, dtype);
    const Tensor x = uniform({T, N, in}, -1, 1).to(dtype);
    const Tensor w = uniform({T, N, 2 * H}, -1, 1).to(dtype);
    std::vector<std::vector<Tensor>> results;
    for (RnnPath path : {RnnPath::fused, RnnPath::composed, RnnPath::sequence}) {
      results.push_back(run_with_grads(
          [path](const Tensor& xs, const std::vector<Tensor>& ps) {
            return lstm(xs, as_rnn_weights(ps), 2, /*bidirectional=*/true, path);
          },
          x, params, w, Device::cpu()));
      REQUIRE(results.back()[0].shape() == Shape{T, N, 2 * H});
    }
    CHECK(last_kernel("lstm_sequence.backward", DeviceType::cpu) == "naive");
    for (size_t p = 1; p < results.size(); ++p)
      for (size_t i = 0; i < results[0].size(); ++i) {
        INFO((p == 1 ? "composed" : "sequence") << " against fused: " << rnn_tensor_name(i));
        CHECK(compare(results[p][i], results[0][i], tol, tol) == "");
      }
  }
}

TEST_CASE("lstm_cell: every kernel matches the naive reference", "[lstm]") {
  manual_seed(305);
  const int64_t N = 5, H = 7;  // odd sizes: no kernel may assume multiples of anything
  const std::vector<Tensor> inputs = random_cell_inputs(N, H, DType::float32);
  const Tensor w = uniform({2, N, H}, -1, 1, DType::float32);
  auto run = [&](Device d) {
    std::vector<Tensor> in = leaves_on(inputs, d);
    const Tensor hc = lstm_cell(in[0], in[1], in[2]);
    sum(hc * w.to(d)).backward();
    return std::vector<Tensor>{hc.detach(), in[0].grad(), in[1].grad(), in[2].grad()};
  };
  std::vector<Tensor> ref;
  {
    SelectionReset reset;
    select_kernel("lstm_cell", DeviceType::cpu, "naive");
    ref = run(Device::cpu());
    REQUIRE(last_kernel("lstm_cell", DeviceType::cpu) == "naive");
  }
  for_each_kernel("lstm_cell", [&](Device d, const std::string& name) {
    const std::vector<Tensor> got = run(d);
    CHECK(last_kernel("lstm_cell", d.type) == name);
    CHECK(last_kernel("lstm_cell.backward", d.type) == name);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("tensor " << i << " (output (h', c'), grad gi, grad gh, grad c)");
      CHECK(compare(got[i], ref[i], 1e-5, 1e-6) == "");
    }
  });
}

TEST_CASE("LSTM: PyTorch's equations, hand-computed over two steps with set weights", "[lstm]") {
  // input_size 1, hidden 1, gates (i, f, g, o); x = (1, 0).
  //   W_ih = (ln 3, 0, ln 2, 0), W_hh = (0, 0, 0, 1), b_ih = 0, b_hh = (0, ln 3, 0, 0)
  // Step 1 (h = c = 0): a = (ln 3, ln 3, ln 2, 0), so i = 3/4, f = 3/4, g = tanh(ln 2) = 3/5, o = 1/2
  //   c1 = f * 0 + i * g = 9/20,  h1 = o * tanh(c1) = tanh(0.45) / 2
  // Step 2 (x = 0): a = (0, ln 3, 0, h1), so i = 1/2, f = 3/4, g = 0, o = sigmoid(h1)
  //   c2 = 3/4 * 9/20 + 0 = 0.3375 (the forget gate keeps three quarters of c1),  h2 = sigmoid(h1) tanh(c2)
  const double ln2 = std::log(2.0), ln3 = std::log(3.0);
  const double h1 = std::tanh(0.45) / 2, h2 = sigmoid(h1) * std::tanh(0.3375);
  for (RnnPath path : {RnnPath::fused, RnnPath::composed, RnnPath::sequence}) {
    INFO("path " << rnn_path_name(path));
    LSTM layer(1, 1, 1, false, path);
    copy_(layer.weights[0].w_ih, from_vector({ln3, 0, ln2, 0}, {4, 1}));
    copy_(layer.weights[0].w_hh, from_vector({0, 0, 0, 1}, {4, 1}));
    copy_(layer.weights[0].b_ih, from_vector({0, 0, 0, 0}, {4}));
    copy_(layer.weights[0].b_hh, from_vector({0, ln3, 0, 0}, {4}));
    const std::vector<double> y = layer(from_vector({1, 0}, {2, 1, 1})).to_vector<double>();
    REQUIRE(y.size() == 2);
    CHECK(y[0] == Approx(h1).epsilon(1e-6));
    CHECK(y[1] == Approx(h2).epsilon(1e-6));
  }
}

TEST_CASE("LSTM: a bidirectional layer's reverse half reads the sequence backwards", "[lstm]") {
  // The reverse direction's first step is t = T-1, from zero states: its output there is
  // o * tanh(i * g) with the gates of x_{T-1} (and the biases), computed here by hand.
  manual_seed(306);
  const int64_t T = 4, N = 2, in = 3, H = 2;
  LSTM layer(in, H, 1, /*bidirectional=*/true);
  const Tensor x = uniform({T, N, in}, -1, 1, DType::float32);
  const Tensor y = layer(x);
  REQUIRE(y.shape() == Shape{T, N, 2 * H});
  const LstmWeights& rw = layer.weights[1];
  const std::vector<double> wih = rw.w_ih.to_vector<double>(), bih = rw.b_ih.to_vector<double>(),
                            bhh = rw.b_hh.to_vector<double>(), xs = x.to_vector<double>(), ys = y.to_vector<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < H; ++j) {
      auto a = [&](int gate) {
        double v = bih[gate * H + j] + bhh[gate * H + j];
        for (int64_t k = 0; k < in; ++k) v += wih[(gate * H + j) * in + k] * xs[((T - 1) * N + n) * in + k];
        return v;
      };
      const double c = sigmoid(a(0)) * std::tanh(a(2));
      INFO("sample " << n << " unit " << j);
      CHECK(ys[((T - 1) * N + n) * 2 * H + H + j] == Approx(sigmoid(a(3)) * std::tanh(c)).epsilon(1e-5).margin(1e-6));
    }
}

TEST_CASE("LSTM: PyTorch's parameter names, shapes and initialisation range", "[lstm]") {
  manual_seed(307);
  LSTM layer(10, 16, 2, /*bidirectional=*/true);
  const NamedTensors params = layer.named_parameters();
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"weight_ih_l0", {64, 10}},         {"weight_hh_l0", {64, 16}},         {"bias_ih_l0", {64}},
      {"bias_hh_l0", {64}},               {"weight_ih_l0_reverse", {64, 10}}, {"weight_hh_l0_reverse", {64, 16}},
      {"bias_ih_l0_reverse", {64}},       {"bias_hh_l0_reverse", {64}},       {"weight_ih_l1", {64, 32}},
      {"weight_hh_l1", {64, 16}},         {"bias_ih_l1", {64}},               {"bias_hh_l1", {64}},
      {"weight_ih_l1_reverse", {64, 32}}, {"weight_hh_l1_reverse", {64, 16}}, {"bias_ih_l1_reverse", {64}},
      {"bias_hh_l1_reverse", {64}}};
  REQUIRE(params.size() == expected.size());
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i].first);
    CHECK(params[i].first == expected[i].first);
    CHECK(params[i].second.shape() == expected[i].second);
    const std::vector<double> v = params[i].second.to_vector<double>();
    double lo = 1, hi = -1;
    for (double e : v) lo = std::min(lo, e), hi = std::max(hi, e);
    CHECK(lo >= -0.25);  // 1/sqrt(16)
    CHECK(hi <= 0.25);
    CHECK(hi - lo > 0.4);  // spread over the range, not a constant
  }
  CHECK(layer.describe() == "LSTM(10 -> 16, 2 layers, bidirectional, auto)");
  CHECK(layer(zeros({3, 2, 10})).shape() == Shape{3, 2, 32});
}

TEST_CASE("LSTM and lstm_cell: argument errors name the shapes", "[lstm]") {
  LSTM layer(4, 3);
  CHECK_THROWS_WITH(layer(zeros({2, 5})), Catch::Contains("expected input [T, N, 4]"));
  CHECK_THROWS_WITH(layer(zeros({0, 1, 4})), Catch::Contains("no time steps"));
  CHECK_THROWS_WITH(lstm_cell(zeros({2, 12}), zeros({2, 9}), zeros({2, 3})), Catch::Contains("[N, 4H] = [2, 12]"));
  CHECK_THROWS_WITH(lstm_cell(zeros({2, 12}), zeros({2, 12}), zeros({2, 3}, DType::float64)),
                    Catch::Contains("lstm_cell"));
  CHECK_THROWS_WITH(parse_lstm_path("cudnn"), Catch::Contains("expected fused or composed"));
  CHECK(parse_lstm_path("sequence") == RnnPath::sequence);
}

TEST_CASE("cuda: lstm_cell kernels against the CPU naive reference", "[cuda][lstm]") {
  if (!minidl::testing::have_gpu()) return;
  manual_seed(308);
  const Device gpu = Device::cuda(0);
  for (int64_t N : {1, 33, 128}) {
    for (int64_t H : {1, 7, 128}) {
      INFO("N " << N << " H " << H);
      const std::vector<Tensor> inputs = random_cell_inputs(N, H, DType::float32);
      const Tensor w = uniform({2, N, H}, -1, 1, DType::float32);
      std::vector<std::vector<Tensor>> results;
      for (Device d : {Device::cpu(), gpu}) {
        SelectionReset reset;
        select_kernel("lstm_cell", DeviceType::cpu, "naive");
        std::vector<Tensor> in = leaves_on(inputs, d);
        const Tensor hc = lstm_cell(in[0], in[1], in[2]);
        sum(hc * w.to(d)).backward();
        results.push_back({hc.detach(), in[0].grad(), in[1].grad(), in[2].grad()});
      }
      CHECK(last_kernel("lstm_cell", DeviceType::cuda) == "elementwise");
      CHECK(last_kernel("lstm_cell.backward", DeviceType::cuda) == "elementwise");
      for (size_t i = 0; i < results[0].size(); ++i) CHECK(compare(results[1][i], results[0][i], 1e-5, 1e-6) == "");
    }
  }
}
