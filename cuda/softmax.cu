// cuda/softmax.cu — softmax, log-softmax and the fused cross-entropy on the GPU, over the last dim of
// x [rows, cols] (contiguous). Accumulation convention: outputs are overwritten (=).
//
// Math (ops/kernel_signatures.h), with m_r = max_c x[r,c] and s_r = sum_c exp(x[r,c] - m_r):
//   softmax:              y = exp(x - m) / s
//   log_softmax:          y = x - m - log(s)
//   softmax.backward:     grad_x = y * (grad_y - sum_c(grad_y * y))
//   log_softmax.backward: grad_x = grad_y - exp(y) * sum_c(grad_y)
//   cross_entropy:        loss[n] = m_n + log(s_n) - logits[n, target[n]]
//   cross_entropy.backward: grad[n,c] = grad_loss[n] * (exp(logits[n,c] - m_n) / s_n - [c == target[n]])
// Subtracting the row maximum keeps exp() from overflowing; the backward of cross-entropy recomputes the
// softmax rather than storing it (one [N, C] tensor less to keep between forward and backward).
//
// "rows": one warp per row when cols <= 1024, else one block per row (cuda/device_utils.cuh), with warp
// shuffles (and shared memory across warps) for the row's max and sums. Each pass re-reads the row; the
// re-reads mostly hit in L1/L2. A target outside [0, C) cannot throw on the GPU: its loss (and gradient
// row) is NaN.
// "cudnn": cudnnSoftmaxForward/Backward (CUDNN_SOFTMAX_ACCURATE / CUDNN_SOFTMAX_LOG, mode INSTANCE
// over [rows, cols, 1, 1]) and cudnnActivationForward for relu/sigmoid/tanh: contiguous float32 only.
#include <climits>
#include <cmath>

#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::kBlock;
using cuda::MaxOp;
using cuda::RowMapping;
using cuda::row_all_reduce;
using cuda::SumOp;

template <class T, bool kBlockPerRow>
__device__ __forceinline__ T row_max(const T* row, int64_t cols, const RowMapping<kBlockPerRow>& m) {
  T v = -INFINITY;
  for (int64_t c = m.lane; c < cols; c += m.lanes) v = row[c] > v ? row[c] : v;
  return row_all_reduce<kBlockPerRow>(v, MaxOp());
}

// sum_c exp(row[c] - max)
template <class T, bool kBlockPerRow>
__device__ __forceinline__ T row_sum_exp(const T* row, int64_t cols, T max, const RowMapping<kBlockPerRow>& m) {
  T v = 0;
  for (int64_t c = m.lane; c < cols; c += m.lanes) v += exp(row[c] - max);
  return row_all_reduce<kBlockPerRow>(v, SumOp());
}

template <class T, bool kBlockPerRow, bool kLog>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t cols) {
  const RowMapping<kBlockPerRow> m;
  for (int64_t r = m.first_row; r < rows; r += m.row_step) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const T max = row_max(xr, cols, m);
    const T sum = row_sum_exp(xr, cols, max, m);
    if (kLog) {
      const T log_sum = log(sum);
      for (int64_t c = m.lane; c < cols; c += m.lanes) yr[c] = xr[c] - max - log_sum;
    } else {
      for (int64_t c = m.lane; c < cols; c += m.lanes) yr[c] = exp(xr[c] - max) / sum;
    }
  }
}

template <class T, bool kBlockPerRow, bool kLog>
__global__ void softmax_backward_kernel(const T* y, const T* gy, T* gx, int64_t rows, int64_t cols) {
  const RowMapping<kBlockPerRow> m;
  for (int64_t r = m.first_row; r < rows; r += m.row_step) {
    const T* yr = y + r * cols;
    const T* gr = gy + r * cols;
    T* out = gx + r * cols;
    T acc = 0;  // softmax: sum(grad_y * y); log-softmax: sum(grad_y)
    for (int64_t c = m.lane; c < cols; c += m.lanes) acc += kLog ? gr[c] : gr[c] * yr[c];
    acc = row_all_reduce<kBlockPerRow>(acc, SumOp());
    for (int64_t c = m.lane; c < cols; c += m.lanes)
      out[c] = kLog ? gr[c] - exp(yr[c]) * acc : yr[c] * (gr[c] - acc);
  }
}

