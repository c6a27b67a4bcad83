// cuda/ctc.cu — the CTC loss on the GPU ("ctc_loss", "ctc_loss.backward"), the same recursions as the
// reference (cpu/ctc_naive.cpp; formulas and layouts in ops/kernel_signatures.h).
// Accumulation convention: outputs are overwritten (=); the backward kernel writes every element of
// grad_log_probs (zero for t >= T_n).
//
// "alpha_beta": one block per sample n, its threads over the positions s of the extended label
// l' = (blank, l_1, blank, ..., l_L, blank) (a thread takes s, s + blockDim, ... when 2L+1 > blockDim).
// The time recursion is sequential: each step t reads row t-1 of the table (written by other threads of
// the block) after a __syncthreads, so the block walks t = 1 .. T_n-1 in lock step. Everything is in log
// space in the tensor's own type (float for float32: the table itself is stored in T, as the kernel
// contract asks), with -inf as log 0: log_add(-inf, x) = x, and a position no path reaches stays -inf.
//   forward:  alpha rows into log_alpha [N, T, 2S+1] (rows t >= T_n and columns s >= 2L+1 are -inf);
//             nll[n] = -logsumexp(alpha_{T_n-1}(2L), alpha_{T_n-1}(2L-1))
//   backward: beta rows into a scratch table of the same shape, then threads over (t, k) pairs:
//             grad[t, n, k] = -grad_nll[n] * sum_{s : l'_s = k} exp(alpha_t(s) + beta_t(s) - lp_t(k) - log p)
// Parallelism is N blocks times 2L+1 threads: right for batches of short labels (captchas: 128 samples,
// 9 positions), where the GPU time is launch latency and T sequential steps anyway.
#include <cmath>

#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr int kCtcBlock = 128;

template <class T>
__device__ __forceinline__ T log_add(T a, T b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const T m = a > b ? a : b;
  return m + log1p(exp(-fabs(a - b)));
}

// Class at position s of sample n's extended label: the blank at even s, label (s-1)/2 at odd s.
__device__ __forceinline__ int64_t extended(const int64_t* labels, int64_t s, int64_t blank) {
  return s % 2 == 0 ? blank : labels[s / 2];
}

// The skip s-2 -> s over a blank is allowed between two different labels only.
__device__ __forceinline__ bool can_skip_to(const int64_t* labels, int64_t s, int64_t blank) {
  return s >= 2 && s % 2 == 1 && labels[s / 2] != labels[s / 2 - 1];
}

