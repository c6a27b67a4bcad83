// cuda/ctc_cudnn.cu — the CTC loss through cuDNN (cudnnCTCLoss_v8): kernel "cudnn" of the keys "ctc_loss"
// and "ctc_loss.backward" (contract and recursions in ops/kernel_signatures.h; the reference is
// cpu/ctc_naive.cpp). Accumulation convention: outputs are overwritten (=); the backward kernel writes
// every element of grad_log_probs (zero for t >= T_n).
//
// !!! CONDITION THAT NOTHING CHECKS: every row log_probs[t, n, :] must be normalized, logsumexp_k = 0 (the
// !!! output of a log_softmax, which is what CTC's input means). On other input this kernel computes a
// !!! different loss and gradient without any error. Checking it would need a device-to-host sync, so
// !!! the kernel is registered BELOW "alpha_beta": never the default, only used when selected
// !!! (--kernel ctc_loss=cudnn, MINIDL_KERNELS=ctc_loss=cudnn or select_kernel).
//
// Why that condition. cuDNN is run with CUDNN_LOSS_NORMALIZATION_SOFTMAX: it takes its input x as
// pre-softmax activations, p = softmax(x) over the classes, and returns per sample
//   cost[n]       = -log p(l_n | p)
//   grad[t, n, k] = d cost[n] / d x[t, n, k] = p[t, n, k] - gamma[t, n, k]
// where gamma[t, n, k] = sum_{s : l'_s = k} exp(alpha_t(s) + beta_t(s) - lp_t(k) - log p(l | x)) is the
// posterior probability that an alignment emits k at time t (sum_k gamma = 1 for t < T_n). The gradient
// is the raw derivative of each sample's own cost: no batch reduction, no grad_output scaling (PyTorch
// feeds log_probs the same way and multiplies cuDNN's gradient by grad_out itself, aten/src/ATen/native/
// cudnn/LossCTC.cpp and its _cudnn_ctc_loss_backward). We feed x = log_probs. When the rows are
// normalized, softmax(log_probs) = exp(log_probs - logsumexp) = exp(log_probs) = p, so cost[n] is our
// nll[n] and, our contract being the gradient with respect to log_probs themselves (-grad_nll * gamma,
// with no softmax in between),
//   grad_log_probs[t, n, k] = grad_nll[n] * (cudnn_grad[t, n, k] - exp(log_probs[t, n, k])).
// (The alternative, CUDNN_LOSS_NORMALIZATION_NONE, takes probabilities p = exp(log_probs); if its
// gradient were d cost / d p = -gamma / p, grad_lp = grad_p * p would follow. But we found no statement
// of exactly which gradient NONE returns, cuDNN's CTC gradient semantics changed between 7.1 and 7.6,
// and no framework we could read uses NONE, while SOFTMAX is what PyTorch has shipped since cuDNN 7.6;
// it would also need an exp pass over the input. Hence SOFTMAX.)
//
// The alpha table. cuDNN does not expose its forward variables, so the forward kernel fills log_alpha
// with NaN (it is NOT meaningful for this kernel) and the backward kernel ignores it and calls cuDNN again
// for the gradient. Selection is per op ("ctc_loss" selects both keys), and the backward declines exactly
// when the forward does (same checks on the same tensors), so a cudnn forward is always followed by a
// cudnn backward; a cuDNN error in the backward throws rather than falls back, as the fallback
// ("alpha_beta") would read the NaN table. The forward also has cuDNN compute the gradient (into a
// discarded scratch): the costs-only call (gradients = NULL) is documented in the header but unused by
// the frameworks we read, and one call shape for both stages keeps the behaviour identical.
//
// What cuDNN wants and how we get it without a host sync:
//   - labels packed (the labels of all samples concatenated, lengths in labelLengths), int32, on the
//     device; input and label lengths int32 on the device. ctc_cudnn_lengths_kernel computes the int32
//     lengths and each sample's offset (a serial prefix sum in one thread: N is a batch size);
//     ctc_cudnn_pack_kernel then copies the padded int64 [N, S] targets into the packed int32 array.
//   - the samples cuDNN might mishandle never reach it: an empty target (L = 0), a sample with T_n = 0 and
//     an impossible target (L + R > T_n, R = adjacent repeated labels, each needing a blank between: no
//     alignment exists; PyTorch reports illegal memory accesses from cuDNN when target lengths exceed input
//     lengths). cuDNN gets a stand-in (input length max(T_n, 1), the one-label target "1", always
//     possible) and the finish kernels write the contract's values for those samples instead: an empty
//     target has exactly one alignment (all blanks), nll = -sum_{t < T_n} lp_t(blank), gradient
//     -grad_nll on the blank; an impossible one has nll = +inf and a NaN gradient, or 0 and 0 with
//     zero_infinity.
//   - zero_infinity is implemented (not declined): the finish kernels zero nll and gradient of every
//     sample whose cost is +inf, cuDNN's or ours. cuDNN runs with CUDNN_CTC_ZERO_OOB_GRADIENTS (cuDNN 9's
//     handling of out-of-bound samples; with the stand-ins none should occur).
//   - the workspace from the caching allocator, everything on the device's one stream (cuDNN's handle is
//     bound to it), so nothing waits.
// Declines, checked on the host without touching device data: dtype other than float32 (cuDNN's CTC
// computes in float only), blank != 0 (cuDNN's blank is label 0), padded target width S > 255 (cuDNN
// documents label lengths <= 256, but 256 fails in practice: PyTorch issue #53505 / PR #53557, and the
// deterministic algorithm reports NOT_SUPPORTED for maxLabelLength >= 256), C < 2 (the stand-in label 1
// must be a class), T = 0, sizes beyond int, non-contiguous tensors; and cuDNN refusing the forward call
// (NOT_SUPPORTED or BAD_PARAM), which falls back to "alpha_beta".
// Algorithm: CUDNN_CTC_LOSS_ALGO_DETERMINISTIC (reproducible results, like our other kernels), or the
// non-deterministic one where cuDNN reports the first NOT_SUPPORTED (never in deterministic mode,
// core/determinism.h: then the call falls back to "alpha_beta").
#ifdef MINIDL_WITH_CUDNN
#include <cmath>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "cuda/kernel_helpers.h"
#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// cuDNN's limit on a target's length (see the header comment: 256 is documented, 255 is what works).
constexpr int64_t kMaxLabelLength = 255;
// The algorithms in the order tried: deterministic first (reproducible, like our other kernels); the
// other only where cuDNN reports the deterministic one NOT_SUPPORTED.
constexpr cudnnCTCLossAlgo_t kAlgos[] = {CUDNN_CTC_LOSS_ALGO_DETERMINISTIC, CUDNN_CTC_LOSS_ALGO_NON_DETERMINISTIC};

