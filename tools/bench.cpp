// tools/bench.cpp — `minidl bench`: every registered kernel of matmul and conv2d (forward and both
// backward stages), timed at fixed sizes on each requested device, in GFLOP/s.
//
// Method: one warm-up call, then the median of N timed calls. Before each timed call a 64 MiB buffer is
// copied on the device (evicting the operands from the caches) and the device is synchronised; the
// clock stops after backend_for(type).synchronize(index), so asynchronous (CUDA) kernels are timed to
// completion. A kernel slower than kBudgetSeconds per call is timed fewer times (at least once; a warm-up
// call longer than the budget is itself the one measurement). Each kernel is chosen with select_kernel
// and last_kernel confirms it ran (a kernel that declines the call is reported, not timed).
// FLOP counts: GEMM M x N x K = 2*M*N*K; conv2d (each stage) = 2*N*O*OH*OW*C*KH*KW.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "ops/ops.h"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {

namespace {

constexpr double kBudgetSeconds = 3.0;     // per kernel and problem, for slow kernels
constexpr int64_t kFlushBytes = 64 << 20;  // more than the last-level cache

// One timed problem: a kernel key, a printable size, its FLOP count, and one call of whichever kernel is
// selected for the key.
struct Problem {
  std::string key;
  std::string size;
  double flops = 0;
  std::function<void()> call;
};

std::vector<Problem> matmul_problems(Device d) {
  struct Gemm {
    int64_t m, n, k;
    bool trans_b;
    const char* note;
  };
  const std::vector<Gemm> sizes = {
      {512, 512, 512, false, ""}, {1024, 1024, 1024, false, ""}, {64, 128, 9216, true, " (MNIST fc1, B^T)"}};
  std::vector<Problem> problems;
  for (const Gemm& g : sizes) {
    const TensorOptions o(DType::float32, d);
    Tensor a = randn({1, g.m, g.k}, o);
    Tensor b = g.trans_b ? randn({1, g.n, g.k}, o) : randn({1, g.k, g.n}, o);
    Tensor out = empty({1, g.m, g.n}, o);
    Problem p;
    p.key = "matmul";
    p.size = str_cat(g.m, "x", g.n, "x", g.k, g.note);
    p.flops = 2.0 * g.m * g.n * g.k;
    p.call = [a, b, out, d, t = g.trans_b]() mutable { dispatch<MatmulKernel>("matmul", d, a, b, out, false, t); };
    problems.push_back(p);
  }
  return problems;
}

std::vector<Problem> conv_problems(Device d) {
  struct Conv {
    Shape x, w;
    int stride, pad;
    const char* note;
  };
  const std::vector<Conv> sizes = {{{64, 1, 28, 28}, {32, 1, 3, 3}, 1, 0, " (MNIST conv1)"},
                                   {{64, 32, 26, 26}, {64, 32, 3, 3}, 1, 0, " (MNIST conv2)"},
                                   {{16, 64, 32, 32}, {128, 64, 3, 3}, 1, 1, " pad 1"}};
  std::vector<Problem> problems;
  for (const Conv& c : sizes) {
    const TensorOptions o(DType::float32, d);
    Conv2dParams p;
    p.stride_h = p.stride_w = c.stride;
    p.pad_h = p.pad_w = c.pad;
    const int64_t oh = (c.x[2] + 2 * c.pad - c.w[2]) / c.stride + 1, ow = (c.x[3] + 2 * c.pad - c.w[3]) / c.stride + 1;
    Tensor x = randn(c.x, o), w = randn(c.w, o), y = empty({c.x[0], c.w[0], oh, ow}, o);
    Tensor gy = randn(y.shape(), o), gx = empty(c.x, o), gw = empty(c.w, o);
    const std::string size = str_cat(shape_str(c.x), "*", shape_str(c.w), c.note);
    const double flops = 2.0 * c.x[0] * c.w[0] * oh * ow * c.w[1] * c.w[2] * c.w[3];
    problems.push_back({"conv2d", size, flops, [=]() mutable { dispatch<Conv2dKernel>("conv2d", d, x, w, y, p); }});
    problems.push_back({"conv2d.backward_input", size, flops, [=]() mutable {
                          dispatch<Conv2dBackwardInputKernel>("conv2d.backward_input", d, gy, w, gx, p);
                        }});
    problems.push_back({"conv2d.backward_weight", size, flops, [=]() mutable {
                          dispatch<Conv2dBackwardWeightKernel>("conv2d.backward_weight", d, x, gy, gw, p);
                        }});
  }
  return problems;
}

std::vector<std::string> kernel_names(const std::string& key, DeviceType type) {
  std::vector<std::string> names;
  for (const KernelInfo* k : KernelRegistry::instance().all())
    if (k->key == key && k->device == type) names.push_back(k->name);
  return names;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

struct Timing {
  double median_s = 0;
  int runs = 0;
};

// Evicts the caches: 64 MiB read and 64 MiB written on the device.
struct CacheFlush {
  Tensor from, to;
  explicit CacheFlush(Device d)
      : from(zeros({kFlushBytes / 4}, TensorOptions(DType::float32, d))),
        to(empty({kFlushBytes / 4}, TensorOptions(DType::float32, d))) {}
  void run() { copy_(to, from); }
};

Timing time_calls(const Problem& p, Device d, int repeat, CacheFlush& flush) {
  DeviceBackend& backend = backend_for(d.type);
  auto start = std::chrono::steady_clock::now();
  p.call();
  backend.synchronize(d.index);
  const double warmup = seconds(start);
  if (warmup > kBudgetSeconds) return {warmup, 1};
  const int runs = std::max(1, std::min(repeat, static_cast<int>(kBudgetSeconds / std::max(warmup, 1e-9))));
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    flush.run();
    backend.synchronize(d.index);
    start = std::chrono::steady_clock::now();
    p.call();
    backend.synchronize(d.index);
    times.push_back(seconds(start));
  }
  std::sort(times.begin(), times.end());
  const double median = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  return {median, runs};
}

std::vector<Device> bench_devices(const std::string& which) {
  if (which != "all") {
    const Device d = Device::parse(which);
    check_device_usable(d);
    return {d};
  }
  std::vector<Device> devices{Device::cpu()};
  if (has_backend(DeviceType::cuda) && backend_for(DeviceType::cuda).device_count() > 0)
    devices.push_back(Device::cuda(0));
  return devices;
}

}  // namespace

