// exercises/10-fused-elementwise/check.cpp — the checker of exercise 10: the fused kernel against the three
// unfused ops, a sigmoid whose backward is the fused kernel (float64 gradient check), then the timing: three
// kernels (36 bytes per element) against one (12 bytes per element), each on one thread, as the bench times.
#include <cstdio>

#include "core/autograd.h"
#include "exercises/10-fused-elementwise/sigmoid_backward.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace minidl;
using exercise::kStudent;

namespace {

// The formula with three ops, as ops/elementwise.cpp writes sigmoid's backward: g * (y - y*y).
Tensor unfused(const Tensor& g, const Tensor& y) { return mul(g, sub(y, mul(y, y))); }

std::string check_against_unfused(const Shape& shape, DType dtype) {
  const Tensor g = testing::uniform(shape, -1, 1, dtype), y = testing::uniform(shape, 0, 1, dtype);
  Tensor out = full(shape, -777, dtype);
  if (!exercise::call_kernel<BinaryKernel>("sigmoid_backward", DeviceType::cpu, kStudent, g, y, out))
    return str_cat("your kernel declined contiguous ", dtype_name(dtype), " inputs; it must serve them");
  return testing::compare(out, unfused(g, y), dtype == DType::float32 ? 1e-6 : 1e-12, 1e-7);
}

// sigmoid(x) whose backward node runs the fused kernel (the unfused ops where it declines).
Tensor fused_sigmoid(const Tensor& x) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = sigmoid(x);
  }
  if (needs_grad({x}))
    attach_grad_fn(y, "FusedSigmoidBackward", {x}, [y_saved = y.detach()](const Tensor& g) {
      if (!g.is_contiguous()) return InputGradients{unfused(g, y_saved)};
      Tensor out = empty(g.shape(), g.options());
      dispatch<BinaryKernel>("sigmoid_backward", g.device(), g, y_saved, out);
      return InputGradients{out};
    });
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {10, "fuse three elementwise kernels into one",
                                   "exercises/10-fused-elementwise/sigmoid_backward.cpp"});
  register_student_sigmoid_backward();

  c.section("the fused kernel against mul(g, sub(y, mul(y, y)))");
  c.check("registered for the key \"sigmoid_backward\" on the CPU",
          [] { return exercise::registered("sigmoid_backward", DeviceType::cpu, "register_student_sigmoid_backward()"); });
  c.check("float32, 7 elements", [] { return check_against_unfused({7}, DType::float32); });
  c.check("float32, [64, 33]", [] { return check_against_unfused({64, 33}, DType::float32); });
  c.check("float64, [5, 5]", [] { return check_against_unfused({5, 5}, DType::float64); });
  c.check("float32, 100003 elements (not a multiple of anything)", [] { return check_against_unfused({100003}, DType::float32); });

  c.section("in autograd: a sigmoid whose backward is your kernel");
  c.check("gradcheck of fused_sigmoid, x [4, 6] in [-4, 4]", [] {
    return testing::gradcheck([](const std::vector<Tensor>& in) { return fused_sigmoid(in[0]); },
                              {testing::uniform({4, 6}, -4, 4).requires_grad_()});
  });

  if (c.timing_wanted()) {
    const int64_t n = c.quick() ? (int64_t(1) << 20) : (int64_t(1) << 24);
    const Tensor g = testing::uniform({n}, -1, 1, DType::float32), y = testing::uniform({n}, 0, 1, DType::float32);
    Tensor yy = empty({n}), d = empty({n}), out = empty({n});
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);  // the same single thread for both: the comparison is about bytes, not cores
#endif
    const int runs = c.quick() ? 3 : 11;
    const char* k = "vectorized";  // the CPU's default elementwise kernels
    const double t_unfused = exercise::median_seconds(
        [&] {
          exercise::call_kernel<BinaryKernel>("mul", DeviceType::cpu, k, y, y, yy);
          exercise::call_kernel<BinaryKernel>("sub", DeviceType::cpu, k, y, yy, d);
          exercise::call_kernel<BinaryKernel>("mul", DeviceType::cpu, k, g, d, out);
        },
        Device::cpu(), runs);
    const double t_fused = exercise::median_seconds(
        [&] { exercise::call_kernel<BinaryKernel>("sigmoid_backward", DeviceType::cpu, kStudent, g, y, out); },
        Device::cpu(), runs);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    const double nd = static_cast<double>(n);
    std::printf("\ntiming: n = %lld floats (%.0f MiB per tensor), one CPU thread, median of %d calls after a cache flush\n",
                static_cast<long long>(n), nd * 4 / (1 << 20), runs);
    std::printf("  %-44s %10s %12s %10s\n", "", "ms", "bytes moved", "GB/s");
    std::printf("  %-44s %10.3f %9.0f MB %10.2f\n", "unfused: mul(y, y), sub, mul (3 kernels)", t_unfused * 1e3,
                36 * nd / 1e6, 36 * nd / t_unfused * 1e-9);
    std::printf("  %-44s %10.3f %9.0f MB %10.2f\n", "fused: your sigmoid_backward (1 kernel)", t_fused * 1e3,
                12 * nd / 1e6, 12 * nd / t_fused * 1e-9);
    std::printf("  fused is %.2fx faster for 3x fewer bytes (the GB/s columns: how close each came to the memory's "
                "bandwidth)\n",
                t_unfused / t_fused);
  }
  return c.finish();
}
