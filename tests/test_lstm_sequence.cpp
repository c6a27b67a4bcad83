// tests/test_lstm_sequence.cpp — the sequence-level LSTM op: finite differences through the naive kernel,
// the naive kernel against the LSTM layer's composed path (values and every gradient), every kernel
// against naive, the reserve tagging, argument errors, the layer's "sequence" and "auto" paths, and
// (GPU) the cuDNN kernel against the CPU naive kernel.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "core/random.h"
#include "nn/lstm.h"
#include "tests/rnn_test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

constexpr int64_t kGates = 4;

RnnFunction sequence_op(int layers, bool bidirectional) {
  return [=](const Tensor& x, const std::vector<Tensor>& params) {
    return lstm_sequence(x, params, layers, bidirectional);
  };
}

RnnFunction composed_layer(int layers, bool bidirectional) {
  return [=](const Tensor& x, const std::vector<Tensor>& params) {
    return lstm(x, as_rnn_weights(params), layers, bidirectional, RnnPath::composed);
  };
}

}  // namespace

TEST_CASE("lstm_sequence: finite differences through a 2-layer bidirectional stack (naive, float64)",
          "[lstm_sequence][grad]") {
  manual_seed(401);
  std::vector<Tensor> inputs = {uniform({3, 2, 3}, -1, 1).requires_grad_()};
  for (const Tensor& p : random_rnn_params(3, 2, 2, true, kGates, DType::float64)) inputs.push_back(p);
  auto f = [](const std::vector<Tensor>& t) {
    return lstm_sequence(t[0], std::vector<Tensor>(t.begin() + 1, t.end()), 2, /*bidirectional=*/true);
  };
  CHECK(gradcheck(f, inputs) == "");
  CHECK(last_kernel("lstm_sequence", DeviceType::cpu) == "naive");
  CHECK(last_kernel("lstm_sequence.backward", DeviceType::cpu) == "naive");
  // One layer, one direction, a longer sequence (gradients through many steps of h and c).
  std::vector<Tensor> inputs2 = {uniform({6, 2, 2}, -1, 1).requires_grad_()};
  for (const Tensor& p : random_rnn_params(2, 3, 1, false, kGates, DType::float64)) inputs2.push_back(p);
  auto f2 = [](const std::vector<Tensor>& t) {
    return lstm_sequence(t[0], std::vector<Tensor>(t.begin() + 1, t.end()), 1, false);
  };
  CHECK(gradcheck(f2, inputs2) == "");
}

TEST_CASE("lstm_sequence (naive) equals the LSTM layer's composed path in value and every gradient (float32)",
          "[lstm_sequence]") {
  manual_seed(402);
  struct Case {
    int64_t T, N, in, H;
    int layers;
    bool bidirectional;
  };
  for (const Case& c : {Case{5, 3, 7, 5, 2, true}, Case{7, 1, 3, 9, 1, false}, Case{1, 4, 5, 3, 3, true},
                        Case{4, 5, 2, 1, 2, false}}) {
    INFO("T " << c.T << " N " << c.N << " in " << c.in << " H " << c.H << " layers " << c.layers
              << (c.bidirectional ? " bidirectional" : ""));
    const std::vector<Tensor> params = random_rnn_params(c.in, c.H, c.layers, c.bidirectional, kGates, DType::float32);
    const Tensor x = uniform({c.T, c.N, c.in}, -1, 1, DType::float32);
    const Tensor w = uniform({c.T, c.N, c.H * (c.bidirectional ? 2 : 1)}, -1, 1, DType::float32);
    const std::vector<Tensor> got = run_with_grads(sequence_op(c.layers, c.bidirectional), x, params, w, Device::cpu());
    CHECK(last_kernel("lstm_sequence", DeviceType::cpu) == "naive");
    CHECK(last_kernel("lstm_sequence.backward", DeviceType::cpu) == "naive");
    const std::vector<Tensor> ref =
        run_with_grads(composed_layer(c.layers, c.bidirectional), x, params, w, Device::cpu());
    REQUIRE(got.size() == ref.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(rnn_tensor_name(i));
      CHECK(compare(got[i], ref[i], 1e-4, 1e-5) == "");
    }
  }
}

