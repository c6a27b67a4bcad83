// cuda/pool_v1_direct.cu — "v1_direct": 2-D max and average pooling on the GPU, float32 and float64, one
// thread per output scanning its window forward, one thread per input gathering its windows backward
// (keys "max_pool2d", "max_pool2d.backward", "avg_pool2d", "avg_pool2d.backward"). The kernels and the
// contract are in cuda/pool_v1_direct.cuh. Accumulation convention: outputs are overwritten (=).
#include "core/dispatch.h"
#include "cuda/pool_v1_direct.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

void register_pool_v1_direct_cuda() {
  register_kernel(keys::max_pool2d, DeviceType::cuda, "v1_direct", Priority::tuned,
                  "one thread per output scanning its window (f32, f64)", max_pool2d_v1);
  register_kernel(keys::max_pool2d_backward, DeviceType::cuda, "v1_direct", Priority::tuned,
      "one thread per input gathering the windows it wins, first-max tie rule, no atomics (f32, f64)",
      max_pool2d_backward_v1);
  register_kernel(keys::avg_pool2d, DeviceType::cuda, "v1_direct", Priority::portable,
                  "one thread per output summing its window (f32, f64)", avg_pool2d_v1);
  register_kernel(keys::avg_pool2d_backward, DeviceType::cuda, "v1_direct", Priority::portable,
                  "one thread per input gathering its windows, no atomics (f32, f64)",
                  avg_pool2d_backward_v1);
}

}  // namespace minidl
