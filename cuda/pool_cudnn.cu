// cuda/pool_cudnn.cu — "cudnn": 2-D max and average pooling through cuDNN (keys "max_pool2d",
// "max_pool2d.backward", "avg_pool2d", "avg_pool2d.backward"; float32, NCHW). The contract is in
// cuda/pool_v1_direct.cuh. Built only with cuDNN (MINIDL_WITH_CUDNN).
// Channels-last (core/memory_format.h): declared to serve channels-last tensors; when x and y (and the
// gradients) all are, the descriptors say CUDNN_TENSOR_NHWC. A call mixing the formats is declined.
#ifdef MINIDL_WITH_CUDNN
#include <initializer_list>

#include "core/dispatch.h"
#include "core/memory_format.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// ---------------------------------------------------------------- cudnn
// cudnnPoolingForward / cudnnPoolingBackward with CUDNN_POOLING_MAX_DETERMINISTIC and
// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING (divide by KH*KW, our rule), float32, NCHW.
// Max pooling ties: cuDNN does not document which maximal position of a window receives its
// gradient; the contract says the first in row-major window order. On cuDNN 9.14 (H200) the [cuda]
// tie test, on inputs of three distinct values (ties everywhere), found cuDNN agreeing with that
// rule, and padding treated as -infinity like ours; being undocumented, the test keeps reporting it.
// NaN: with CUDNN_NOT_PROPAGATE_NAN a NaN never wins a window, where the reference's rule lets a NaN in
// the window's first position win (and passes over later ones); measured on the H200 (cuDNN 9.14), the
// NaN test of tests/test_conv_pool.cpp reports the difference instead of failing cuDNN for it.
using cuda::CudnnPoolDesc;
using cuda::CudnnTensorDesc;

bool pool_shapes_ok(const Tensor& x_like, const Tensor& y_like) {
  for (const Tensor* t : {&x_like, &y_like}) {
    if (t->dtype() != DType::float32 || t->numel() == 0 || !cuda::fits_int(t->numel())) return false;
    for (int64_t d : t->shape())
      if (!cuda::fits_int(d)) return false;
  }
  return true;
}

// The layout of a call's tensors: 0 all NCHW-contiguous, 1 all channels-last (any channels-last one
// decides), -1 mixed (declined).
int layout_of(std::initializer_list<const Tensor*> ts) {
  bool nhwc = false;
  for (const Tensor* t : ts) nhwc = nhwc || suggest_memory_format(*t) == MemoryFormat::channels_last;
  for (const Tensor* t : ts)
    if (nhwc ? !is_channels_last(*t) : !t->is_contiguous()) return -1;
  return nhwc ? 1 : 0;
}

void set_nhwc(const CudnnTensorDesc& desc, const Tensor& like) {
  MINIDL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, int(like.size(0)),
                                                int(like.size(1)), int(like.size(2)), int(like.size(3))));
}

struct PoolCall {
  CudnnPoolDesc pool;
  CudnnTensorDesc x_desc, y_desc;
  PoolCall(cudnnPoolingMode_t mode, const Tensor& x_like, const Tensor& y_like, const Pool2dParams& p, bool nhwc)
      : pool(mode, p.kernel_h, p.kernel_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w),
        x_desc(int(x_like.size(0)), int(x_like.size(1)), int(x_like.size(2)), int(x_like.size(3))),
        y_desc(int(y_like.size(0)), int(y_like.size(1)), int(y_like.size(2)), int(y_like.size(3))) {
    if (!nhwc) return;
    set_nhwc(x_desc, x_like);
    set_nhwc(y_desc, y_like);
  }
  // cuDNN must agree with the front end on the output size (it always should; decline if not).
  bool output_matches(const Tensor& y_like) const {
    int n = 0, c = 0, h = 0, w = 0;
    MINIDL_CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool.get(), x_desc.get(), &n, &c, &h, &w));
    return Shape{n, c, h, w} == y_like.shape();
  }
};

bool pool_forward_cudnn(cudnnPoolingMode_t mode, const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const int layout = layout_of({&x, &y});
  if (!pool_shapes_ok(x, y) || layout < 0) return false;
  const int device = y.device().index;
  cuda::set_device(device);
  PoolCall call(mode, x, y, p, layout == 1);
  if (!call.output_matches(y)) return false;
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnPoolingForward(cuda::cudnn_handle(device), call.pool.get(), &one, call.x_desc.get(),
                                         x.raw_data(), &zero, call.y_desc.get(), y.raw_data()));
  return true;
}

