// tests/test_util.h — helpers shared by the tests: devices to run on, tolerant comparison that prints
// the first mismatches, and the finite-difference gradient checker.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/ops.h"

namespace minidl {
namespace testing {

// "" when a CUDA device is usable, otherwise why not.
std::string cuda_unavailable_reason();
// cpu, plus cuda:0 when usable. Prints once (as a Catch2 WARN) that GPU cases are skipped otherwise.
std::vector<Device> test_devices();

// Compares got (any device) with ref elementwise: |got - ref| <= atol + rtol * |ref|.
// Returns "" on success, otherwise a message with the max error and the first mismatches.
std::string compare(const Tensor& got, const Tensor& ref, double rtol, double atol);

// Central-difference gradient check in float64. `f` maps the inputs to an output tensor; the check
// uses the scalar L = sum(f(x) * w) with a fixed random w. For each input that requires grad and each
// of its elements, the analytic dL/dx is compared with (L(x+h) - L(x-h)) / 2h; elements where the two
// one-sided slopes disagree (a kink: relu at 0, max ties) are skipped. Returns "" on success.
std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                      double h = 1e-6, double rtol = 1e-5, double atol = 1e-6);

// Random float64 CPU tensor with values in [lo, hi).
Tensor uniform(const Shape& shape, double lo, double hi, DType dtype = DType::float64, Device device = Device::cpu());

// Names of all kernels registered for (key, device).
std::vector<std::string> kernels_for(const std::string& key, DeviceType device);

// For every test device and every kernel registered for `key` there, selects that kernel (for the whole
// op, so "conv2d" also selects the backward stages of the same name) and runs body(device, name). The
// body should CHECK(last_kernel(key, device.type) == name) to assert the kernel really ran. Selection is
// restored to the defaults afterwards.
void for_each_kernel(const std::string& key, const std::function<void(Device, const std::string&)>& body);

// True when kernel `name` served the last call of (key, device); or, when `may_decline` is set, when it
// declined that call (a contiguous-only kernel given a strided view, say) and another kernel served it.
// Tests pass may_decline only for inputs a kernel is allowed to refuse, so a kernel that wrongly
// refuses everything still fails on the plain inputs.
bool served_or_declined(const std::string& key, DeviceType device, const std::string& name, bool may_decline);

// TF32 kernels. A kernel whose name ends in "_tf32" multiplies on TF32 tensor cores: each operand is
// rounded to 10 explicit mantissa bits (unit roundoff u = 2^-11), so each product a*b carries a relative
// error up to 2u = 2^-10, and a sum of K products differs from the exact FP32 one by up to about
// 2^-10 * sum_k |a_k b_k| (the FP32 accumulation adds far less). Tests compare such kernels against the
// FP32 reference with rtol = kTf32Rtol (a single product) and atol = tf32_atol(K, mean |a_k b_k|):
// 2^-10 times twice the expected sum, 2 * K * mean_abs_product. For operands uniform in [-1, 1] the mean
// of |a b| is 1/4 (the default), so atol is about K * 2^-11: loose enough never to flag a correct
// kernel, still far below the error of a wrong index (order sqrt(K) / 3).
bool is_tf32_kernel(const std::string& name);
constexpr double kTf32Rtol = 1.0 / 1024;
inline double tf32_atol(int64_t terms, double mean_abs_product = 0.25) {
  return 1e-5 + (2.0 * static_cast<double>(terms) * mean_abs_product) / 1024;
}

// Pooling parameters in one call: kernel (kh, kw), stride (sh, sw), padding (ph, pw).
inline Pool2dParams pool_params(int kh, int kw, int sh, int sw, int ph, int pw) {
  Pool2dParams p;
  p.kernel_h = kh;
  p.kernel_w = kw;
  p.stride_h = sh;
  p.stride_w = sw;
  p.pad_h = ph;
  p.pad_w = pw;
  return p;
}

// Restores default kernel selection at scope exit.
struct SelectionReset {
  ~SelectionReset() { reset_kernel_selection(); }
};

}  // namespace testing
}  // namespace minidl
