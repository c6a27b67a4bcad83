// nn/rnn.h — what the recurrent layers (nn/gru.h, nn/lstm.h) share: the choice of implementation
// (RnnPath), PyTorch's parameter layout, and the walk over layers, directions and time steps.
//
// A recurrent layer of G gate blocks (GRU 3, LSTM 4) has, per layer k and direction suffix "" or
// "_reverse", registered in this order (so a PyTorch state_dict maps one to one):
//   weight_ih_l{k}{sfx} [G*H, in_k],  weight_hh_l{k}{sfx} [G*H, H],  bias_ih_l{k}{sfx} [G*H],  bias_hh_l{k}{sfx} [G*H]
// with in_0 = input_size and in_k = H * dirs after, all drawn from U(-1/sqrt(H), 1/sqrt(H)). The reverse
// direction runs t = T-1 .. 0 over the same input; a layer's output is [T, N, H * dirs] (forward then
// reverse features at each t) and is the next layer's input. Initial states are zero.
//
// The implementations (RnnLayer::path, chosen per module at run time):
//   fused     one cell op per step (gru_cell, lstm_cell): one kernel forward, one backward
//   composed  the same equations written with slice/add/sigmoid/tanh/mul ops, differentiated by autograd:
//             the readable reference, correct on every device that has the elementwise kernels
//   sequence  the whole stack (every layer, both directions) in one op (gru_sequence, lstm_sequence): one
//             kernel forward and one backward, so a library RNN (cuDNN) can serve it
//   automatic (the default, "auto") sequence on a GPU whose dispatch table has a kernel for the sequence
//             op (cuDNN's), fused on the CPU, where the per-step kernels are faster than the sequence op's
//             plain-loop reference; resolved at each forward from the input's device
// fused and composed compute the input projections of all time steps with one linear() over [T, N, in]
// and the recurrent ones with one linear() per step.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "nn/module.h"

namespace minidl {

enum class RnnPath { fused, composed, sequence, automatic };
// "fused" / "composed" / "sequence" / "auto"; throws an Error naming `layer` ("GRU") and the accepted
// values otherwise (`sequence_op`: "gru_sequence", named in the message).
RnnPath parse_rnn_path(const std::string& name, const char* layer, const char* sequence_op);
const char* rnn_path_name(RnnPath path);
// The path that `path` means for an input on `device`: itself, except automatic (see above), which asks
// whether the dispatch table has a `sequence_op` kernel for the device.
RnnPath resolve_rnn_path(RnnPath path, const Device& device, const char* sequence_op);
// For progress output: "fused", or "auto: sequence" for automatic on a device where it means sequence.
std::string describe_rnn_path(RnnPath path, const Device& device, const char* sequence_op);

// The four parameters of one layer and direction: [G*H, in], [G*H, H], [G*H], [G*H].
struct RnnWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;
};
// Flat in the order the sequence ops take them: w_ih, w_hh, b_ih, b_hh of each layer and direction.
std::vector<Tensor> flat_parameters(const std::vector<RnnWeights>& weights);

// How a cell advances one time step, for the per-step paths. The state it carries between steps is h
// [N, H] (state_rows 1, the GRU) or h and c stacked as [2, N, H] (state_rows 2, the LSTM); the layer's
// output at a step is h, row 0 of the state.
struct RnnStep {
  int state_rows = 1;
  // gi = x_t W_ih^T + b_ih and gh = h W_hh^T + b_hh [N, G*H], and the state before the step -> the state after.
  std::function<Tensor(const Tensor& gi, const Tensor& gh, const Tensor& state)> step;
};

// One direction of one layer on the per-step paths: x [T, N, in] -> [T, N, H]; `reverse` runs
// t = T-1 .. 0 (output t is still the state after reading x_t). `layer` names the layer in errors.
Tensor rnn_direction(const Tensor& x, const RnnWeights& w, bool reverse, const RnnStep& cell, const char* layer);

// The whole stack: `weights` holds layer 0 forward, layer 0 reverse (when bidirectional), layer 1 ...;
// x [T, N, in] -> [T, N, H * dirs]. On the sequence path (`path` already resolved) one call of
// `sequence_op(x, flat_parameters(weights), num_layers, bidirectional)`; on the per-step paths
// `direction(input, w, reverse)` for each layer and direction.
using RnnDirection = std::function<Tensor(const Tensor& input, const RnnWeights& w, bool reverse)>;
using RnnSequenceOp = Tensor (*)(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional);
Tensor rnn_stack(const Tensor& x, const std::vector<RnnWeights>& weights, int num_layers, bool bidirectional,
                 RnnPath path, const RnnDirection& direction, RnnSequenceOp sequence_op, const char* layer);

// The base of GRU and LSTM: the configuration, the registered parameters and describe().
class RnnLayer : public Module {
 public:
  // "GRU(10 -> 16, 2 layers, bidirectional, auto)"
  std::string describe() const override;

  int64_t input_size, hidden_size;
  int num_layers;
  bool bidirectional;
  RnnPath path;                     // may be changed at any time
  std::vector<RnnWeights> weights;  // layer-major, forward before reverse; the registered parameters

 protected:
  // Registers the parameters of a stack of `gates` gate blocks under PyTorch's names (see the top).
  RnnLayer(const char* layer, int64_t input_size, int64_t hidden_size, int num_layers, bool bidirectional,
           RnnPath path, int gates);
  // x must be [T, N, input_size].
  void check_input(const Tensor& x) const;
};

}  // namespace minidl
