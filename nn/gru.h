// nn/gru.h — the GRU layer (gated recurrent unit, Cho et al. 2014), with PyTorch's equations and
// parameter layout, multi-layer and bidirectional.
//
// For each time step t of x [T, N, input] (h_{-1} = 0), per layer and direction:
//   gi = x_t W_ih^T + b_ih,   gh = h_{t-1} W_hh^T + b_hh                 (both [N, 3H]: gates r, z, n)
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
//   h_t = (1 - z) * n + z * h_{t-1}
// The reverse direction runs t = T-1 .. 0 over the same input. A layer's output is [T, N, H * dirs]
// (forward then reverse features at each t) and is the next layer's input. Parameters, per layer k and
// direction suffix "" or "_reverse", registered in this order (so a PyTorch state_dict maps one to one):
//   weight_ih_l{k}{sfx} [3H, in_k],  weight_hh_l{k}{sfx} [3H, H],  bias_ih_l{k}{sfx} [3H],  bias_hh_l{k}{sfx} [3H]
// with in_0 = input_size and in_k = H * dirs after; each row block is (r, z, n). Init: U(-1/sqrt(H), 1/sqrt(H)).
//
// Three implementations, chosen per module at run time (GRU::path):
//   fused     one gru_cell op per step (ops/ops.h): one kernel forward, one backward; kernels selectable
//             in the dispatch table (--kernel gru_cell=naive|rows_omp|cuda)
//   composed  the same equations written with slice/add/sigmoid/tanh/mul ops, differentiated by autograd:
//             the readable reference, correct on every device that has the elementwise kernels
//   sequence  the whole stack (every layer, both directions) in one gru_sequence op (ops/ops.h): one kernel
//             forward and one backward, so a library RNN can serve it (--kernel gru_sequence=naive|cudnn)
//   automatic (the default, "auto") sequence on a GPU whose dispatch table has a gru_sequence kernel
//             (cuDNN's), fused on the CPU, where the per-step kernels are faster than the sequence op's
//             plain-loop reference; resolved at each forward from the input's device
// fused and composed compute gi for all time steps with one linear() over [T, N, in] and gh with one
// linear() per step.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace minidl {

enum class GruPath { fused, composed, sequence, automatic };
// "fused" / "composed" / "sequence" / "auto"; throws an Error naming the accepted values otherwise.
GruPath parse_gru_path(const std::string& name);
const char* gru_path_name(GruPath path);

// The four parameters of one layer and direction.
struct GruWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;  // [3H, in], [3H, H], [3H], [3H]
};

// One GRU step written with elementwise ops (the composed path): gi, gh [N, 3H], h [N, H] -> h' [N, H].
Tensor gru_cell_composed(const Tensor& gi, const Tensor& gh, const Tensor& h);

// One direction of one layer: x [T, N, in] -> [T, N, H]; `reverse` runs t = T-1 .. 0 (output t is still
// the state after reading x_t). The per-step paths only: the sequence path computes whole stacks (gru()).
Tensor gru_direction(const Tensor& x, const GruWeights& w, bool reverse, GruPath path);

// The path that `path` means for an input on `device`: itself, except automatic (see above).
GruPath resolve_gru_path(GruPath path, const Device& device);
// For progress output: "fused", or "auto: sequence" for automatic on a device where it means sequence.
std::string describe_gru_path(GruPath path, const Device& device);

// The whole stack: `weights` holds layer 0 forward, layer 0 reverse (when bidirectional), layer 1 ...
// x [T, N, in] -> [T, N, H * dirs]. The functional form of GRU::forward, for tests and custom weights.
Tensor gru(const Tensor& x, const std::vector<GruWeights>& weights, int num_layers, bool bidirectional,
           GruPath path);

class GRU : public Module {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int num_layers = 1, bool bidirectional = false,
      GruPath path = GruPath::automatic);
  // x [T, N, input_size] -> [T, N, hidden_size * (bidirectional ? 2 : 1)]
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GRU"; }
  std::string describe() const override;

  int64_t input_size, hidden_size;
  int num_layers;
  bool bidirectional;
  GruPath path;                     // may be changed at any time
  std::vector<GruWeights> weights;  // layer-major, forward before reverse; the registered parameters
};

}  // namespace minidl
