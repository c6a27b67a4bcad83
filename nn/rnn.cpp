#include "nn/rnn.h"

#include <cmath>

#include "core/dispatch.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl {

RnnPath parse_rnn_path(const std::string& name, const char* layer, const char* sequence_op) {
  if (name == "fused") return RnnPath::fused;
  if (name == "composed") return RnnPath::composed;
  if (name == "sequence") return RnnPath::sequence;
  if (name == "auto") return RnnPath::automatic;
  throw Error(str_cat(layer, ": unknown implementation '", name,
                      "' (expected fused or composed, the per-step paths, or sequence, the ", sequence_op,
                      " op, or auto)"));
}

const char* rnn_path_name(RnnPath path) {
  switch (path) {
    case RnnPath::fused: return "fused";
    case RnnPath::composed: return "composed";
    case RnnPath::sequence: return "sequence";
    case RnnPath::automatic: return "auto";
  }
  return "?";
}

RnnPath resolve_rnn_path(RnnPath path, const Device& device, const char* sequence_op) {
  if (path != RnnPath::automatic) return path;
  if (device.is_cpu()) return RnnPath::fused;
  const bool has_sequence_kernel = !KernelRegistry::instance().candidates(sequence_op, device.type).empty();
  return has_sequence_kernel ? RnnPath::sequence : RnnPath::fused;
}

std::string describe_rnn_path(RnnPath path, const Device& device, const char* sequence_op) {
  if (path != RnnPath::automatic) return rnn_path_name(path);
  return str_cat("auto: ", rnn_path_name(resolve_rnn_path(path, device, sequence_op)));
}

std::vector<Tensor> flat_parameters(const std::vector<RnnWeights>& weights) {
  std::vector<Tensor> params;
  for (const RnnWeights& w : weights) params.insert(params.end(), {w.w_ih, w.w_hh, w.b_ih, w.b_hh});
  return params;
}

Tensor rnn_direction(const Tensor& x, const RnnWeights& w, bool reverse, const RnnStep& cell, const char* layer) {
  MINIDL_CHECK(x.dim() == 3, layer, ": expected input [T, N, features], got ", shape_str(x.shape()));
  const int64_t T = x.size(0), N = x.size(1), H = w.w_hh.size(1);
  MINIDL_CHECK(T > 0, layer, ": the input has no time steps (shape ", shape_str(x.shape()), ")");
  // The input projection of every time step in one product: [T, N, G*H].
  const Tensor gi_all = linear(x, w.w_ih, w.b_ih);
  Tensor state = cell.state_rows == 1 ? zeros({N, H}, x.options()) : zeros({cell.state_rows, N, H}, x.options());
  std::vector<Tensor> outputs(T);
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = reverse ? T - 1 - k : k;
    const Tensor h = cell.state_rows == 1 ? state : state.select(0, 0);
    state = cell.step(gi_all.select(0, t), linear(h, w.w_hh, w.b_hh), state);
    outputs[t] = (cell.state_rows == 1 ? state : state.select(0, 0)).unsqueeze(0);
  }
  return concat(outputs, 0);
}

Tensor rnn_stack(const Tensor& x, const std::vector<RnnWeights>& weights, int num_layers, bool bidirectional,
                 RnnPath path, const RnnDirection& direction, RnnSequenceOp sequence_op, const char* layer) {
  const size_t dirs = bidirectional ? 2 : 1;
  MINIDL_CHECK(num_layers >= 1 && weights.size() == num_layers * dirs, layer, ": ", weights.size(),
               " weight sets for ", num_layers, " layer(s)", bidirectional ? ", bidirectional" : "");
  if (path == RnnPath::sequence) {
    MINIDL_CHECK(x.dim() == 3 && x.size(0) > 0, layer, ": expected input [T, N, features] with T > 0, got ",
                 shape_str(x.shape()));
    return sequence_op(x, flat_parameters(weights), num_layers, bidirectional);
  }
  Tensor layer_input = x;
  for (int k = 0; k < num_layers; ++k) {
    const Tensor forward_out = direction(layer_input, weights[k * dirs], /*reverse=*/false);
    layer_input = bidirectional ? concat({forward_out, direction(layer_input, weights[k * dirs + 1], true)}, 2)
                                : forward_out;
  }
  return layer_input;
}

RnnLayer::RnnLayer(const char* layer, int64_t in, int64_t hidden, int layers, bool bidir, RnnPath p, int gates)
    : input_size(in), hidden_size(hidden), num_layers(layers), bidirectional(bidir), path(p) {
  MINIDL_CHECK(in > 0 && hidden > 0 && layers >= 1, layer, ": bad configuration: input ", in, ", hidden ", hidden,
               ", layers ", layers);
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  const int dirs = bidir ? 2 : 1;
  for (int k = 0; k < layers; ++k) {
    const int64_t layer_in = k == 0 ? in : hidden * dirs;
    for (int d = 0; d < dirs; ++d) {
      const std::string sfx = str_cat("_l", k, d == 1 ? "_reverse" : "");
      RnnWeights w;
      w.w_ih = register_parameter("weight_ih" + sfx, empty({gates * hidden, layer_in}));
      w.w_hh = register_parameter("weight_hh" + sfx, empty({gates * hidden, hidden}));
      w.b_ih = register_parameter("bias_ih" + sfx, empty({gates * hidden}));
      w.b_hh = register_parameter("bias_hh" + sfx, empty({gates * hidden}));
      for (const Tensor& t : {w.w_ih, w.w_hh, w.b_ih, w.b_hh}) init::uniform_(t, -bound, bound);
      weights.push_back(w);
    }
  }
}

void RnnLayer::check_input(const Tensor& x) const {
  MINIDL_CHECK(x.dim() == 3 && x.size(2) == input_size, describe(), ": expected input [T, N, ", input_size,
               "], got ", shape_str(x.shape()));
}

std::string RnnLayer::describe() const {
  return str_cat(type_name(), "(", input_size, " -> ", hidden_size, ", ", num_layers, " layer",
                 num_layers > 1 ? "s" : "", bidirectional ? ", bidirectional" : "", ", ", rnn_path_name(path), ")");
}

}  // namespace minidl
