#include "nn/lstm.h"

#include "ops/ops.h"

namespace minidl {

namespace {
constexpr const char* kLayer = "LSTM";
constexpr const char* kSequenceOp = "lstm_sequence";
}  // namespace

RnnPath parse_lstm_path(const std::string& name) { return parse_rnn_path(name, kLayer, kSequenceOp); }

RnnPath resolve_lstm_path(RnnPath path, const Device& device) { return resolve_rnn_path(path, device, kSequenceOp); }

std::string describe_lstm_path(RnnPath path, const Device& device) {
  return describe_rnn_path(path, device, kSequenceOp);
}

Tensor lstm_cell_composed(const Tensor& gi, const Tensor& gh, const Tensor& c) {
  const int64_t H = c.size(-1);
  const Tensor a = gi + gh;  // the pre-activations of the four gates, [N, 4H]
  const Tensor i = sigmoid(a.slice(1, 0, H));
  const Tensor f = sigmoid(a.slice(1, H, 2 * H));
  const Tensor g = tanh(a.slice(1, 2 * H, 3 * H));
  const Tensor o = sigmoid(a.slice(1, 3 * H, 4 * H));
  const Tensor c_new = f * c + i * g;
  const Tensor h_new = o * tanh(c_new);
  return concat({h_new.unsqueeze(0), c_new.unsqueeze(0)}, 0);
}

Tensor lstm_direction(const Tensor& x, const LstmWeights& w, bool reverse, RnnPath path) {
  if (path == RnnPath::automatic) path = RnnPath::fused;  // the per-step path that automatic stands for here
  MINIDL_CHECK(path != RnnPath::sequence, "LSTM: lstm_direction runs the per-step paths only; the sequence path "
               "computes whole stacks through lstm()");
  RnnStep cell;
  cell.state_rows = 2;  // (h, c)
  const bool fused = path == RnnPath::fused;
  cell.step = [fused](const Tensor& gi, const Tensor& gh, const Tensor& hc) {
    const Tensor c = hc.select(0, 1);
    return fused ? lstm_cell(gi, gh, c) : lstm_cell_composed(gi, gh, c);
  };
  return rnn_direction(x, w, reverse, cell, kLayer);
}

Tensor lstm(const Tensor& x, const std::vector<LstmWeights>& weights, int num_layers, bool bidirectional,
            RnnPath path) {
  auto direction = [path](const Tensor& input, const LstmWeights& w, bool reverse) {
    return lstm_direction(input, w, reverse, path);
  };
  return rnn_stack(x, weights, num_layers, bidirectional, resolve_lstm_path(path, x.device()), direction,
                   lstm_sequence, kLayer);
}

LSTM::LSTM(int64_t in, int64_t hidden, int layers, bool bidir, RnnPath p)
    : RnnLayer(kLayer, in, hidden, layers, bidir, p, /*gates=*/4) {}

Tensor LSTM::forward(const Tensor& x) {
  check_input(x);
  return lstm(x, weights, num_layers, bidirectional, path);
}

}  // namespace minidl
