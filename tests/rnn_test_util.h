// tests/rnn_test_util.h — helpers of the recurrent-layer tests (tests/test_lstm*.cpp): random stacks of
// weights for any number of gate blocks, fresh leaves on a device, and a run that returns the output with
// every gradient.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "nn/rnn.h"
#include "tests/test_util.h"

namespace minidl {
namespace testing {

// Random weights of a stack with `gates` gate blocks (GRU 3, LSTM 4), flat in the sequence ops' order
// (per layer and direction: w_ih, w_hh, b_ih, b_hh), as leaves that require grad; values in
// [-bound, bound) (biases a little less).
inline std::vector<Tensor> random_rnn_params(int64_t in, int64_t H, int layers, bool bidirectional, int64_t gates,
                                             DType dtype, double bound = 0.6) {
  const int dirs = bidirectional ? 2 : 1;
  std::vector<Tensor> out;
  for (int k = 0; k < layers; ++k) {
    const int64_t layer_in = k == 0 ? in : H * dirs;
    for (int d = 0; d < dirs; ++d) {
      out.push_back(uniform({gates * H, layer_in}, -bound, bound).to(dtype).requires_grad_());
      out.push_back(uniform({gates * H, H}, -bound, bound).to(dtype).requires_grad_());
      out.push_back(uniform({gates * H}, -0.8 * bound, 0.8 * bound).to(dtype).requires_grad_());
      out.push_back(uniform({gates * H}, -0.8 * bound, 0.8 * bound).to(dtype).requires_grad_());
    }
  }
  return out;
}

// The flat list (from index `first`) as the layer's weight sets.
inline std::vector<RnnWeights> as_rnn_weights(const std::vector<Tensor>& flat, size_t first = 0) {
  std::vector<RnnWeights> out;
  for (size_t i = first; i + 3 < flat.size(); i += 4) out.push_back({flat[i], flat[i + 1], flat[i + 2], flat[i + 3]});
  return out;
}

// Copies of the tensors on `device`, detached, as fresh leaves that require grad.
inline std::vector<Tensor> leaves_on(const std::vector<Tensor>& ts, Device device) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.detach().to(device).detach().requires_grad_());
  return out;
}

// y = f(x, params) on `device` (fresh leaves) and the gradients of L = sum(y * w):
// {y, grad x, grad of each parameter}.
using RnnFunction = std::function<Tensor(const Tensor& x, const std::vector<Tensor>& params)>;
inline std::vector<Tensor> run_with_grads(const RnnFunction& f, const Tensor& x, const std::vector<Tensor>& params,
                                          const Tensor& w, Device device) {
  const Tensor xd = x.detach().to(device).detach().requires_grad_();
  const std::vector<Tensor> pd = leaves_on(params, device);
  const Tensor y = f(xd, pd);
  sum(y * w.to(device)).backward();
  std::vector<Tensor> out = {y.detach(), xd.grad()};
  for (const Tensor& p : pd) out.push_back(p.grad());
  return out;
}

// The name of entry i of run_with_grads' result, for failure messages.
inline std::string rnn_tensor_name(size_t i) {
  if (i == 0) return "y";
  if (i == 1) return "grad x";
  const char* names[4] = {"w_ih", "w_hh", "b_ih", "b_hh"};
  return str_cat("grad of parameter ", i - 2, " (", names[(i - 2) % 4], " of layer/direction ", (i - 2) / 4, ")");
}

}  // namespace testing
}  // namespace minidl