template <class T, bool kBlockPerRow>
__global__ void cross_entropy_kernel(const T* logits, const int64_t* target, T* loss, int64_t rows, int64_t cols) {
  const RowMapping<kBlockPerRow> m;
  for (int64_t r = m.first_row; r < rows; r += m.row_step) {
    const T* xr = logits + r * cols;
    const T max = row_max(xr, cols, m);
    const T sum = row_sum_exp(xr, cols, max, m);
    if (m.lane == 0) {
      const int64_t t = target[r];
      loss[r] = (t >= 0 && t < cols) ? max + log(sum) - xr[t] : T(NAN);
    }
  }
}

template <class T, bool kBlockPerRow>
__global__ void cross_entropy_backward_kernel(const T* logits, const int64_t* target, const T* grad_loss,
                                              T* grad_logits, int64_t rows, int64_t cols) {
  const RowMapping<kBlockPerRow> m;
  for (int64_t r = m.first_row; r < rows; r += m.row_step) {
    const T* xr = logits + r * cols;
    T* out = grad_logits + r * cols;
    const T max = row_max(xr, cols, m);
    const T sum = row_sum_exp(xr, cols, max, m);
    const int64_t t = target[r];
    const T g = (t >= 0 && t < cols) ? grad_loss[r] : T(NAN);
    for (int64_t c = m.lane; c < cols; c += m.lanes)
      out[c] = g * (exp(xr[c] - max) / sum - (c == t ? T(1) : T(0)));
  }
}

template <bool kLog>
bool softmax_rows(const Tensor& x, Tensor& y) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  if (rows == 0 || cols == 0) return true;
  cudaStream_t s = cuda::launch_stream(x);
  const cuda::RowPlan plan = cuda::plan_rows(rows, cols);
  return MINIDL_FLOAT_TYPES(x.dtype(), {
    if (plan.block_per_row)
      softmax_kernel<T, true, kLog><<<plan.grid, kBlock, 0, s>>>(x.data<T>(), y.data<T>(), rows, cols);
    else
      softmax_kernel<T, false, kLog><<<plan.grid, kBlock, 0, s>>>(x.data<T>(), y.data<T>(), rows, cols);
    MINIDL_LAUNCH_CHECK();
  });
}

template <bool kLog>
bool softmax_backward_rows(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  const int64_t rows = y.shape()[0], cols = y.shape()[1];
  if (rows == 0 || cols == 0) return true;
  cudaStream_t s = cuda::launch_stream(y);
  const cuda::RowPlan plan = cuda::plan_rows(rows, cols);
  return MINIDL_FLOAT_TYPES(y.dtype(), {
    const T* py = y.data<T>();
    const T* pg = grad_y.data<T>();
    T* px = grad_x.data<T>();
    if (plan.block_per_row)
      softmax_backward_kernel<T, true, kLog><<<plan.grid, kBlock, 0, s>>>(py, pg, px, rows, cols);
    else
      softmax_backward_kernel<T, false, kLog><<<plan.grid, kBlock, 0, s>>>(py, pg, px, rows, cols);
    MINIDL_LAUNCH_CHECK();
  });
}

bool cross_entropy_rows(const Tensor& logits, const Tensor& target, Tensor& loss) {
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  if (rows == 0) return true;
  if (cols == 0) return false;  // no class to pick
  cudaStream_t s = cuda::launch_stream(logits);
  const cuda::RowPlan plan = cuda::plan_rows(rows, cols);
  const int64_t* pt = target.data<int64_t>();
  return MINIDL_FLOAT_TYPES(logits.dtype(), {
    const T* px = logits.data<T>();
    T* pl = loss.data<T>();
    if (plan.block_per_row)
      cross_entropy_kernel<T, true><<<plan.grid, kBlock, 0, s>>>(px, pt, pl, rows, cols);
    else
      cross_entropy_kernel<T, false><<<plan.grid, kBlock, 0, s>>>(px, pt, pl, rows, cols);
    MINIDL_LAUNCH_CHECK();
  });
}

