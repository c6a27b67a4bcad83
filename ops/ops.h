// ops/ops.h — every op of minidl: differentiable functions of tensors.
//
// Each front end (ops/<family>.cpp) checks its arguments (errors name the op, shapes and devices),
// allocates the output, calls the kernel through the dispatch table (core/dispatch.h) and, when an
// input needs a gradient, attaches the backward formula (core/autograd.h), written with these same ops
// so that it runs on any device. Fused ops (conv2d, pooling, softmax, cross-entropy, batch norm, the ReLU
// epilogues bias_relu and batch_norm_relu) call dedicated backward kernels instead.
#pragma once
#include <cstdint>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"
#include "ops/kernel_signatures.h"

namespace minidl {

// ---- elementwise (ops/elementwise.cpp); binary ops broadcast NumPy-style
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add_scalar(const Tensor& x, double s);
Tensor mul_scalar(const Tensor& x, double s);
Tensor pow_scalar(const Tensor& x, double p);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// Comparisons (ops/compare.cpp): 1 where a OP b holds, else 0, broadcast like add. No gradient (the
// result is piecewise constant): the output never requires grad. Floating inputs give their dtype;
// integer inputs (argmax's int64) are compared as float64 (exact below 2^53) and give float64. So
// accuracy is mean(eq(argmax(logits, 1), labels)).item<double>().
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double s);
Tensor ne(const Tensor& a, double s);
Tensor gt(const Tensor& a, double s);
Tensor ge(const Tensor& a, double s);
Tensor lt(const Tensor& a, double s);
Tensor le(const Tensor& a, double s);
// The shape two tensors broadcast to; throws naming `op` when they cannot.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Sums g over the dims that broadcasting expanded, so the result has `shape` (used by gradients).
Tensor sum_to(const Tensor& g, const Shape& shape);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add_scalar(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return add_scalar(a, -s); }
inline Tensor operator*(const Tensor& a, double s) { return mul_scalar(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul_scalar(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return mul_scalar(a, 1.0 / s); }

// ---- reductions (ops/reduce.cpp); dims may be negative; empty dims = all dims
Tensor sum(const Tensor& x, const std::vector<int>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int>& dims = {}, bool keepdim = false);
// Max over one dim; the gradient goes to the first maximal element.
Tensor max(const Tensor& x, int dim, bool keepdim = false);
// Index of the first maximum along dim (int64, no gradient).
Tensor argmax(const Tensor& x, int dim, bool keepdim = false);

// ---- shape and indexing (ops/shape_ops.cpp; views are also Tensor methods)
Tensor concat(const std::vector<Tensor>& tensors, int dim);
// out[..., j, ...] = x[..., index[..., j, ...], ...] along dim; index is int64 with x's shape except at dim.
Tensor gather(const Tensor& x, int dim, const Tensor& index);
// out[..., j, ...] = x[..., index[j], ...] along dim: whole slices picked by a 1-D int64 index (rows of a
// dataset, embedding lookups). Any dtype; the gradient (floating x) adds each slice back at its index.
Tensor index_select(const Tensor& x, int dim, const Tensor& index);

// ---- dtype casts (ops/cast.cpp)
// x's values in `dtype` (float32, float64 or bfloat16; rounded to nearest even when narrowing), in x's memory
// format; x itself when it has that dtype already. The gradient is cast back to x's dtype.
Tensor cast(const Tensor& x, DType dtype);

// ---- matrix products (ops/matmul.cpp)
// a [..., M, K] @ b [..., K, N] with broadcast batch dims; 1-D operands as in NumPy.
Tensor matmul(const Tensor& a, const Tensor& b);
// x [..., in] -> x W^T + bias, W [out, in], bias [out] (may be undefined).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- convolution and pooling (ops/conv.cpp, ops/pool.cpp)
// x [N, C, H, W], w [O, C, KH, KW], bias [O] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor(), int stride = 1, int padding = 0);
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p);
Tensor max_pool2d(const Tensor& x, int kernel, int stride = -1, int padding = 0);  // stride -1 = kernel
Tensor max_pool2d(const Tensor& x, const Pool2dParams& p);
Tensor avg_pool2d(const Tensor& x, int kernel, int stride = -1, int padding = 0);
Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p);

// ---- normalisation and regularisation (ops/norm.cpp)
// x [N, C] or [N, C, H, W]. training: normalise with batch statistics and update running_mean/var in
// place (running = (1 - momentum) * running + momentum * batch, with the unbiased batch variance);
// otherwise normalise with the running statistics.
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);
// Zeroes each element with probability p and scales the rest by 1/(1-p) when training; identity otherwise.
Tensor dropout(const Tensor& x, double p, bool training);

// ---- softmax and losses (ops/softmax.cpp, ops/loss.cpp)
Tensor softmax(const Tensor& x, int dim = -1);
Tensor log_softmax(const Tensor& x, int dim = -1);
// Mean over the batch of -log softmax(logits)[target]; logits [N, C], target [N] int64. Fused, stable.
Tensor cross_entropy(const Tensor& logits, const Tensor& target);
// Mean of -log_probs[n, target[n]].
Tensor nll_loss(const Tensor& log_probs, const Tensor& target);

