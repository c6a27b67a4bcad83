// nn/lstm.h — the LSTM layer (long short-term memory, Hochreiter & Schmidhuber 1997, with the forget
// gate of Gers et al. 2000), with PyTorch's equations and parameter layout, multi-layer and bidirectional.
//
// For each time step t of x [T, N, input] (h_{-1} = c_{-1} = 0), per layer and direction:
//   gi = x_t W_ih^T + b_ih,   gh = h_{t-1} W_hh^T + b_hh                 (both [N, 4H]: gates i, f, g, o)
//   i = sigmoid(gi_i + gh_i),  f = sigmoid(gi_f + gh_f),  g = tanh(gi_g + gh_g),  o = sigmoid(gi_o + gh_o)
//   c_t = f * c_{t-1} + i * g,   h_t = o * tanh(c_t)
// The layer's output is h (c stays inside the layer). Parameters, directions, layers and the
// implementations (LSTM::path) are nn/rnn.h's, with G = 4 gate blocks (i, f, g, o) in each weight:
// weight_ih_l{k}{sfx} [4H, in_k], weight_hh_l{k}{sfx} [4H, H], bias_ih_l{k}{sfx} [4H], bias_hh_l{k}{sfx} [4H].
// The paths:
//   fused     one lstm_cell op per step (ops/ops.h); kernels selectable in the dispatch table
//             (--kernel lstm_cell=naive|rows_omp|elementwise)
//   composed  the step written with elementwise ops (lstm_cell_composed)
//   sequence  the whole stack in one lstm_sequence op (ops/ops.h; --kernel lstm_sequence=naive|cudnn)
//   automatic (the default, "auto") sequence on a GPU with an lstm_sequence kernel (cuDNN's), fused on the CPU
// (No projection, no peepholes: PyTorch's proj_size = 0.)
#pragma once
#include <string>
#include <vector>

#include "nn/rnn.h"

namespace minidl {

// "fused" / "composed" / "sequence" / "auto"; throws an Error naming the accepted values otherwise.
RnnPath parse_lstm_path(const std::string& name);
// The path that `path` means for an input on `device`: itself, except automatic (see above).
RnnPath resolve_lstm_path(RnnPath path, const Device& device);
// For progress output: "fused", or "auto: sequence" for automatic on a device where it means sequence.
std::string describe_lstm_path(RnnPath path, const Device& device);

// The four parameters of one layer and direction: [4H, in], [4H, H], [4H], [4H].
using LstmWeights = RnnWeights;

// One LSTM step written with elementwise ops (the composed path): gi, gh [N, 4H], c [N, H] -> the new
// state (h', c') stacked as [2, N, H], as lstm_cell (ops/ops.h) computes it.
Tensor lstm_cell_composed(const Tensor& gi, const Tensor& gh, const Tensor& c);

// One direction of one layer on a per-step path: x [T, N, in] -> h [T, N, H]; `reverse` runs t = T-1 .. 0.
Tensor lstm_direction(const Tensor& x, const LstmWeights& w, bool reverse, RnnPath path);

// The whole stack: `weights` holds layer 0 forward, layer 0 reverse (when bidirectional), layer 1 ...
// x [T, N, in] -> [T, N, H * dirs]. The functional form of LSTM::forward, for tests and custom weights.
Tensor lstm(const Tensor& x, const std::vector<LstmWeights>& weights, int num_layers, bool bidirectional,
            RnnPath path);

class LSTM : public RnnLayer {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, int num_layers = 1, bool bidirectional = false,
       RnnPath path = RnnPath::automatic);
  // x [T, N, input_size] -> [T, N, hidden_size * (bidirectional ? 2 : 1)]
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LSTM"; }
};

}  // namespace minidl