// How a sample is computed.
enum SampleKind : int { kByCudnn = 0, kEmptyTarget = 1, kImpossible = 2 };

// Owning wrapper of a CTC loss descriptor: float compute, SOFTMAX normalization (see the header),
// zeroed gradients for out-of-bound samples.
class CudnnCtcDesc {
 public:
  explicit CudnnCtcDesc(int max_label_length) : CudnnCtcDesc() {
    MINIDL_CUDNN_CHECK(cudnnSetCTCLossDescriptor_v9(desc_, CUDNN_DATA_FLOAT, CUDNN_LOSS_NORMALIZATION_SOFTMAX,
                                                    CUDNN_CTC_ZERO_OOB_GRADIENTS, max_label_length));
  }
  ~CudnnCtcDesc() { cudnnDestroyCTCLossDescriptor(desc_); }
  CudnnCtcDesc(const CudnnCtcDesc&) = delete;
  CudnnCtcDesc& operator=(const CudnnCtcDesc&) = delete;
  cudnnCTCLossDescriptor_t get() const { return desc_; }

 private:
  CudnnCtcDesc() { MINIDL_CUDNN_CHECK(cudnnCreateCTCLossDescriptor(&desc_)); }
  cudnnCTCLossDescriptor_t desc_ = nullptr;
};

