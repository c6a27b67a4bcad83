// tests/test_gru_sequence.cpp — the sequence-level GRU op: finite differences through the naive kernel,
// the naive kernel against the GRU layer's composed path (values and every gradient), the reserve
// tagging, argument errors, the GRU layer's "sequence" path, and (GPU) the cuDNN kernel against the CPU
// naive kernel.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "core/random.h"
#include "nn/gru.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// Random weights for a stack, flat in gru_sequence's order, as leaves that require grad; values in
// [-bound, bound) (biases a little less).
std::vector<Tensor> random_params(int64_t in, int64_t H, int layers, bool bidirectional, DType dtype,
                                  double bound = 0.6) {
  const int dirs = bidirectional ? 2 : 1;
  std::vector<Tensor> out;
  for (int k = 0; k < layers; ++k) {
    const int64_t layer_in = k == 0 ? in : H * dirs;
    for (int d = 0; d < dirs; ++d) {
      out.push_back(uniform({3 * H, layer_in}, -bound, bound).to(dtype).requires_grad_());
      out.push_back(uniform({3 * H, H}, -bound, bound).to(dtype).requires_grad_());
      out.push_back(uniform({3 * H}, -0.8 * bound, 0.8 * bound).to(dtype).requires_grad_());
      out.push_back(uniform({3 * H}, -0.8 * bound, 0.8 * bound).to(dtype).requires_grad_());
    }
  }
  return out;
}

std::vector<GruWeights> as_weights(const std::vector<Tensor>& flat) {
  std::vector<GruWeights> out;
  for (size_t i = 0; i + 3 < flat.size(); i += 4) out.push_back({flat[i], flat[i + 1], flat[i + 2], flat[i + 3]});
  return out;
}

// Copies of the tensors on `device`, detached, as fresh leaves that require grad.
std::vector<Tensor> leaves_on(const std::vector<Tensor>& ts, Device device) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.detach().to(device).detach().requires_grad_());
  return out;
}

// y and the gradients of L = sum(y * w) with respect to x and every parameter: {y, grad x, grad p...}.
std::vector<Tensor> run_sequence(const Tensor& x, const std::vector<Tensor>& params, int layers, bool bidirectional,
                                 const Tensor& w, Device device) {
  const Tensor xd = x.detach().to(device).detach().requires_grad_();
  const std::vector<Tensor> pd = leaves_on(params, device);
  const Tensor y = gru_sequence(xd, pd, layers, bidirectional);
  sum(y * w.to(device)).backward();
  std::vector<Tensor> out = {y.detach(), xd.grad()};
  for (const Tensor& p : pd) out.push_back(p.grad());
  return out;
}

std::string tensor_name(size_t i) {
  if (i == 0) return "y";
  if (i == 1) return "grad x";
  const char* names[4] = {"w_ih", "w_hh", "b_ih", "b_hh"};
  return str_cat("grad of parameter ", i - 2, " (", names[(i - 2) % 4], " of layer/direction ", (i - 2) / 4, ")");
}

}  // namespace

TEST_CASE("gru_sequence: finite differences through a 2-layer bidirectional stack (naive, float64)",
          "[gru_sequence][grad]") {
  manual_seed(201);
  const int64_t T = 3, N = 2, in = 3, H = 2;
  const Tensor x = uniform({T, N, in}, -1, 1).requires_grad_();
  std::vector<Tensor> inputs = {x};
  for (const Tensor& p : random_params(in, H, 2, true, DType::float64)) inputs.push_back(p);
  auto f = [](const std::vector<Tensor>& t) {
    return gru_sequence(t[0], std::vector<Tensor>(t.begin() + 1, t.end()), 2, /*bidirectional=*/true);
  };
  CHECK(gradcheck(f, inputs) == "");
  CHECK(last_kernel("gru_sequence", DeviceType::cpu) == "naive");
  CHECK(last_kernel("gru_sequence.backward", DeviceType::cpu) == "naive");
  // One layer, one direction, a longer sequence (gradients through many steps of h).
  const Tensor x2 = uniform({6, 2, 2}, -1, 1).requires_grad_();
  std::vector<Tensor> inputs2 = {x2};
  for (const Tensor& p : random_params(2, 3, 1, false, DType::float64)) inputs2.push_back(p);
  auto f2 = [](const std::vector<Tensor>& t) {
    return gru_sequence(t[0], std::vector<Tensor>(t.begin() + 1, t.end()), 1, false);
  };
  CHECK(gradcheck(f2, inputs2) == "");
}

