// tests/test_util.h — helpers shared by the tests: devices to run on, tolerant comparison that prints
// the first mismatches, and the finite-difference gradient checker. Defined in tests/check_util.cpp
// (no test framework: the exercises' checkers use them too) and tests/test_util.cpp (test_devices and
// for_each_kernel, which report through Catch2).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "core/precision.h"
#include "core/tensor.h"
#include "ops/ops.h"

namespace minidl {
namespace testing {

// "" when a CUDA device is usable, otherwise why not.
std::string cuda_unavailable_reason();
// cpu, plus cuda:0 when usable. Prints once (as a Catch2 WARN) that GPU cases are skipped otherwise.
std::vector<Device> test_devices();

// Compares got (any device) with ref elementwise by agrees(g, r, rtol, atol) of tests/agrees.h.
// Returns "" on success, otherwise a message with the max error and the first mismatches (flat index,
// and the index per dimension for tensors of two or more dimensions).
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
// Tests pass may_decline only for inputs a kernel is allowed to refuse (the documented declines of
// ops/kernel_signatures.h: a dtype other than float32, a transposed operand, a strided view), so a kernel
// that wrongly refuses everything still fails on the plain inputs.
bool served_or_declined(const std::string& key, DeviceType device, const std::string& name, bool may_decline);

// TF32 tensor-core kernels: their names contain "tf32" (matmul's tf32_mma and tf32_wgmma, conv2d's
// implicit_gemm_tf32). Their inputs keep 10 of float32's 23 mantissa bits (rounded, or truncated by
// wgmma), so each product is off by up to 2^-9 of its size. Compared with the float32 reference:
//   rtol kTf32Rtol = 2^-8   for the systematic part: truncation shrinks every product, which moves a sum
//                           by up to ~2^-10 of its value;
//   atol, two ways to bound the rest of a sum of K products:
//     tf32_atol(K) = 2^-8 sqrt(K)   (matmul) the random part: per-product errors of random sign add up to a
//                           standard deviation below 2^-11 sqrt(K) for terms up to about 1, so this is 8 of them;
//     tf32_atol_bound(K, m) = 2^-10 * 2 K m   (conv) the worst case: every product's error of 2^-10 |a b|
//                           with the same sign, for a mean |a b| of m (1/4 for operands uniform in [-1, 1]).
// A kernel that mixes up elements is still caught: its errors are as large as the outputs themselves
// (about sqrt(K) / 3 for such values), far above either atol for the tests' sizes.
struct Tolerance {
  double rtol, atol;
};
bool is_tf32_kernel(const std::string& name);
constexpr double kTf32Rtol = 1.0 / 256;
double tf32_atol(int64_t terms);
inline double tf32_atol_bound(int64_t terms, double mean_abs_product = 0.25) {
  return 1e-5 + (2.0 * static_cast<double>(terms) * mean_abs_product) / 1024;
}
// BF16 tensor-core kernels: their names contain "bf16" (matmul's bf16_wgmma). Their operands are rounded
// to 7 of float32's 23 mantissa bits (to nearest: unbiased), each product off by up to 2^-8 of its size,
// four times TF32's truncation: rtol kBf16Rtol = 2^-6, atol bf16_atol(K) = 2^-6 sqrt(K).
bool is_bf16_kernel(const std::string& name);
constexpr double kBf16Rtol = 1.0 / 64;
double bf16_atol(int64_t terms);
// The tolerance for matmul kernel `name` on sums of `terms` products: `fp32` for float32 kernels, the
// TF32 or BF16 one above for tensor-core kernels.
Tolerance matmul_tolerance(const std::string& name, int64_t terms, Tolerance fp32);

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

// Convolution parameters in one call: stride (sh, sw), padding (ph, pw).
inline Conv2dParams conv_params(int sh, int sw, int ph, int pw) {
  Conv2dParams p;
  p.stride_h = sh;
  p.stride_w = sw;
  p.pad_h = ph;
  p.pad_w = pw;
  return p;
}

// The registered CUDA function of kernel `name` for `key`, to call it directly (bypassing the dispatcher);
// null when there is none.
template <class Fn>
Fn* cuda_kernel_function(const std::string& key, const std::string& name) {
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->key == key && k->device == DeviceType::cuda && k->name == name) return reinterpret_cast<Fn*>(k->fn);
  return nullptr;
}

// Registers a kernel for the life of the object, and removes it after: tests of the sweeps and of
// `minidl bench` add kernels of their own (one that declines, one that is wrong). Priority -100 keeps it
// last, so it serves only when selected.
template <class Fn>
class ScopedKernel {
 public:
  ScopedKernel(const std::string& key, DeviceType device, const std::string& name, Fn* fn)
      : key_(key), device_(device), name_(name) {
    register_kernel<Fn>(key, device, name, -100, "registered by a test", fn);
  }
  ~ScopedKernel() {
    reset_kernel_selection();
    KernelRegistry::instance().remove(key_, device_, name_);
  }
  ScopedKernel(const ScopedKernel&) = delete;
  ScopedKernel& operator=(const ScopedKernel&) = delete;

 private:
  std::string key_;
  DeviceType device_;
  std::string name_;
};

// Restores default kernel selection at scope exit.
struct SelectionReset {
  ~SelectionReset() { reset_kernel_selection(); }
};

// True when a GPU is usable; otherwise notes that the current test case skips (tests/skips.h: it is
// listed as "SKIPPED: <case>: no usable GPU: <why>" at the end of the run), and the case returns early.
bool have_gpu();

// Deterministic algorithms (core/determinism.h) on or off for a scope, then the previous setting.
struct DeterministicScope {
  explicit DeterministicScope(bool on) : previous(deterministic_algorithms()) { set_deterministic_algorithms(on); }
  ~DeterministicScope() { set_deterministic_algorithms(previous); }
  DeterministicScope(const DeterministicScope&) = delete;
  DeterministicScope& operator=(const DeterministicScope&) = delete;
  bool previous;
};

// A float32 precision (core/precision.h) for a scope, then the previous one.
struct PrecisionScope {
  explicit PrecisionScope(Precision p) : previous(float32_precision()) { set_float32_precision(p); }
  ~PrecisionScope() { set_float32_precision(previous); }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;
  Precision previous;
};

}  // namespace testing
}  // namespace minidl