// One block. Per sample n (threads strided over n): its kind, the int32 lengths cuDNN gets (the stand-in
// for samples cuDNN does not compute), and fixed_nll[n], the loss of the samples we compute ourselves
// (+inf for impossible ones, -sum_t lp_t(blank) for empty targets, accumulated in double). Then thread 0
// writes the packed offsets: offset[n] = sum_{m < n} label_len[m].
__global__ void ctc_cudnn_lengths_kernel(const float* __restrict__ lp, const int64_t* __restrict__ targets,
                                         const int64_t* __restrict__ input_lengths,
                                         const int64_t* __restrict__ target_lengths, int64_t N, int64_t C, int64_t S,
                                         int* __restrict__ kind, int* __restrict__ label_len, int* __restrict__ input_len,
                                         int* __restrict__ offset, float* __restrict__ fixed_nll) {
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) {
    const int64_t Tn = input_lengths[n], L = target_lengths[n];
    const int64_t* labels = targets + n * S;
    int64_t repeats = 0;
    for (int64_t s = 1; s < L; ++s) repeats += labels[s] == labels[s - 1];
    int k = kByCudnn;
    float fixed = 0.0f;
    if (L == 0) {
      k = kEmptyTarget;
      double log_p = 0.0;  // the one alignment: blank (class 0) at every step
      for (int64_t t = 0; t < Tn; ++t) log_p += lp[(t * N + n) * C];
      fixed = static_cast<float>(-log_p);
    } else if (L + repeats > Tn) {
      k = kImpossible;
      fixed = INFINITY;
    }
    kind[n] = k;
    fixed_nll[n] = fixed;
    label_len[n] = k == kByCudnn ? static_cast<int>(L) : 1;
    input_len[n] = static_cast<int>(Tn > 0 ? Tn : 1);
  }
  __syncthreads();  // every label_len is written (global memory, visible to the block after the barrier)
  if (threadIdx.x == 0) {
    int running = 0;
    for (int64_t n = 0; n < N; ++n) {
      offset[n] = running;
      running += label_len[n];
    }
  }
}

// Packed labels: sample n's labels at offset[n] .. offset[n] + label_len[n]; the stand-in label is 1.
// Grid-stride over the N x W positions, W = max(S, 1) (a stand-in needs one position even when S = 0).
__global__ void ctc_cudnn_pack_kernel(const int64_t* __restrict__ targets, const int* __restrict__ kind,
                                      const int* __restrict__ label_len, const int* __restrict__ offset, int64_t N,
                                      int64_t S, int64_t W, int* __restrict__ packed) {
  for (int64_t i = cuda::global_thread_index(); i < N * W; i += cuda::global_thread_count()) {
    const int64_t n = i / W, s = i - n * W;
    if (s >= label_len[n]) continue;
    packed[offset[n] + s] = kind[n] == kByCudnn ? static_cast<int>(targets[n * S + s]) : 1;
  }
}

// nll[n] = cuDNN's cost or our fixed value; +inf becomes 0 with zero_infinity.
__global__ void ctc_cudnn_finish_forward_kernel(const int* __restrict__ kind, const float* __restrict__ costs,
                                                const float* __restrict__ fixed_nll, int64_t N, bool zero_infinity,
                                                float* __restrict__ nll) {
  for (int64_t n = cuda::global_thread_index(); n < N; n += cuda::global_thread_count()) {
    const float v = kind[n] == kByCudnn ? costs[n] : fixed_nll[n];
    nll[n] = zero_infinity && v == INFINITY ? 0.0f : v;
  }
}

// grad[t, n, k] = 0 for t >= T_n; where the loss is +inf: 0 with zero_infinity, NaN without; an empty
// target: -g_n on the blank (gamma = 1 there, 0 elsewhere); otherwise g_n * (cudnn_grad - exp(lp)).
__global__ void ctc_cudnn_finish_backward_kernel(const float* __restrict__ lp, const float* __restrict__ cudnn_grad,
                                                 const int64_t* __restrict__ input_lengths,
                                                 const int* __restrict__ kind, const float* __restrict__ costs,
                                                 const float* __restrict__ fixed_nll,
                                                 const float* __restrict__ grad_nll, int64_t T, int64_t N, int64_t C,
                                                 bool zero_infinity, float* __restrict__ grad) {
  for (int64_t i = cuda::global_thread_index(); i < T * N * C; i += cuda::global_thread_count()) {
    const int64_t t = i / (N * C), n = (i / C) % N, k = i % C;
    float out = 0.0f;
    if (t < input_lengths[n]) {
      const int kn = kind[n];
      const float loss = kn == kByCudnn ? costs[n] : fixed_nll[n];
      if (loss == INFINITY)
        out = zero_infinity ? 0.0f : NAN;
      else if (kn == kEmptyTarget)
        out = k == 0 ? -grad_nll[n] : 0.0f;
      else
        out = grad_nll[n] * (cudnn_grad[i] - expf(lp[i]));
    }
    grad[i] = out;
  }
}