TEST_CASE("gru_sequence (naive) equals the GRU layer's composed path in value and every gradient (float32)",
          "[gru_sequence]") {
  manual_seed(202);
  struct Case {
    int64_t T, N, in, H;
    int layers;
    bool bidirectional;
  };
  for (const Case& c : {Case{5, 3, 7, 5, 2, true}, Case{7, 1, 3, 9, 1, false}, Case{1, 4, 5, 3, 3, true},
                        Case{4, 5, 2, 1, 2, false}}) {
    INFO("T " << c.T << " N " << c.N << " in " << c.in << " H " << c.H << " layers " << c.layers
              << (c.bidirectional ? " bidirectional" : ""));
    const std::vector<Tensor> params = random_params(c.in, c.H, c.layers, c.bidirectional, DType::float32);
    const Tensor x = uniform({c.T, c.N, c.in}, -1, 1, DType::float32);
    const Tensor w = uniform({c.T, c.N, c.H * (c.bidirectional ? 2 : 1)}, -1, 1, DType::float32);
    const std::vector<Tensor> got = run_sequence(x, params, c.layers, c.bidirectional, w, Device::cpu());
    CHECK(last_kernel("gru_sequence", DeviceType::cpu) == "naive");
    CHECK(last_kernel("gru_sequence.backward", DeviceType::cpu) == "naive");

    const Tensor xr = x.detach().requires_grad_();
    const std::vector<Tensor> pr = leaves_on(params, Device::cpu());
    const Tensor yr = gru(xr, as_weights(pr), c.layers, c.bidirectional, GruPath::composed);
    sum(yr * w).backward();
    std::vector<Tensor> ref = {yr.detach(), xr.grad()};
    for (const Tensor& p : pr) ref.push_back(p.grad());

    REQUIRE(got.size() == ref.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(tensor_name(i));
      CHECK(compare(got[i], ref[i], 1e-4, 1e-5) == "");
    }
  }
}

TEST_CASE("gru_sequence: the GRU layer's sequence path, and every kernel against naive", "[gru_sequence]") {
  manual_seed(203);
  GRU layer(4, 3, 2, /*bidirectional=*/true, GruPath::sequence);
  CHECK(layer.describe() == "GRU(4 -> 3, 2 layers, bidirectional, sequence)");
  CHECK(parse_gru_path("sequence") == GruPath::sequence);
  const Tensor x = uniform({5, 2, 4}, -1, 1, DType::float32);
  const Tensor y_seq = layer(x);
  CHECK(last_kernel("gru_sequence", DeviceType::cpu) == "naive");
  layer.path = GruPath::fused;
  CHECK(compare(y_seq, layer(x), 1e-5, 1e-6) == "");

  // Every registered kernel on every test device (cpu: naive; cuda: cudnn) against naive on the CPU.
  const std::vector<Tensor> params = random_params(5, 4, 2, true, DType::float32);
  const Tensor xs = uniform({3, 3, 5}, -1, 1, DType::float32), w = uniform({3, 3, 8}, -1, 1, DType::float32);
  const std::vector<Tensor> ref = run_sequence(xs, params, 2, true, w, Device::cpu());
  for_each_kernel("gru_sequence", [&](Device d, const std::string& name) {
    const std::vector<Tensor> got = run_sequence(xs, params, 2, true, w, d);
    CHECK(last_kernel("gru_sequence", d.type) == name);
    CHECK(last_kernel("gru_sequence.backward", d.type) == name);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(tensor_name(i));
      CHECK(compare(got[i], ref[i], 1e-4, 1e-5) == "");
    }
  });
}

