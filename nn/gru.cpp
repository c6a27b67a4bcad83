#include "nn/gru.h"

#include <cmath>

#include "core/dispatch.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl {

GruPath parse_gru_path(const std::string& name) {
  if (name == "fused") return GruPath::fused;
  if (name == "composed") return GruPath::composed;
  if (name == "sequence") return GruPath::sequence;
  if (name == "auto") return GruPath::automatic;
  throw Error(str_cat("GRU: unknown implementation '", name,
                      "' (expected fused or composed, the per-step paths, or sequence, the gru_sequence op, "
                      "or auto)"));
}

const char* gru_path_name(GruPath path) {
  switch (path) {
    case GruPath::fused: return "fused";
    case GruPath::composed: return "composed";
    case GruPath::sequence: return "sequence";
    case GruPath::automatic: return "auto";
  }
  return "?";
}

Tensor gru_cell_composed(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  const int64_t H = h.size(-1);
  const Tensor r = sigmoid(gi.slice(1, 0, H) + gh.slice(1, 0, H));
  const Tensor z = sigmoid(gi.slice(1, H, 2 * H) + gh.slice(1, H, 2 * H));
  const Tensor n = tanh(gi.slice(1, 2 * H, 3 * H) + r * gh.slice(1, 2 * H, 3 * H));
  return n + z * (h - n);  // = (1 - z) * n + z * h, with one op fewer
}

GruPath resolve_gru_path(GruPath path, const Device& device) {
  if (path != GruPath::automatic) return path;
  if (device.is_cpu()) return GruPath::fused;
  const bool has_sequence_kernel = !KernelRegistry::instance().candidates("gru_sequence", device.type).empty();
  return has_sequence_kernel ? GruPath::sequence : GruPath::fused;
}

std::string describe_gru_path(GruPath path, const Device& device) {
  if (path != GruPath::automatic) return gru_path_name(path);
  return str_cat("auto: ", gru_path_name(resolve_gru_path(path, device)));
}

Tensor gru_direction(const Tensor& x, const GruWeights& w, bool reverse, GruPath path) {
  MINIDL_CHECK(x.dim() == 3, "GRU: expected input [T, N, features], got ", shape_str(x.shape()));
  const int64_t T = x.size(0), N = x.size(1), H = w.w_hh.size(1);
  MINIDL_CHECK(T > 0, "GRU: the input has no time steps (shape ", shape_str(x.shape()), ")");
  if (path == GruPath::automatic) path = GruPath::fused;  // the per-step path that automatic stands for here
  MINIDL_CHECK(path != GruPath::sequence, "GRU: gru_direction runs the per-step paths only; the sequence path "
               "computes whole stacks through gru()");
  // The input projection of every time step in one product: [T, N, 3H].
  const Tensor gi_all = linear(x, w.w_ih, w.b_ih);
  Tensor h = zeros({N, H}, x.options());
  std::vector<Tensor> outputs(T);
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = reverse ? T - 1 - k : k;
    const Tensor gi = gi_all.select(0, t);
    const Tensor gh = linear(h, w.w_hh, w.b_hh);
    h = path == GruPath::fused ? gru_cell(gi, gh, h) : gru_cell_composed(gi, gh, h);
    outputs[t] = h.unsqueeze(0);
  }
  return concat(outputs, 0);
}

Tensor gru(const Tensor& x, const std::vector<GruWeights>& weights, int num_layers, bool bidirectional,
           GruPath path) {
  const size_t dirs = bidirectional ? 2 : 1;
  MINIDL_CHECK(num_layers >= 1 && weights.size() == num_layers * dirs, "GRU: ", weights.size(),
               " weight sets for ", num_layers, " layer(s)", bidirectional ? ", bidirectional" : "");
  path = resolve_gru_path(path, x.device());
  if (path == GruPath::sequence) {
    MINIDL_CHECK(x.dim() == 3 && x.size(0) > 0, "GRU: expected input [T, N, features] with T > 0, got ",
                 shape_str(x.shape()));
    std::vector<Tensor> params;
    for (const GruWeights& w : weights) params.insert(params.end(), {w.w_ih, w.w_hh, w.b_ih, w.b_hh});
    return gru_sequence(x, params, num_layers, bidirectional);
  }
  Tensor layer_input = x;
  for (int layer = 0; layer < num_layers; ++layer) {
    const GruWeights& fw = weights[layer * dirs];
    const Tensor forward_out = gru_direction(layer_input, fw, /*reverse=*/false, path);
    layer_input = bidirectional
                      ? concat({forward_out, gru_direction(layer_input, weights[layer * dirs + 1], true, path)}, 2)
                      : forward_out;
  }
  return layer_input;
}

GRU::GRU(int64_t in, int64_t hidden, int layers, bool bidir, GruPath p)
    : input_size(in), hidden_size(hidden), num_layers(layers), bidirectional(bidir), path(p) {
  MINIDL_CHECK(in > 0 && hidden > 0 && layers >= 1, "GRU: bad configuration: input ", in, ", hidden ", hidden,
               ", layers ", layers);
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  const int dirs = bidir ? 2 : 1;
  for (int k = 0; k < layers; ++k) {
    const int64_t layer_in = k == 0 ? in : hidden * dirs;
    for (int d = 0; d < dirs; ++d) {
      const std::string sfx = str_cat("_l", k, d == 1 ? "_reverse" : "");
      GruWeights w;
      w.w_ih = register_parameter("weight_ih" + sfx, empty({3 * hidden, layer_in}));
      w.w_hh = register_parameter("weight_hh" + sfx, empty({3 * hidden, hidden}));
      w.b_ih = register_parameter("bias_ih" + sfx, empty({3 * hidden}));
      w.b_hh = register_parameter("bias_hh" + sfx, empty({3 * hidden}));
      for (const Tensor& t : {w.w_ih, w.w_hh, w.b_ih, w.b_hh}) init::uniform_(t, -bound, bound);
      weights.push_back(w);
    }
  }
}

Tensor GRU::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 3 && x.size(2) == input_size, describe(), ": expected input [T, N, ", input_size,
               "], got ", shape_str(x.shape()));
  return gru(x, weights, num_layers, bidirectional, path);
}

std::string GRU::describe() const {
  return str_cat("GRU(", input_size, " -> ", hidden_size, ", ", num_layers, " layer", num_layers > 1 ? "s" : "",
                 bidirectional ? ", bidirectional" : "", ", ", gru_path_name(path), ")");
}

}  // namespace minidl
