// tests/check_util.cpp — the helpers of tests/test_util.h that need no test framework: comparison with
// the first mismatches, the finite-difference gradient checker, kernel lists, tolerances. The exercises'
// checkers (exercises/) link them too, without Catch2; tests/test_util.cpp has the Catch2-aware rest.
#include "tests/test_util.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/autograd.h"
#include "core/backend.h"
#include "core/numerics.h"
#include "tests/agrees.h"

namespace minidl {
namespace testing {

std::string cuda_unavailable_reason() {
  if (!has_backend(DeviceType::cuda)) return "this build has no CUDA backend (nvcc was not found at configure time)";
  DeviceBackend& b = backend_for(DeviceType::cuda);
  if (b.device_count() == 0) return b.unavailable_reason();
  return "";
}

std::string compare(const Tensor& got, const Tensor& ref, double rtol, double atol) {
  std::ostringstream os;
  if (got.shape() != ref.shape()) {
    os << "shape " << shape_str(got.shape()) << " != expected " << shape_str(ref.shape());
    return os.str();
  }
  const std::vector<double> g = got.to_vector<double>(), r = ref.to_vector<double>();
  double max_err = 0;
  int shown = 0, bad = 0, nonfinite_mismatches = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(g[i] - r[i]);
    const bool finite = std::isfinite(g[i]) && std::isfinite(r[i]);
    if (finite) max_err = std::max(max_err, err);
    if (!agrees(g[i], r[i], rtol, atol)) {  // tests/agrees.h: an infinity or NaN matches only itself
      ++bad;
      if (!finite) ++nonfinite_mismatches;
      if (shown++ < 5) {
        os << "  [" << i << "]";
        if (got.dim() > 1) os << " at " << index_str(got.shape(), static_cast<int64_t>(i));
        os << " got " << g[i] << " expected " << r[i] << " (err " << err << ")\n";
      }
    }
  }
  if (bad == 0) return "";
  std::ostringstream head;
  head << bad << " of " << g.size() << " elements differ (max abs error " << max_err;
  if (nonfinite_mismatches > 0)
    head << " where both are finite; " << nonfinite_mismatches << " with a NaN or an infinity";
  head << ", rtol " << rtol << ", atol " << atol << "):\n"
       << os.str();
  return head.str();
}

Tensor uniform(const Shape& shape, double lo, double hi, DType dtype, Device device) {
  Tensor u = rand(shape, TensorOptions(dtype, device));
  return add_scalar(mul_scalar(u, hi - lo), lo);
}

std::vector<std::string> kernels_for(const std::string& key, DeviceType device) {
  std::vector<std::string> names;
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->key == key && k->device == device) names.push_back(k->name);
  return names;
}

bool is_tf32_kernel(const std::string& name) { return name.find("tf32") != std::string::npos; }

double tf32_atol(int64_t terms) { return std::sqrt(static_cast<double>(terms)) / 256; }

bool is_bf16_kernel(const std::string& name) { return name.find("bf16") != std::string::npos; }

double bf16_atol(int64_t terms) { return std::sqrt(static_cast<double>(terms)) / 64; }

Tolerance matmul_tolerance(const std::string& name, int64_t terms, Tolerance fp32) {
  if (is_bf16_kernel(name)) return {std::max(fp32.rtol, kBf16Rtol), std::max(fp32.atol, bf16_atol(terms))};
  if (!is_tf32_kernel(name)) return fp32;
  return {std::max(fp32.rtol, kTf32Rtol), std::max(fp32.atol, tf32_atol(terms))};
}

bool served_or_declined(const std::string& key, DeviceType device, const std::string& name, bool may_decline) {
  if (last_kernel(key, device) == name) return true;
  if (!may_decline) return false;
  const std::vector<std::string> declined = last_declined_kernels(key, device);
  return std::find(declined.begin(), declined.end(), name) != declined.end();
}

namespace {
double scalar_loss(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                   const Tensor& w) {
  NoGradGuard ng;
  Tensor out = f(inputs);
  return sum(mul(out.to(DType::float64).to(Device::cpu()), w)).item<double>();
}
}  // namespace

std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                      double h, double rtol, double atol) {
  // Analytic gradients.
  for (Tensor& t : inputs) t.zero_grad();
  Tensor out = f(inputs);
  Tensor w = uniform(out.shape(), 0.5, 1.5);
  Tensor loss = sum(mul(out, w.to(out.device()).to(out.dtype())));
  loss.backward();

  std::ostringstream errors;
  int bad = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    MINIDL_CHECK(x.dtype() == DType::float64 && x.device().is_cpu() && x.is_contiguous(),
                 "gradcheck: inputs must be contiguous float64 CPU tensors");
    const Tensor g = x.grad();
    if (!g.defined()) {
      errors << "input " << k << ": no gradient reached it\n";
      ++bad;
      continue;
    }
    const std::vector<double> analytic = g.to_vector<double>();
    double* p = x.data<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double saved = p[i];
      const double f0 = scalar_loss(f, inputs, w);
      p[i] = saved + h;
      const double fp = scalar_loss(f, inputs, w);
      p[i] = saved - h;
      const double fm = scalar_loss(f, inputs, w);
      p[i] = saved;
      const double right = (fp - f0) / h, left = (f0 - fm) / h;
      if (std::fabs(right - left) > 1e-3 * (1 + std::fabs(right) + std::fabs(left))) continue;  // a kink
      const double numeric = (fp - fm) / (2 * h);
      // Round-off in the difference quotient is about 1e-16 * |L| / h; allow for it. A numeric gradient that
      // is not finite (the loss is NaN or infinite near x) fails, whatever the analytic one says.
      if (!std::isfinite(numeric) || !agrees(analytic[i], numeric, rtol, atol + 1e-9 * (std::fabs(f0) + 1))) {
        if (bad < 8)
          errors << "input " << k << " element " << i << ": analytic " << analytic[i] << " numeric " << numeric
                 << "\n";
        ++bad;
      }
    }
  }
  return bad == 0 ? "" : str_cat(bad, " gradient mismatches:\n", errors.str());
}

}  // namespace testing
}  // namespace minidl