TEST_CASE("gru_sequence: a backward kernel declines a reserve it did not write", "[gru_sequence]") {
  manual_seed(204);
  const std::vector<Tensor> params = random_params(2, 2, 1, false, DType::float32);
  std::vector<Tensor> p_c;
  for (const Tensor& p : params) p_c.push_back(p.detach());
  const Tensor x = uniform({3, 2, 2}, -1, 1, DType::float32);
  Tensor y = empty({3, 2, 2});
  RnnSequenceReserve reserve;
  dispatch(keys::gru_sequence, Device::cpu(), x, p_c, 1, false, true, y, reserve);
  CHECK(reserve.kernel == "naive");
  REQUIRE(reserve.data.defined());

  Tensor grad_x = empty(x.shape());
  std::vector<Tensor> grad_p;
  for (const Tensor& p : p_c) grad_p.push_back(empty(p.shape()));
  RnnSequenceReserve foreign = reserve;
  foreign.kernel = "cudnn";
  CHECK_THROWS_WITH(dispatch(keys::gru_sequence_backward, Device::cpu(), ones(y.shape()), x, p_c, 1, false, y, foreign,
                             grad_x, grad_p),
                    Catch::Contains("declined"));
  dispatch(keys::gru_sequence_backward, Device::cpu(), ones(y.shape()), x, p_c, 1, false, y, reserve, grad_x, grad_p);
  CHECK(last_kernel("gru_sequence.backward", DeviceType::cpu) == "naive");

  // No gradient wanted: the forward need not keep a reserve.
  RnnSequenceReserve none;
  dispatch(keys::gru_sequence, Device::cpu(), x, p_c, 1, false, false, y, none);
  CHECK_FALSE(none.data.defined());
}

TEST_CASE("gru_sequence: argument errors name the shapes", "[gru_sequence]") {
  const std::vector<Tensor> params = random_params(4, 3, 1, true, DType::float32);
  CHECK_THROWS_WITH(gru_sequence(zeros({2, 5}), params, 1, true), Catch::Contains("gru_sequence"));
  CHECK_THROWS_WITH(gru_sequence(zeros({2, 1, 4}), params, 1, false), Catch::Contains("expected 4 parameters"));
  CHECK_THROWS_WITH(gru_sequence(zeros({2, 1, 5}), params, 1, true), Catch::Contains("w_ih of layer 0"));
  CHECK_THROWS_WITH(gru_sequence(zeros({2, 1, 4}, DType::float64), params, 1, true), Catch::Contains("dtypes differ"));
  CHECK_THROWS_WITH(gru_sequence(zeros({0, 1, 4}), params, 1, true), Catch::Contains("empty input"));
  // Issue 23 item 5: zero layers and hidden size 0 (which crashed the naive kernel when the bench called it
  // directly) are refused by the op.
  CHECK_THROWS_WITH(gru_sequence(zeros({2, 1, 4}), {}, 0, false), "gru_sequence: num_layers must be at least 1, got 0");
  CHECK_THROWS_WITH(gru_sequence(zeros({2, 1, 4}), {zeros({0, 4}), zeros({0, 0}), zeros({0}), zeros({0})}, 1, false),
                    Catch::StartsWith("gru_sequence: w_hh of layer 0 must be [3H, H] with H > 0, got [0,0]"));
  CHECK_THROWS_WITH(gru_cell(zeros({2, 0}), zeros({2, 0}), zeros({2, 0})),
                    "gru_cell: the hidden state [2,0] has size 0 in dim 1; every size must be at least 1");
  CHECK_THROWS_WITH(gru_cell(zeros({0, 9}), zeros({0, 9}), zeros({0, 3})),
                    "gru_cell: the hidden state [0,3] has size 0 in dim 0; every size must be at least 1");
}

