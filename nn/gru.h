// nn/gru.h — the GRU layer (gated recurrent unit, Cho et al. 2014), with PyTorch's equations and
// parameter layout, multi-layer and bidirectional.
//
// For each time step t of x [T, N, input] (h_{-1} = 0), per layer and direction:
//   gi = x_t W_ih^T + b_ih,   gh = h_{t-1} W_hh^T + b_hh                 (both [N, 3H]: gates r, z, n)
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
//   h_t = (1 - z) * n + z * h_{t-1}
// Parameters, directions, layers and the implementations (GRU::path) are nn/rnn.h's, with G = 3 gate
// blocks (r, z, n) in each weight: weight_ih_l{k}{sfx} [3H, in_k], weight_hh_l{k}{sfx} [3H, H],
// bias_ih_l{k}{sfx} [3H], bias_hh_l{k}{sfx} [3H]. The paths:
//   fused     one gru_cell op per step (ops/ops.h); kernels selectable in the dispatch table
//             (--kernel gru_cell=naive|rows_omp|elementwise)
//   composed  the step written with elementwise ops (gru_cell_composed)
//   sequence  the whole stack in one gru_sequence op (ops/ops.h; --kernel gru_sequence=naive|cudnn)
//   automatic (the default, "auto") sequence on a GPU with a gru_sequence kernel (cuDNN's), fused on the CPU
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/rnn.h"

namespace minidl {

// The implementation choice is nn/rnn.h's; these names are the GRU's view of it.
using GruPath = RnnPath;
// "fused" / "composed" / "sequence" / "auto"; throws an Error naming the accepted values otherwise.
GruPath parse_gru_path(const std::string& name);
const char* gru_path_name(GruPath path);

// The four parameters of one layer and direction: [3H, in], [3H, H], [3H], [3H].
using GruWeights = RnnWeights;

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

class GRU : public RnnLayer {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int num_layers = 1, bool bidirectional = false,
      GruPath path = GruPath::automatic);
  // x [T, N, input_size] -> [T, N, hidden_size * (bidirectional ? 2 : 1)]
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GRU"; }
};

}  // namespace minidl