bool cross_entropy_backward_rows(const Tensor& logits, const Tensor& target, const Tensor& grad_loss,
                                 Tensor& grad_logits) {
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  if (rows == 0 || cols == 0) return true;
  cudaStream_t s = cuda::launch_stream(logits);
  const cuda::RowPlan plan = cuda::plan_rows(rows, cols);
  const int64_t* pt = target.data<int64_t>();
  return MINIDL_FLOAT_TYPES(logits.dtype(), {
    const T* px = logits.data<T>();
    const T* pg = grad_loss.data<T>();
    T* po = grad_logits.data<T>();
    if (plan.block_per_row)
      cross_entropy_backward_kernel<T, true><<<plan.grid, kBlock, 0, s>>>(px, pt, pg, po, rows, cols);
    else
      cross_entropy_backward_kernel<T, false><<<plan.grid, kBlock, 0, s>>>(px, pt, pg, po, rows, cols);
    MINIDL_LAUNCH_CHECK();
  });
}

#ifdef MINIDL_WITH_CUDNN
// ---------------------------------------------------------------- cuDNN peers

// Owns a cuDNN tensor descriptor: NCHW float32 of the given dims.
struct CudnnTensor {
  cudnnTensorDescriptor_t desc = nullptr;
  CudnnTensor(int n, int c, int h, int w) {
    MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc));
    const cudnnStatus_t st = cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w);
    if (st != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyTensorDescriptor(desc);
      cuda::throw_cuda_error("cuDNN", "cudnnSetTensor4dDescriptor", __FILE__, __LINE__, cudnnGetErrorString(st));
    }
  }
  ~CudnnTensor() { cudnnDestroyTensorDescriptor(desc); }
  CudnnTensor(const CudnnTensor&) = delete;
  CudnnTensor& operator=(const CudnnTensor&) = delete;
};

// cuDNN takes int dims: contiguous float32 [rows, cols] whose element count fits an int.
bool cudnn_rows_ok(const std::vector<const Tensor*>& tensors) {
  for (const Tensor* t : tensors) {
    if (t->dtype() != DType::float32 || !t->is_contiguous()) return false;
    if (t->numel() == 0 || t->numel() > INT_MAX) return false;
  }
  return true;
}

template <cudnnSoftmaxAlgorithm_t kAlgo>
bool softmax_cudnn(const Tensor& x, Tensor& y) {
  if (!cudnn_rows_ok({&x, &y})) return false;
  const int rows = static_cast<int>(x.shape()[0]), cols = static_cast<int>(x.shape()[1]);
  cuda::launch_stream(x);
  CudnnTensor desc(rows, cols, 1, 1);
  const float alpha = 1.0f, beta = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnSoftmaxForward(cuda::cudnn_handle(x.device().index), kAlgo, CUDNN_SOFTMAX_MODE_INSTANCE,
                                         &alpha, desc.desc, x.raw_data(), &beta, desc.desc, y.raw_data()));
  return true;
}

template <cudnnSoftmaxAlgorithm_t kAlgo>
bool softmax_backward_cudnn(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  if (!cudnn_rows_ok({&y, &grad_y, &grad_x})) return false;
  const int rows = static_cast<int>(y.shape()[0]), cols = static_cast<int>(y.shape()[1]);
  cuda::launch_stream(y);
  CudnnTensor desc(rows, cols, 1, 1);
  const float alpha = 1.0f, beta = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnSoftmaxBackward(cuda::cudnn_handle(y.device().index), kAlgo, CUDNN_SOFTMAX_MODE_INSTANCE,
                                          &alpha, desc.desc, y.raw_data(), desc.desc, grad_y.raw_data(), &beta,
                                          desc.desc, grad_x.raw_data()));
  return true;
}

