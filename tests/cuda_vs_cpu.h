// tests/cuda_vs_cpu.h — helpers of the tests that hold CUDA kernels to the naive CPU reference
// (tests/test_cuda_kernels_vs_cpu.cpp, tests/test_cuda_batchnorm_vs_cpu.cpp): random inputs, float32
// tolerances that grow with the length of a sum, the reference run, and a run through the ops that returns
// the output with every input gradient.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace minidl {
namespace testing {

inline Tensor random_f32(const Shape& shape, double lo = -1, double hi = 1) {
  return uniform(shape, lo, hi, DType::float32);
}

inline Tensor empty_on(const Shape& shape, Device d) { return empty(shape, TensorOptions(DType::float32, d)); }

// float32 error bound for values that are sums of `terms` products of numbers of order one: the
// rounding error of such a sum grows about linearly with its length in the worst case.
inline double atol_for(int64_t terms) { return 1e-5 + 2e-6 * static_cast<double>(terms); }
constexpr double kRtol = 1e-4;

// Runs fn with the naive CPU kernels of `op` selected: the reference.
inline void with_cpu_naive(const std::string& op, const std::function<void()>& fn) {
  SelectionReset reset;
  select_kernel(op, DeviceType::cpu, "naive");
  fn();
}

inline int64_t out_size(int64_t in, int k, int s, int pad) { return (in + 2 * pad - k) / s + 1; }

// ---------------------------------------------------------------- through the ops, with autograd

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradRun {
  Tensor out;
  std::vector<Tensor> grads;
};

// Copies the inputs to d as leaves that need gradients, computes f, backpropagates sum(f * weight).
inline GradRun run_with_grad(const OpFn& f, const std::vector<Tensor>& inputs, const Tensor& weight, Device d) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    Tensor leaf = t.detach().to(d).detach();
    leaf.requires_grad_();
    leaves.push_back(leaf);
  }
  const Tensor out = f(leaves);
  sum(mul(out, weight.to(d))).backward();
  GradRun run;
  run.out = out.detach();
  for (const Tensor& leaf : leaves) run.grads.push_back(leaf.grad());
  return run;
}

}  // namespace testing
}  // namespace minidl