TEST_CASE("lstm_sequence: the LSTM layer's sequence path, and every kernel against naive", "[lstm_sequence]") {
  manual_seed(403);
  LSTM layer(4, 3, 2, /*bidirectional=*/true, RnnPath::sequence);
  CHECK(layer.describe() == "LSTM(4 -> 3, 2 layers, bidirectional, sequence)");
  const Tensor x = uniform({5, 2, 4}, -1, 1, DType::float32);
  const Tensor y_seq = layer(x);
  CHECK(last_kernel("lstm_sequence", DeviceType::cpu) == "naive");
  layer.path = RnnPath::fused;
  CHECK(compare(y_seq, layer(x), 1e-5, 1e-6) == "");

  // Every registered kernel on every test device (cpu: naive; cuda: cudnn) against naive on the CPU.
  const std::vector<Tensor> params = random_rnn_params(5, 4, 2, true, kGates, DType::float32);
  const Tensor xs = uniform({3, 3, 5}, -1, 1, DType::float32), w = uniform({3, 3, 8}, -1, 1, DType::float32);
  const std::vector<Tensor> ref = run_with_grads(sequence_op(2, true), xs, params, w, Device::cpu());
  for_each_kernel("lstm_sequence", [&](Device d, const std::string& name) {
    const std::vector<Tensor> got = run_with_grads(sequence_op(2, true), xs, params, w, d);
    CHECK(last_kernel("lstm_sequence", d.type) == name);
    CHECK(last_kernel("lstm_sequence.backward", d.type) == name);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(rnn_tensor_name(i));
      CHECK(compare(got[i], ref[i], 1e-4, 1e-5) == "");
    }
  });
}

TEST_CASE("lstm_sequence: a backward kernel declines a reserve it did not write", "[lstm_sequence]") {
  manual_seed(404);
  std::vector<Tensor> p_c;
  for (const Tensor& p : random_rnn_params(2, 2, 1, false, kGates, DType::float32)) p_c.push_back(p.detach());
  const Tensor x = uniform({3, 2, 2}, -1, 1, DType::float32);
  Tensor y = empty({3, 2, 2});
  RnnSequenceReserve reserve;
  dispatch<RnnSequenceKernel>("lstm_sequence", Device::cpu(), x, p_c, 1, false, true, y, reserve);
  CHECK(reserve.kernel == "naive");
  REQUIRE(reserve.data.defined());

  Tensor grad_x = empty(x.shape());
  std::vector<Tensor> grad_p;
  for (const Tensor& p : p_c) grad_p.push_back(empty(p.shape()));
  RnnSequenceReserve foreign = reserve;
  foreign.kernel = "cudnn";
  CHECK_THROWS_WITH(dispatch<RnnSequenceBackwardKernel>("lstm_sequence.backward", Device::cpu(), ones(y.shape()), x,
                                                         p_c, 1, false, y, foreign, grad_x, grad_p),
                    Catch::Contains("declined"));
  // A GRU's naive reserve has the right name but another layout (4 saved values per unit, not 5).
  RnnSequenceReserve gru_sized = reserve;
  gru_sized.data = reserve.data.slice(0, 0, 3 * 2 * 4 * 2);
  CHECK_THROWS_WITH(dispatch<RnnSequenceBackwardKernel>("lstm_sequence.backward", Device::cpu(), ones(y.shape()), x,
                                                         p_c, 1, false, y, gru_sized, grad_x, grad_p),
                    Catch::Contains("declined"));
  dispatch<RnnSequenceBackwardKernel>("lstm_sequence.backward", Device::cpu(), ones(y.shape()), x, p_c, 1, false, y,
                                       reserve, grad_x, grad_p);
  CHECK(last_kernel("lstm_sequence.backward", DeviceType::cpu) == "naive");

  // No gradient wanted: the forward need not keep a reserve.
  RnnSequenceReserve none;
  dispatch<RnnSequenceKernel>("lstm_sequence", Device::cpu(), x, p_c, 1, false, false, y, none);
  CHECK_FALSE(none.data.defined());
}

TEST_CASE("lstm_sequence: argument errors name the shapes", "[lstm_sequence]") {
  const std::vector<Tensor> params = random_rnn_params(4, 3, 1, true, kGates, DType::float32);
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 5}), params, 1, true), Catch::Contains("lstm_sequence"));
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 1, 4}), params, 1, false), Catch::Contains("expected 4 parameters"));
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 1, 5}), params, 1, true), Catch::Contains("w_ih of layer 0"));
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 1, 5}), params, 1, true), Catch::Contains("[12,5]"));
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 1, 4}, DType::float64), params, 1, true), Catch::Contains("dtypes differ"));
  CHECK_THROWS_WITH(lstm_sequence(zeros({0, 1, 4}), params, 1, true), Catch::Contains("empty input"));
  // Issue 23 item 5: zero layers and hidden size 0 are refused by the op, and by the cell.
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 1, 4}), {}, 0, false), "lstm_sequence: num_layers must be at least 1, got 0");
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 1, 4}), {zeros({0, 4}), zeros({0, 0}), zeros({0}), zeros({0})}, 1, false),
                    Catch::StartsWith("lstm_sequence: w_hh of layer 0 must be [4H, H] with H > 0, got [0,0]"));
  CHECK_THROWS_WITH(lstm_cell(zeros({2, 0}), zeros({2, 0}), zeros({2, 0})),
                    "lstm_cell: the cell state [2,0] has size 0 in dim 1; every size must be at least 1");
  // GRU-shaped weights (3H rows) are not an LSTM's.
  const std::vector<Tensor> gru_params = random_rnn_params(4, 3, 1, false, 3, DType::float32);
  CHECK_THROWS_WITH(lstm_sequence(zeros({2, 1, 4}), gru_params, 1, false), Catch::Contains("must be [12,4]"));
}