// The host-side conditions (no device data read). The backward passes grad_nll too.
bool accepts(const Tensor& log_probs, const Tensor& targets, int64_t blank, const Tensor* grad_nll) {
  if (log_probs.dtype() != DType::float32 || blank != 0) return false;
  if (grad_nll != nullptr && (grad_nll->dtype() != DType::float32 || !grad_nll->is_contiguous())) return false;
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2), S = targets.size(1);
  if (T == 0 || N == 0 || C < 2 || S > kMaxLabelLength) return false;
  if (!cuda::fits_int(log_probs.numel()) || !cuda::fits_int(N * (S > 0 ? S : 1))) return false;
  return log_probs.is_contiguous() && targets.is_contiguous();
}

// Scratch for one cuDNN call: the int32 lengths and packed labels, each sample's kind and fixed loss, the
// costs and (discarded in the forward) gradient cuDNN writes.
struct CudnnCtcScratch {
  Tensor kind, label_len, input_len, offset, packed, fixed_nll, costs, grad;
};

// Prepares the labels and runs cudnnCTCLoss_v8 on the stream (costs into w.costs, gradient into w.grad).
// Returns cuDNN's status (the caller decides between declining and throwing); launch and CUDA errors throw.
cudnnStatus_t run_cudnn_ctc(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths, CudnnCtcScratch& w) {
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2), S = targets.size(1);
  const int64_t W = S > 0 ? S : 1;
  const int device = log_probs.device().index;
  cudaStream_t stream = cuda::launch_stream(log_probs);
  const TensorOptions i32(DType::int32, log_probs.device());
  w.kind = empty({N}, i32);
  w.label_len = empty({N}, i32);
  w.input_len = empty({N}, i32);
  w.offset = empty({N}, i32);
  w.packed = empty({N * W}, i32);
  w.fixed_nll = empty({N}, log_probs.options());
  w.costs = empty({N}, log_probs.options());
  w.grad = empty(log_probs.shape(), log_probs.options());

  ctc_cudnn_lengths_kernel<<<1, cuda::kBlock, 0, stream>>>(
      log_probs.data<float>(), targets.data<int64_t>(), input_lengths.data<int64_t>(), target_lengths.data<int64_t>(),
      N, C, S, w.kind.data<int>(), w.label_len.data<int>(), w.input_len.data<int>(), w.offset.data<int>(),
      w.fixed_nll.data<float>());
  MINIDL_LAUNCH_CHECK();
  ctc_cudnn_pack_kernel<<<cuda::grid_for(N * W, cuda::kBlock), cuda::kBlock, 0, stream>>>(
      targets.data<int64_t>(), w.kind.data<int>(), w.label_len.data<int>(), w.offset.data<int>(), N, S, W,
      w.packed.data<int>());
  MINIDL_LAUNCH_CHECK();

  // [T, N, C] contiguous, as cuDNN's CTC wants it (time-major, the classes innermost).
  cuda::CudnnTensorDesc probs_desc;
  const int dims[3] = {static_cast<int>(T), static_cast<int>(N), static_cast<int>(C)};
  const int strides[3] = {static_cast<int>(N * C), static_cast<int>(C), 1};
  MINIDL_CUDNN_CHECK(cudnnSetTensorNdDescriptor(probs_desc.get(), CUDNN_DATA_FLOAT, 3, dims, strides));
  // maxLabelLength is cuDNN's limit (255), not this batch's S: with maxLabelLength = S = 4, cuDNN 9.14's
  // compute_alphas_and_betas_v8 kernel wrote past its shared-memory arrays (compute-sanitizer memcheck on
  // the H200: 100 invalid __shared__ writes, then CUDNN_STATUS_EXECUTION_FAILED). PyTorch passes 255 too.
  const CudnnCtcDesc ctc_desc(static_cast<int>(kMaxLabelLength));

  cudnnHandle_t handle = cuda::cudnn_handle(device);
  cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
  for (cudnnCTCLossAlgo_t algo : kAlgos) {
    // --deterministic: never the non-deterministic algorithm; NOT_SUPPORTED lets "alpha_beta" take the call.
    if (algo == CUDNN_CTC_LOSS_ALGO_NON_DETERMINISTIC && deterministic_algorithms()) break;
    size_t workspace_bytes = 0;
    st = cudnnGetCTCLossWorkspaceSize_v8(handle, algo, ctc_desc.get(), probs_desc.get(), probs_desc.get(),
                                         &workspace_bytes);
    if (st == CUDNN_STATUS_SUCCESS) {
      Tensor workspace;
      if (workspace_bytes > 0) workspace = cuda::scratch_bytes(workspace_bytes, device);
      st = cudnnCTCLoss_v8(handle, algo, ctc_desc.get(), probs_desc.get(), log_probs.raw_data(),
                           w.packed.data<int>(), w.label_len.data<int>(), w.input_len.data<int>(), w.costs.raw_data(),
                           probs_desc.get(), w.grad.raw_data(), workspace_bytes,
                           workspace_bytes > 0 ? workspace.raw_data() : nullptr);
    }
    if (st != CUDNN_STATUS_NOT_SUPPORTED) return st;  // done, or an error the next algorithm will not fix
  }
  return st;
}