// x and y are read only by max pooling; average pooling is given placeholders of the right shapes.
// `nhwc`: every tensor of the call is channels-last (the callers check it).
bool pool_backward_cudnn(cudnnPoolingMode_t mode, const void* x, const void* y, const Tensor& grad_y, Tensor& grad_x,
                         const Pool2dParams& p, bool nhwc) {
  if (!pool_shapes_ok(grad_x, grad_y)) return false;
  const int device = grad_x.device().index;
  cuda::set_device(device);
  PoolCall call(mode, grad_x, grad_y, p, nhwc);
  if (!call.output_matches(grad_y)) return false;
  const float one = 1.0f, zero = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnPoolingBackward(cuda::cudnn_handle(device), call.pool.get(), &one, call.y_desc.get(), y,
                                          call.y_desc.get(), grad_y.raw_data(), call.x_desc.get(), x, &zero,
                                          call.x_desc.get(), grad_x.raw_data()));
  return true;
}

bool max_pool2d_cudnn(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  return pool_forward_cudnn(CUDNN_POOLING_MAX_DETERMINISTIC, x, y, p);
}

bool max_pool2d_backward_cudnn(const Tensor& x, const Tensor& y, const Tensor& grad_y, Tensor& grad_x,
                               const Pool2dParams& p) {
  if (x.dtype() != DType::float32 || y.dtype() != DType::float32) return false;
  const int layout = layout_of({&x, &y, &grad_y, &grad_x});
  if (layout < 0) return false;
  return pool_backward_cudnn(CUDNN_POOLING_MAX_DETERMINISTIC, x.raw_data(), y.raw_data(), grad_y, grad_x, p,
                             layout == 1);
}

bool avg_pool2d_cudnn(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  return pool_forward_cudnn(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, x, y, p);
}

// cuDNN's API wants x and y even for average pooling, whose gradient depends on neither: grad_y stands
// in for y (same shape) and an uninitialised scratch tensor for x, so no input aliases the output.
bool avg_pool2d_backward_cudnn(const Tensor& grad_y, Tensor& grad_x, const Pool2dParams& p) {
  const int layout = layout_of({&grad_y, &grad_x});
  if (!pool_shapes_ok(grad_x, grad_y) || layout < 0) return false;
  const Tensor x_placeholder = empty(grad_x.shape(), grad_x.options());
  return pool_backward_cudnn(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, x_placeholder.raw_data(), grad_y.raw_data(),
                             grad_y, grad_x, p, layout == 1);
}

}  // namespace

void register_pool_cudnn_cuda() {
  register_kernel(keys::max_pool2d, DeviceType::cuda, "cudnn", Priority::portable,
                  "cudnnPoolingForward, MAX_DETERMINISTIC (f32)", max_pool2d_cudnn);
  register_kernel(keys::max_pool2d_backward, DeviceType::cuda, "cudnn", Priority::portable,
      "cudnnPoolingBackward, MAX_DETERMINISTIC; tie rule undocumented (first-max in tests) (f32)", max_pool2d_backward_cudnn);
  register_kernel(keys::avg_pool2d, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnPoolingForward, AVERAGE_COUNT_INCLUDE_PADDING (f32)", avg_pool2d_cudnn);
  register_kernel(keys::avg_pool2d_backward, DeviceType::cuda, "cudnn", Priority::tuned,
                  "cudnnPoolingBackward, AVERAGE_COUNT_INCLUDE_PADDING (f32)",
                  avg_pool2d_backward_cudnn);
  // NHWC descriptors for channels-last tensors (core/memory_format.h).
  declare_channels_last_kernel(keys::max_pool2d, DeviceType::cuda, "cudnn");
  declare_channels_last_kernel(keys::max_pool2d_backward, DeviceType::cuda, "cudnn");
  declare_channels_last_kernel(keys::avg_pool2d, DeviceType::cuda, "cudnn");
  declare_channels_last_kernel(keys::avg_pool2d_backward, DeviceType::cuda, "cudnn");
}

}  // namespace minidl
#endif  // MINIDL_WITH_CUDNN