TEST_CASE("cuda: gru_sequence cudnn kernel against the CPU naive kernel", "[cuda][gru_sequence]") {
  if (!minidl::testing::have_gpu()) return;
  manual_seed(205);
  struct Case {
    int64_t T, N, in, H;
    int layers;
    bool bidirectional;
  };
  // 1 layer one direction; 2 layers bidirectional with odd sizes; the captcha model's GRU.
  for (const Case& c : {Case{5, 3, 7, 5, 1, false}, Case{6, 5, 9, 7, 2, true}, Case{12, 128, 512, 128, 2, true}}) {
    INFO("T " << c.T << " N " << c.N << " in " << c.in << " H " << c.H << " layers " << c.layers
              << (c.bidirectional ? " bidirectional" : ""));
    // The GRU layer's initialisation range U(-1/sqrt(H), 1/sqrt(H)), but at least 0.3 for the small cases.
    const double bound = std::max(0.3, 1.0 / std::sqrt(static_cast<double>(c.H)));
    const std::vector<Tensor> params = random_params(c.in, c.H, c.layers, c.bidirectional, DType::float32, bound);
    const Tensor x = uniform({c.T, c.N, c.in}, -1, 1, DType::float32);
    const Tensor w = uniform({c.T, c.N, c.H * (c.bidirectional ? 2 : 1)}, -1, 1, DType::float32);
    SelectionReset reset;
    select_kernel("gru_sequence", DeviceType::cpu, "naive");
    const std::vector<Tensor> ref = run_sequence(x, params, c.layers, c.bidirectional, w, Device::cpu());
    const std::vector<Tensor> got = run_sequence(x, params, c.layers, c.bidirectional, w, Device::cuda(0));
    CHECK(last_kernel("gru_sequence", DeviceType::cuda) == "cudnn");
    CHECK(last_kernel("gru_sequence.backward", DeviceType::cuda) == "cudnn");
    // Weight gradients sum T * N terms (12 * 128 in the captcha case): a looser absolute tolerance.
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(tensor_name(i));
      CHECK(compare(got[i], ref[i], 1e-4, i < 2 ? 5e-5 : 2e-4) == "");
    }
  }
}

TEST_CASE("GRU auto path: fused on the CPU, the same numbers as an explicit path", "[gru_sequence]") {
  CHECK(parse_gru_path("auto") == GruPath::automatic);
  CHECK(resolve_gru_path(GruPath::automatic, Device::cpu()) == GruPath::fused);
  CHECK(resolve_gru_path(GruPath::composed, Device::cpu()) == GruPath::composed);
  CHECK(describe_gru_path(GruPath::automatic, Device::cpu()) == "auto: fused");
  manual_seed(31);
  GRU layer(6, 5, 2, /*bidirectional=*/true);
  CHECK(layer.path == GruPath::automatic);  // the default
  const Tensor x = uniform({4, 3, 6}, -1, 1, DType::float32);
  const Tensor y_auto = layer.forward(x).detach();
  layer.path = GruPath::fused;
  CHECK(compare(y_auto, layer.forward(x).detach(), 0, 0) == "");
}

TEST_CASE("cuda: GRU auto path is the sequence op (cuDNN) on a GPU and matches the CPU", "[cuda][gru_sequence]") {
  if (!minidl::testing::have_gpu()) return;
  const Device gpu = Device::cuda(0);
  CHECK(resolve_gru_path(GruPath::automatic, gpu) == GruPath::sequence);
  manual_seed(32);
  GRU layer(10, 8, 2, /*bidirectional=*/true);
  const Tensor x = uniform({5, 4, 10}, -1, 1, DType::float32);
  const Tensor y_cpu = layer.forward(x).detach();
  layer.to(gpu);
  const Tensor y_gpu = layer.forward(x.to(gpu)).detach();
  CHECK(last_kernel("gru_sequence", DeviceType::cuda) == "cudnn");
  CHECK(compare(y_gpu, y_cpu, 1e-4, 1e-5) == "");
}