// Owns a cuDNN activation descriptor.
struct CudnnActivation {
  cudnnActivationDescriptor_t desc = nullptr;
  explicit CudnnActivation(cudnnActivationMode_t mode) {
    MINIDL_CUDNN_CHECK(cudnnCreateActivationDescriptor(&desc));
    const cudnnStatus_t st = cudnnSetActivationDescriptor(desc, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0);
    if (st != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyActivationDescriptor(desc);
      cuda::throw_cuda_error("cuDNN", "cudnnSetActivationDescriptor", __FILE__, __LINE__, cudnnGetErrorString(st));
    }
  }
  ~CudnnActivation() { cudnnDestroyActivationDescriptor(desc); }
  CudnnActivation(const CudnnActivation&) = delete;
  CudnnActivation& operator=(const CudnnActivation&) = delete;
};

// y = f(x) elementwise; x seen as one [1, n, 1, 1] tensor.
template <cudnnActivationMode_t kMode>
bool activation_cudnn(const Tensor& x, Tensor& out) {
  if (!cudnn_rows_ok({&x, &out})) return false;
  cuda::launch_stream(x);
  CudnnTensor desc(1, static_cast<int>(x.numel()), 1, 1);
  CudnnActivation act(kMode);
  const float alpha = 1.0f, beta = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnActivationForward(cuda::cudnn_handle(x.device().index), act.desc, &alpha, desc.desc,
                                            x.raw_data(), &beta, desc.desc, out.raw_data()));
  return true;
}
#endif  // MINIDL_WITH_CUDNN

}  // namespace

void register_softmax_cuda() {
  const DeviceType gpu = DeviceType::cuda;
  const char* d = "one warp per row (<=1024 cols) or one block per row; max-subtracted, shuffle reductions";
  register_kernel(keys::softmax, gpu, "rows", Priority::portable, d, softmax_rows<false>);
  register_kernel(keys::log_softmax, gpu, "rows", Priority::portable, d, softmax_rows<true>);
  register_kernel(keys::softmax_backward, gpu, "rows", Priority::portable, d, softmax_backward_rows<false>);
  register_kernel(keys::log_softmax_backward, gpu, "rows", Priority::portable, d, softmax_backward_rows<true>);
  register_kernel(keys::cross_entropy, gpu, "rows", Priority::portable, "fused per-row logsumexp; " + std::string(d),
                  cross_entropy_rows);
  register_kernel(keys::cross_entropy_backward, gpu, "rows", Priority::portable,
                  "recomputes the softmax per row; " + std::string(d),
                  cross_entropy_backward_rows);
#ifdef MINIDL_WITH_CUDNN
  // Below our own kernels by default (priority 5): selectable with --kernel softmax=cudnn etc.
  const char* dc = "cuDNN; contiguous float32 only";
  register_kernel(keys::softmax, gpu, "cudnn", Priority::reference + 5, dc, softmax_cudnn<CUDNN_SOFTMAX_ACCURATE>);
  register_kernel(keys::log_softmax, gpu, "cudnn", Priority::reference + 5, dc, softmax_cudnn<CUDNN_SOFTMAX_LOG>);
  register_kernel(keys::softmax_backward, gpu, "cudnn", Priority::reference + 5, dc,
                  softmax_backward_cudnn<CUDNN_SOFTMAX_ACCURATE>);
  register_kernel(keys::log_softmax_backward, gpu, "cudnn", Priority::reference + 5, dc,
                  softmax_backward_cudnn<CUDNN_SOFTMAX_LOG>);
  register_kernel(keys::relu, gpu, "cudnn", Priority::reference + 5, dc, activation_cudnn<CUDNN_ACTIVATION_RELU>);
  register_kernel(keys::sigmoid, gpu, "cudnn", Priority::reference + 5, dc, activation_cudnn<CUDNN_ACTIVATION_SIGMOID>);
  register_kernel(keys::tanh, gpu, "cudnn", Priority::reference + 5, dc, activation_cudnn<CUDNN_ACTIVATION_TANH>);
#endif
}

}  // namespace minidl
