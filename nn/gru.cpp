#include "nn/gru.h"

#include "ops/ops.h"

namespace minidl {

namespace {
constexpr const char* kLayer = "GRU";
constexpr const char* kSequenceOp = "gru_sequence";
}  // namespace

GruPath parse_gru_path(const std::string& name) { return parse_rnn_path(name, kLayer, kSequenceOp); }

const char* gru_path_name(GruPath path) { return rnn_path_name(path); }

GruPath resolve_gru_path(GruPath path, const Device& device) { return resolve_rnn_path(path, device, kSequenceOp); }

std::string describe_gru_path(GruPath path, const Device& device) {
  return describe_rnn_path(path, device, kSequenceOp);
}

Tensor gru_cell_composed(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  const int64_t H = h.size(-1);
  const Tensor r = sigmoid(gi.slice(1, 0, H) + gh.slice(1, 0, H));
  const Tensor z = sigmoid(gi.slice(1, H, 2 * H) + gh.slice(1, H, 2 * H));
  const Tensor n = tanh(gi.slice(1, 2 * H, 3 * H) + r * gh.slice(1, 2 * H, 3 * H));
  return n + z * (h - n);  // = (1 - z) * n + z * h, with one op fewer
}

Tensor gru_direction(const Tensor& x, const GruWeights& w, bool reverse, GruPath path) {
  if (path == GruPath::automatic) path = GruPath::fused;  // the per-step path that automatic stands for here
  MINIDL_CHECK(path != GruPath::sequence, "GRU: gru_direction runs the per-step paths only; the sequence path "
               "computes whole stacks through gru()");
  RnnStep cell;  // the state is h [N, H]
  cell.step = path == GruPath::fused ? gru_cell : gru_cell_composed;
  return rnn_direction(x, w, reverse, cell, kLayer);
}

Tensor gru(const Tensor& x, const std::vector<GruWeights>& weights, int num_layers, bool bidirectional,
           GruPath path) {
  auto direction = [path](const Tensor& input, const GruWeights& w, bool reverse) {
    return gru_direction(input, w, reverse, path);
  };
  return rnn_stack(x, weights, num_layers, bidirectional, resolve_gru_path(path, x.device()), direction, gru_sequence,
                   kLayer);
}

GRU::GRU(int64_t in, int64_t hidden, int layers, bool bidir, GruPath p)
    : RnnLayer(kLayer, in, hidden, layers, bidir, p, /*gates=*/3) {}

Tensor GRU::forward(const Tensor& x) {
  check_input(x);
  return gru(x, weights, num_layers, bidirectional, path);
}

}  // namespace minidl