int run_bench(const std::string& op, const std::string& device, int repeat) {
  MINIDL_CHECK(op == "matmul" || op == "conv2d" || op == "all", "bench: --op must be matmul, conv2d or all, not '", op,
               "'");
  MINIDL_CHECK(repeat >= 1, "bench: --repeat must be at least 1");
  const std::vector<Device> devices = bench_devices(device);
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  std::printf(
      "minidl bench: median of up to %d calls after a warm-up, caches flushed between calls; "
      "%d CPU threads (OpenMP)\n\n",
      repeat, threads);
  std::printf("%-24s %-36s %-7s %-14s %10s %10s %5s\n", "key", "size", "device", "kernel", "ms", "GFLOP/s", "runs");
  manual_seed(0);
  for (const Device d : devices) {
    CacheFlush flush(d);
    std::vector<Problem> problems;
    if (op != "conv2d") problems = matmul_problems(d);
    if (op != "matmul")
      for (Problem& p : conv_problems(d)) problems.push_back(std::move(p));
    for (const Problem& p : problems) {
      const std::string op_name = p.key.substr(0, p.key.find('.'));
      for (const std::string& name : kernel_names(p.key, d.type)) {
        reset_kernel_selection();
        select_kernel(op_name, d.type, name);
        const Timing t = time_calls(p, d, repeat, flush);
        const std::string ran = last_kernel(p.key, d.type);
        if (ran != name) {
          std::printf("%-24s %-36s %-7s %-14s declined (%s ran)\n", p.key.c_str(), p.size.c_str(), d.str().c_str(),
                      name.c_str(), ran.c_str());
          continue;
        }
        std::printf("%-24s %-36s %-7s %-14s %10.3f %10.1f %5d\n", p.key.c_str(), p.size.c_str(), d.str().c_str(),
                    name.c_str(), t.median_s * 1e3, p.flops / t.median_s * 1e-9, t.runs);
        std::fflush(stdout);
      }
    }
  }
  reset_kernel_selection();
  return 0;
}

}  // namespace minidl