template <class T>
__global__ void ctc_alpha_kernel(const T* __restrict__ lp, const int64_t* __restrict__ targets,
                                 const int64_t* __restrict__ input_lengths, const int64_t* __restrict__ target_lengths,
                                 int64_t T_max, int64_t N, int64_t C, int64_t S, int64_t blank, bool zero_infinity,
                                 T* __restrict__ nll, T* __restrict__ log_alpha) {
  const int64_t n = blockIdx.x;
  const int64_t Sp = 2 * S + 1, Tn = input_lengths[n], Ls = 2 * target_lengths[n] + 1;
  const int64_t* labels = targets + n * S;
  T* alpha = log_alpha + n * T_max * Sp;
  auto lp_at = [&](int64_t t, int64_t k) { return lp[(t * N + n) * C + k]; };

  // Cells no path reaches: rows past the input, columns past the label.
  for (int64_t i = threadIdx.x; i < T_max * Sp; i += blockDim.x) {
    const int64_t t = i / Sp, s = i - t * Sp;
    if (t >= Tn || s >= Ls) alpha[i] = -INFINITY;
  }
  if (Tn > 0) {
    for (int64_t s = threadIdx.x; s < Ls; s += blockDim.x)
      alpha[s] = s == 0 ? lp_at(0, blank) : s == 1 ? lp_at(0, extended(labels, 1, blank)) : T(-INFINITY);
    for (int64_t t = 1; t < Tn; ++t) {
      __syncthreads();  // row t-1 is complete
      const T* prev = alpha + (t - 1) * Sp;
      for (int64_t s = threadIdx.x; s < Ls; s += blockDim.x) {
        T sum = prev[s];
        if (s >= 1) sum = log_add(sum, prev[s - 1]);
        if (can_skip_to(labels, s, blank)) sum = log_add(sum, prev[s - 2]);
        alpha[t * Sp + s] = sum == -INFINITY ? T(-INFINITY) : sum + lp_at(t, extended(labels, s, blank));
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    T log_p = Ls == 1 ? T(0) : T(-INFINITY);  // T_n = 0: only the empty target has an (empty) alignment
    if (Tn > 0) {
      const T* last = alpha + (Tn - 1) * Sp;
      log_p = Ls > 1 ? log_add(last[Ls - 1], last[Ls - 2]) : last[Ls - 1];
    }
    nll[n] = log_p == -INFINITY && zero_infinity ? T(0) : -log_p;
  }
}

template <class T>
__global__ void ctc_beta_grad_kernel(const T* __restrict__ lp, const int64_t* __restrict__ targets,
                                     const int64_t* __restrict__ input_lengths,
                                     const int64_t* __restrict__ target_lengths, const T* __restrict__ log_alpha,
                                     const T* __restrict__ grad_nll, int64_t T_max, int64_t N, int64_t C, int64_t S,
                                     int64_t blank, bool zero_infinity, T* __restrict__ log_beta,
                                     T* __restrict__ grad) {
  const int64_t n = blockIdx.x;
  const int64_t Sp = 2 * S + 1, Tn = input_lengths[n], Ls = 2 * target_lengths[n] + 1;
  const int64_t* labels = targets + n * S;
  const T* alpha = log_alpha + n * T_max * Sp;
  T* beta = log_beta + n * T_max * Sp;
  auto lp_at = [&](int64_t t, int64_t k) { return lp[(t * N + n) * C + k]; };
  auto grad_at = [&](int64_t t, int64_t k) -> T& { return grad[(t * N + n) * C + k]; };

  // Steps past the input get no gradient.
  for (int64_t i = threadIdx.x; i < (T_max - Tn) * C; i += blockDim.x) grad_at(Tn + i / C, i % C) = T(0);
  if (Tn == 0) return;  // block-uniform: no barrier follows for this block

  const T* last = alpha + (Tn - 1) * Sp;
  const T log_p = Ls > 1 ? log_add(last[Ls - 1], last[Ls - 2]) : last[Ls - 1];
  if (log_p == -INFINITY) {
    // An impossible target: the loss is +inf, its gradient undefined (NaN) unless zero_infinity.
    const T fill = zero_infinity ? T(0) : T(NAN);
    for (int64_t i = threadIdx.x; i < Tn * C; i += blockDim.x) grad_at(i / C, i % C) = fill;
    return;  // block-uniform
  }

  const int64_t t_last = Tn - 1;
  for (int64_t s = threadIdx.x; s < Ls; s += blockDim.x)
    beta[t_last * Sp + s] = s >= Ls - 2 ? lp_at(t_last, extended(labels, s, blank)) : T(-INFINITY);
  for (int64_t t = Tn - 2; t >= 0; --t) {
    __syncthreads();  // row t+1 is complete
    const T* next = beta + (t + 1) * Sp;
    for (int64_t s = threadIdx.x; s < Ls; s += blockDim.x) {
      T sum = next[s];
      if (s + 1 < Ls) sum = log_add(sum, next[s + 1]);
      if (s + 2 < Ls && can_skip_to(labels, s + 2, blank)) sum = log_add(sum, next[s + 2]);
      beta[t * Sp + s] = sum == -INFINITY ? T(-INFINITY) : sum + lp_at(t, extended(labels, s, blank));
    }
  }
  __syncthreads();  // the whole beta table is complete

  // One (t, k) pair per thread: log_gamma = log sum over the positions s holding class k of
  // exp(alpha + beta - lp_t(k)); blanks sit at even s, labels at odd s.
  const T g = grad_nll[n];
  for (int64_t i = threadIdx.x; i < Tn * C; i += blockDim.x) {
    const int64_t t = i / C, k = i - t * C;
    const T lp_tk = lp_at(t, k);
    T log_gamma = -INFINITY;
    for (int64_t s = k == blank ? 0 : 1; s < Ls; s += 2) {
      if (k != blank && labels[s / 2] != k) continue;
      const T a = alpha[t * Sp + s], b = beta[t * Sp + s];
      if (a == -INFINITY || b == -INFINITY) continue;
      log_gamma = log_add(log_gamma, a + b - lp_tk);
    }
    grad_at(t, k) = -g * exp(log_gamma - log_p);
  }
}

bool ctc_loss_cuda(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                   const Tensor& target_lengths, int64_t blank, bool zero_infinity, Tensor& nll, Tensor& log_alpha) {
  const int64_t T_max = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2), S = targets.size(1);
  if (N == 0) return true;
  if (N > 65535LL * 32) return false;  // one block per sample
  cudaStream_t s = cuda::launch_stream(log_probs);
  return MINIDL_FLOAT_TYPES(log_probs.dtype(), {
    ctc_alpha_kernel<T><<<static_cast<unsigned int>(N), kCtcBlock, 0, s>>>(
        log_probs.data<T>(), targets.data<int64_t>(), input_lengths.data<int64_t>(), target_lengths.data<int64_t>(),
        T_max, N, C, S, blank, zero_infinity, nll.data<T>(), log_alpha.data<T>());
    MINIDL_LAUNCH_CHECK();
  });
}

bool ctc_loss_backward_cuda(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths, const Tensor& log_alpha, const Tensor& grad_nll,
                            int64_t blank, bool zero_infinity, Tensor& grad_log_probs) {
  const int64_t T_max = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2), S = targets.size(1);
  if (N == 0) return true;
  if (N > 65535LL * 32) return false;
  cudaStream_t s = cuda::launch_stream(log_probs);
  // Scratch for beta (from the caching allocator; freed when this call returns, once the stream is done
  // with it: the allocator orders reuse on the device's one stream).
  Tensor log_beta = empty(log_alpha.shape(), log_alpha.options());
  return MINIDL_FLOAT_TYPES(log_probs.dtype(), {
    ctc_beta_grad_kernel<T><<<static_cast<unsigned int>(N), kCtcBlock, 0, s>>>(
        log_probs.data<T>(), targets.data<int64_t>(), input_lengths.data<int64_t>(), target_lengths.data<int64_t>(),
        log_alpha.data<T>(), grad_nll.data<T>(), T_max, N, C, S, blank, zero_infinity, log_beta.data<T>(),
        grad_log_probs.data<T>());
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

void register_ctc_cuda() {
  const char* d = "one block per sample, threads over the extended label, T steps in lock step (log space)";
  register_kernel(keys::ctc_loss, DeviceType::cuda, "alpha_beta", Priority::portable, d, ctc_loss_cuda);
  register_kernel(keys::ctc_loss_backward, DeviceType::cuda, "alpha_beta", Priority::portable, d,
                  ctc_loss_backward_cuda);
}

}  // namespace minidl