TEST_CASE("LSTM auto path: fused on the CPU, the same numbers as an explicit path", "[lstm_sequence]") {
  CHECK(parse_lstm_path("auto") == RnnPath::automatic);
  CHECK(resolve_lstm_path(RnnPath::automatic, Device::cpu()) == RnnPath::fused);
  CHECK(describe_lstm_path(RnnPath::automatic, Device::cpu()) == "auto: fused");
  manual_seed(405);
  LSTM layer(6, 5, 2, /*bidirectional=*/true);
  CHECK(layer.path == RnnPath::automatic);  // the default
  const Tensor x = uniform({4, 3, 6}, -1, 1, DType::float32);
  const Tensor y_auto = layer.forward(x).detach();
  layer.path = RnnPath::fused;
  CHECK(compare(y_auto, layer.forward(x).detach(), 0, 0) == "");
}

TEST_CASE("cuda: lstm_sequence cudnn kernel against the CPU naive kernel", "[cuda][lstm_sequence]") {
  if (!minidl::testing::have_gpu()) return;
  manual_seed(406);
  struct Case {
    int64_t T, N, in, H;
    int layers;
    bool bidirectional;
  };
  // 1 layer one direction; 2 layers bidirectional with odd sizes; the captcha model's LSTM.
  for (const Case& c : {Case{5, 3, 7, 5, 1, false}, Case{6, 5, 9, 7, 2, true}, Case{12, 128, 512, 128, 2, true}}) {
    INFO("T " << c.T << " N " << c.N << " in " << c.in << " H " << c.H << " layers " << c.layers
              << (c.bidirectional ? " bidirectional" : ""));
    // The layer's initialisation range U(-1/sqrt(H), 1/sqrt(H)), but at least 0.3 for the small cases.
    const double bound = std::max(0.3, 1.0 / std::sqrt(static_cast<double>(c.H)));
    const std::vector<Tensor> params =
        random_rnn_params(c.in, c.H, c.layers, c.bidirectional, kGates, DType::float32, bound);
    const Tensor x = uniform({c.T, c.N, c.in}, -1, 1, DType::float32);
    const Tensor w = uniform({c.T, c.N, c.H * (c.bidirectional ? 2 : 1)}, -1, 1, DType::float32);
    SelectionReset reset;
    select_kernel("lstm_sequence", DeviceType::cpu, "naive");
    const std::vector<Tensor> ref = run_with_grads(sequence_op(c.layers, c.bidirectional), x, params, w, Device::cpu());
    const std::vector<Tensor> got =
        run_with_grads(sequence_op(c.layers, c.bidirectional), x, params, w, Device::cuda(0));
    CHECK(last_kernel("lstm_sequence", DeviceType::cuda) == "cudnn");
    CHECK(last_kernel("lstm_sequence.backward", DeviceType::cuda) == "cudnn");
    // Weight gradients sum T * N terms (12 * 128 in the captcha case): a looser absolute tolerance.
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(rnn_tensor_name(i));
      CHECK(compare(got[i], ref[i], 1e-4, i < 2 ? 5e-5 : 2e-4) == "");
    }
  }
}

TEST_CASE("cuda: LSTM auto path is the sequence op (cuDNN) on a GPU and matches the CPU", "[cuda][lstm_sequence]") {
  if (!minidl::testing::have_gpu()) return;
  const Device gpu = Device::cuda(0);
  CHECK(resolve_lstm_path(RnnPath::automatic, gpu) == RnnPath::sequence);
  manual_seed(407);
  LSTM layer(10, 8, 2, /*bidirectional=*/true);
  const Tensor x = uniform({5, 4, 10}, -1, 1, DType::float32);
  const Tensor y_cpu = layer.forward(x).detach();
  layer.to(gpu);
  const Tensor y_gpu = layer.forward(x.to(gpu)).detach();
  CHECK(last_kernel("lstm_sequence", DeviceType::cuda) == "cudnn");
  CHECK(compare(y_gpu, y_cpu, 1e-4, 1e-5) == "");
  // The fused path on the GPU (the CUDA lstm_cell kernels), forward and backward, against the CPU's.
  layer.path = RnnPath::fused;
  const Tensor y_fused = layer.forward(x.to(gpu)).detach();
  CHECK(last_kernel("lstm_cell", DeviceType::cuda) == "elementwise");
  CHECK(compare(y_fused, y_cpu, 1e-4, 1e-5) == "");
}