std::string call_str(const Tensor& log_probs, const Tensor& targets) {
  return str_cat("log_probs ", shape_str(log_probs.shape()), ", targets ", shape_str(targets.shape()));
}

bool ctc_loss_cudnn(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths, int64_t blank, bool zero_infinity, Tensor& nll, Tensor& log_alpha) {
  if (!accepts(log_probs, targets, blank, nullptr)) return false;
  CudnnCtcScratch w;
  const cudnnStatus_t st = run_cudnn_ctc(log_probs, targets, input_lengths, target_lengths, w);
  if (st == CUDNN_STATUS_NOT_SUPPORTED || st == CUDNN_STATUS_BAD_PARAM) return false;  // "alpha_beta" takes it
  if (st != CUDNN_STATUS_SUCCESS)
    throw Error(str_cat("ctc_loss (cudnn): cudnnCTCLoss_v8 failed: ", cudnnGetErrorString(st), "; ",
                        call_str(log_probs, targets)));
  const int64_t N = log_probs.size(1);
  cudaStream_t stream = cuda::launch_stream(log_probs);
  ctc_cudnn_finish_forward_kernel<<<cuda::grid_for(N, cuda::kBlock), cuda::kBlock, 0, stream>>>(
      w.kind.data<int>(), w.costs.data<float>(), w.fixed_nll.data<float>(), N, zero_infinity, nll.data<float>());
  MINIDL_LAUNCH_CHECK();
  // Not an alpha table (cuDNN keeps its own): all-ones bytes are a float32 NaN, so nothing can mistake it
  // for one.
  MINIDL_CUDA_CHECK(cudaMemsetAsync(log_alpha.raw_data(), 0xFF, log_alpha.numel() * sizeof(float), stream));
  return true;
}

bool ctc_loss_backward_cudnn(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                             const Tensor& target_lengths, const Tensor& /*log_alpha: NaN, see the header*/,
                             const Tensor& grad_nll, int64_t blank, bool zero_infinity, Tensor& grad_log_probs) {
  if (!accepts(log_probs, targets, blank, &grad_nll)) return false;
  CudnnCtcScratch w;
  const cudnnStatus_t st = run_cudnn_ctc(log_probs, targets, input_lengths, target_lengths, w);
  if (st != CUDNN_STATUS_SUCCESS)  // no fallback: the forward's alpha table is NaN (see the header)
    throw Error(str_cat("ctc_loss.backward (cudnn): cudnnCTCLoss_v8 failed: ", cudnnGetErrorString(st), "; ",
                        call_str(log_probs, targets)));
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  cudaStream_t stream = cuda::launch_stream(log_probs);
  ctc_cudnn_finish_backward_kernel<<<cuda::grid_for(T * N * C, cuda::kBlock), cuda::kBlock, 0, stream>>>(
      log_probs.data<float>(), w.grad.data<float>(), input_lengths.data<int64_t>(), w.kind.data<int>(),
      w.costs.data<float>(), w.fixed_nll.data<float>(), grad_nll.data<float>(), T, N, C, zero_infinity,
      grad_log_probs.data<float>());
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_ctc_cudnn_cuda() {
  // Priority 5, below "alpha_beta" (10): correct only for normalized log_probs (see the header).
  const char* d =
      "cudnnCTCLoss_v8 (SOFTMAX mode on log_probs); ONLY for normalized rows (log_softmax output); float32, "
      "blank 0, S <= 255; alpha table not kept (NaN)";
  register_kernel(keys::ctc_loss, DeviceType::cuda, "cudnn", Priority::reference + 5, d, ctc_loss_cudnn);
  register_kernel(keys::ctc_loss_backward, DeviceType::cuda, "cudnn", Priority::reference + 5, d,
                  ctc_loss_backward_cudnn);
}

}  // namespace minidl

#endif  // MINIDL_WITH_CUDNN