// ---- CTC (ops/ctc.cpp)
// Connectionist temporal classification loss (Graves et al., 2006) for unsegmented sequence labelling.
// log_probs [T, N, C]: log_softmax output over C classes (class `blank` is the blank); targets [N, S]
// int64, padded (row n holds target_lengths[n] labels in [0, C), none equal to blank); input_lengths [N]
// and target_lengths [N] int64 (on any device). Returns the scalar
//   mean_n ( -log p(targets[n] | log_probs[:, n]) / max(target_lengths[n], 1) )      (PyTorch reduction='mean')
// p sums the probabilities of every alignment (a path with repeats and blanks that collapses to the
// target). Impossible targets (too long for the input) give +inf, or 0 and a zero gradient with
// zero_infinity. Its gradient reaches log_probs only; the formulas are in ops/kernel_signatures.h.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0, bool zero_infinity = false);

// ---- GRU (ops/gru.cpp)
// One fused GRU time step (PyTorch's equations): gi = x_t W_ih^T + b_ih and gh = h W_hh^T + b_hh, both
// [N, 3H] with gates r, z, n; h [N, H]. Returns
//   h' = (1 - z) * n + z * h,  r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r * gh_n)
// [N, H], with a dedicated backward kernel (formulas in ops/kernel_signatures.h). nn/gru.h builds the
// GRU layer on it; the same step written with elementwise ops is the layer's "composed" path.
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h);

// ---- LSTM (ops/lstm.cpp)
// One fused LSTM time step (PyTorch's equations): gi = x_t W_ih^T + b_ih and gh = h W_hh^T + b_hh, both
// [N, 4H] with gates i, f, g, o; c [N, H] the cell state. Returns the new state stacked as [2, N, H]:
//   [0] = h' = o * tanh(c'),  [1] = c' = f * c + i * g,
//   i = sigmoid(gi_i + gh_i), f = sigmoid(gi_f + gh_f), g = tanh(gi_g + gh_g), o = sigmoid(gi_o + gh_o)
// with a dedicated backward kernel (formulas in ops/kernel_signatures.h). nn/lstm.h builds the LSTM
// layer on it; the same step written with elementwise ops is the layer's "composed" path.
Tensor lstm_cell(const Tensor& gi, const Tensor& gh, const Tensor& c);

// ---- GRU over whole sequences (ops/rnn_sequence.cpp)
// The GRU layer's whole stack in one op: x [T, N, I], params flat in nn/gru.h's order (per layer k,
// forward then reverse: w_ih [3H, in_k], w_hh [3H, H], b_ih [3H], b_hh [3H]) -> y [T, N, H * dirs],
// with PyTorch's equations and h_{-1} = 0 (formulas in ops/kernel_signatures.h). One kernel call forward
// and one backward (grads for x and every parameter), so a library RNN (cuDNN) can be a kernel of it.
Tensor gru_sequence(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional);

// ---- LSTM over whole sequences (ops/rnn_sequence.cpp)
// The LSTM layer's whole stack in one op: x [T, N, I], params flat in nn/lstm.h's order (per layer k,
// forward then reverse: w_ih [4H, in_k], w_hh [4H, H], b_ih [4H], b_hh [4H]) -> y [T, N, H * dirs] (the
// h of every step), with PyTorch's equations and h_{-1} = c_{-1} = 0 (formulas in ops/kernel_signatures.h).
// One kernel call forward and one backward, like gru_sequence.
Tensor lstm_sequence(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional);

// ---- fused ReLU epilogues (ops/bias_relu.cpp; batch_norm_relu in ops/norm.cpp)
// relu(y + bias) with bias [C] broadcast along dim `dim` of y (1 for conv2d's [N, C, H, W], -1 for
// linear's [..., C]): one kernel pass instead of two, and one backward pass (grad_y and grad_bias
// together) instead of relu's backward and a sum. nn's Sequential runs a Linear or Conv2d followed by
// a ReLU through it (the fusion pass, nn/fuse_relu.h).
Tensor bias_relu(const Tensor& y, const Tensor& bias, int dim = 1);
// relu(conv2d(x, w, bias, p)), the bias add and the ReLU in the convolution's own call where a fused
// kernel serves it (cuDNN's graph API on a GPU), else conv2d then bias_relu (ops/conv_bias_relu.cpp).
// nn's Sequential runs a Conv2d with a bias followed by a ReLU through it.
Tensor conv2d_bias_relu(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p);
// max_pool2d(relu(conv2d(x, w, bias, p)), pool): conv2d_bias_relu then max_pool2d, with one backward that
// applies the ReLU's mask and sums the bias gradient on the pooled grid, before the pool's scatter
// (ops/conv_bias_relu.cpp says why that is exact). nn's Sequential runs Conv2d, ReLU, MaxPool2d through it.
Tensor conv2d_bias_relu_max_pool2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                                   const Pool2dParams& pool);
// relu(batch_norm(...)) with the same arguments. In training, one fused kernel forward (the ReLU applied
// as the normalised values are written) and one backward (the ReLU's mask applied as the gradient is
// read), and one saved activation instead of two; in evaluation, batch_norm then relu.
Tensor batch_norm_relu(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);

// ---- packing (ops/pack.cpp)
// flat[offsets[k] + i] = srcs[k][i]: copies every src (any shape; a non-contiguous one is made contiguous
// first) into its range of the 1-D contiguous `flat`, in one kernel call; the rest of flat is left as it
// is. Not differentiable (like copy_): for buffers such as DataParallel's gradient buckets. Throws when a
// range falls outside flat or two ranges overlap.
void pack_(const Tensor& flat, const std::vector<Tensor>& srcs, const std::vector<int64_t>& offsets);

}  // namespace minidl
