#include "cpu/register.h"

namespace minidl {

void register_cpu_kernels() {
  register_copy_kernels_cpu();
  register_elementwise_kernels_cpu();
  register_reduce_kernels_cpu();
  register_ctc_kernels_cpu();
}

}  // namespace minidl
