// cuda/optim.cu — fused multi-tensor optimizer steps on the GPU (in place, float32). The math is in
// ops/kernel_signatures.h (SgdStepKernel, AdamStepKernel). Accumulation convention: parameters and
// optimizer state are updated in place (p -= ..., b = ..., m = ..., v = ...).
//
// "multi_tensor": one launch for up to kMaxTensors tensors (a model with more takes one launch per
// kMaxTensors). The launch's tensors travel in the kernel's own arguments, a TensorList of pointers and
// sizes (about 1 KB, within the 4 KB a kernel's parameters may take):
//   grid (x, y): blockIdx.y picks the tensor, blockIdx.x its chunk of kChunk elements; blocks past the
//   end of a smaller tensor return at once.
// Nothing is copied to the device before the launch, so the launch can be captured in a CUDA graph
// (cuda/graph.h). (The first version packed a table of slots and chunks into a device buffer with a
// cudaMemcpyAsync from pageable memory per step: a copy a graph cannot hold.)
//
// The learning rate and the step: from the arguments, or, when the call passes device scalars
// (SgdParams/AdamParams::scalars, float64 on the GPU: {lr, first_step} or {lr, step}), read by the kernel
// when it runs: a graph replays the launch with the arguments it was captured with, and the scalars are
// how each replay gets this step's values. Adam's bias corrections 1 - beta^t are then computed on the
// device, in double, as the host does otherwise.
#include <cmath>
#include <vector>

#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::kBlock;

// Each thread updates kInFlight elements at a time, blockDim.x apart: it issues all their loads before
// any arithmetic, so kInFlight memory latencies overlap instead of following one another. A block's
// chunk is two such rounds, 8 elements a thread: small enough that a 1.2-million-element tensor is 577
// blocks (every multiprocessor busy, several blocks each), large enough to amortise a block's start.
// (The first version gave a block 32 elements a thread, one at a time: a tensor of that size was ~144
// blocks, each thread waiting out 32 latencies in a row; docs/results/README.md, issue 26, round 11.)
constexpr int kInFlight = 4;
constexpr int64_t kChunk = 2 * kInFlight * kBlock;
constexpr int kMaxTensors = 24;

struct TensorList {
  float* param[kMaxTensors];
  const float* grad[kMaxTensors];
  float* state1[kMaxTensors];  // SGD: momentum buffer (null without momentum); Adam: m
  float* state2[kMaxTensors];  // Adam: v
  int64_t numel[kMaxTensors];
};

// Every tensor defined, float32, contiguous, on `device`, with `numel` elements.
bool usable(const Tensor& t, Device device, int64_t numel) {
  return t.defined() && t.dtype() == DType::float32 && t.is_contiguous() && t.device() == device &&
         t.numel() == numel;
}

// The device scalars of a call (null: none), after checking them: `count` float64 values on `device`.
const double* device_scalars(const Tensor& scalars, Device device, int64_t count, const char* op) {
  if (!scalars.defined()) return nullptr;
  MINIDL_CHECK(scalars.dtype() == DType::float64 && scalars.numel() == count && scalars.is_contiguous() &&
                   scalars.device() == device,
               op, ": scalars must be ", count, " contiguous float64 values on ", device.str());
  return scalars.data<double>();
}

// Queues launch(list, grid) for every run of up to kMaxTensors of the non-empty tensors, in order.
// fill(list, k, i) stores tensor i in slot k of the list.
template <class Fill, class Launch>
void for_each_launch(size_t count, const std::vector<int64_t>& numels, Fill fill, Launch launch) {
  size_t i = 0;
  while (i < count) {
    TensorList list{};
    int k = 0;
    int64_t largest = 0;
    for (; i < count && k < kMaxTensors; ++i) {
      if (numels[i] == 0) continue;
      fill(list, k, i);
      list.numel[k] = numels[i];
      largest = numels[i] > largest ? numels[i] : largest;
      ++k;
    }
    if (k == 0) continue;
    launch(list, dim3(static_cast<unsigned int>((largest + kChunk - 1) / kChunk), static_cast<unsigned int>(k)));
  }
}

// ---------------------------------------------------------------- SGD

struct SgdArgs {
  float lr, momentum, one_minus_dampening, weight_decay;
  bool use_momentum, nesterov, first_step;
};

// g' = g + wd p;  b = first ? g' : momentum b + (1 - dampening) g';  d = nesterov ? g' + momentum b : b;
// p -= lr d   (without momentum: d = g'). scalars (or null): {lr, first_step}.
__global__ void sgd_kernel(TensorList list, SgdArgs a, const double* scalars) {
  const int k = blockIdx.y;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * kChunk, numel = list.numel[k];
  if (start >= numel) return;
  const int64_t end = start + kChunk < numel ? start + kChunk : numel;
  const float lr = scalars ? static_cast<float>(scalars[0]) : a.lr;
  const bool first_step = scalars ? scalars[1] != 0 : a.first_step;
  float* param = list.param[k];
  const float* grad = list.grad[k];
  float* buffer = list.state1[k];
  for (int64_t base = start + threadIdx.x; base < end; base += kInFlight * blockDim.x) {
    float p[kInFlight], g[kInFlight], b[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {  // loads first ...
      const int64_t i = base + u * blockDim.x;
      if (i < end) {
        p[u] = param[i];
        g[u] = grad[i];
        if (a.use_momentum && !first_step) b[u] = buffer[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {  // ... then the update
      const int64_t i = base + u * blockDim.x;
      if (i >= end) break;
      const float gp = g[u] + a.weight_decay * p[u];
      float d = gp;
      if (a.use_momentum) {
        const float bu = first_step ? gp : a.momentum * b[u] + a.one_minus_dampening * gp;
        buffer[i] = bu;
        d = a.nesterov ? gp + a.momentum * bu : bu;
      }
      param[i] = p[u] - lr * d;
    }
  }
}

bool sgd_multi_tensor(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                      std::vector<Tensor>& momentum_buffers, const SgdParams& h) {
  if (params.empty()) return true;
  const bool use_momentum = h.momentum != 0;
  MINIDL_CHECK(grads.size() == params.size(), "sgd_step: ", params.size(), " parameters but ", grads.size(),
               " gradients");
  MINIDL_CHECK(!use_momentum || momentum_buffers.size() == params.size(), "sgd_step: ", params.size(),
               " parameters but ", momentum_buffers.size(), " momentum buffers");
  const Device device = params[0].device();
  std::vector<int64_t> numels;
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t n = params[i].numel();
    if (!usable(params[i], device, n) || !usable(grads[i], device, n)) return false;
    if (use_momentum && !usable(momentum_buffers[i], device, n)) return false;
    numels.push_back(n);
  }
  const double* scalars = device_scalars(h.scalars, device, 2, "sgd_step");
  cudaStream_t s = cuda::launch_stream(params[0]);
  SgdArgs a;
  a.lr = static_cast<float>(h.lr);
  a.momentum = static_cast<float>(h.momentum);
  a.one_minus_dampening = static_cast<float>(1.0 - h.dampening);
  a.weight_decay = static_cast<float>(h.weight_decay);
  a.use_momentum = use_momentum;
  a.nesterov = h.nesterov;
  a.first_step = h.first_step;
  for_each_launch(
      params.size(), numels,
      [&](TensorList& list, int k, size_t i) {
        list.param[k] = params[i].data<float>();
        list.grad[k] = grads[i].data<float>();
        list.state1[k] = use_momentum ? momentum_buffers[i].data<float>() : nullptr;
      },
      [&](const TensorList& list, dim3 grid) {
        sgd_kernel<<<grid, kBlock, 0, s>>>(list, a, scalars);
        MINIDL_LAUNCH_CHECK();
      });
  return true;
}

// ---------------------------------------------------------------- Adam / AdamW

struct AdamArgs {
  float lr, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay;
  float bias_correction1, bias_correction2;  // 1 - beta^t, computed in double on the host
  double beta1_exact, beta2_exact;           // for the bias corrections computed on the device
  bool decoupled;
};

// Adam: g += wd p.  AdamW: p -= lr wd p.  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
// p -= lr (m / bc1) / (sqrt(v / bc2) + eps).   scalars (or null): {lr, t}, with bc = 1 - beta^t from them.
__global__ void adam_kernel(TensorList list, AdamArgs a, const double* scalars) {
  const int k = blockIdx.y;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * kChunk, numel = list.numel[k];
  if (start >= numel) return;
  const int64_t end = start + kChunk < numel ? start + kChunk : numel;
  float lr = a.lr, bias_correction1 = a.bias_correction1, bias_correction2 = a.bias_correction2;
  if (scalars) {
    lr = static_cast<float>(scalars[0]);
    bias_correction1 = static_cast<float>(1.0 - pow(a.beta1_exact, scalars[1]));
    bias_correction2 = static_cast<float>(1.0 - pow(a.beta2_exact, scalars[1]));
  }
  float* param = list.param[k];
  const float* grad = list.grad[k];
  float* first = list.state1[k];
  float* second = list.state2[k];
  for (int64_t base = start + threadIdx.x; base < end; base += kInFlight * blockDim.x) {
    float p[kInFlight], g[kInFlight], m[kInFlight], v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {  // loads first ...
      const int64_t i = base + u * blockDim.x;
      if (i < end) {
        p[u] = param[i];
        g[u] = grad[i];
        m[u] = first[i];
        v[u] = second[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {  // ... then the update
      const int64_t i = base + u * blockDim.x;
      if (i >= end) break;
      float pu = p[u], gu = g[u];
      if (a.decoupled)
        pu -= lr * a.weight_decay * pu;
      else
        gu += a.weight_decay * pu;
      const float mu = a.beta1 * m[u] + a.one_minus_beta1 * gu;
      const float vu = a.beta2 * v[u] + a.one_minus_beta2 * gu * gu;
      first[i] = mu;
      second[i] = vu;
      param[i] = pu - lr * (mu / bias_correction1) / (sqrtf(vu / bias_correction2) + a.eps);
    }
  }
}

bool adam_multi_tensor(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m,
                       std::vector<Tensor>& v, const AdamParams& h) {
  if (params.empty()) return true;
  MINIDL_CHECK(grads.size() == params.size() && m.size() == params.size() && v.size() == params.size(),
               "adam_step: ", params.size(), " parameters, ", grads.size(), " gradients, ", m.size(), " m and ",
               v.size(), " v buffers");
  MINIDL_CHECK(h.step >= 1, "adam_step: step must be >= 1, got ", h.step);
  const Device device = params[0].device();
  std::vector<int64_t> numels;
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t n = params[i].numel();
    if (!usable(params[i], device, n) || !usable(grads[i], device, n) || !usable(m[i], device, n) ||
        !usable(v[i], device, n))
      return false;
    numels.push_back(n);
  }
  const double* scalars = device_scalars(h.scalars, device, 2, "adam_step");
  cudaStream_t s = cuda::launch_stream(params[0]);
  AdamArgs a;
  a.lr = static_cast<float>(h.lr);
  a.beta1 = static_cast<float>(h.beta1);
  a.beta2 = static_cast<float>(h.beta2);
  a.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
  a.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  a.eps = static_cast<float>(h.eps);
  a.weight_decay = static_cast<float>(h.weight_decay);
  a.bias_correction1 = static_cast<float>(1.0 - std::pow(h.beta1, static_cast<double>(h.step)));
  a.bias_correction2 = static_cast<float>(1.0 - std::pow(h.beta2, static_cast<double>(h.step)));
  a.beta1_exact = h.beta1;
  a.beta2_exact = h.beta2;
  a.decoupled = h.decoupled_weight_decay;
  for_each_launch(
      params.size(), numels,
      [&](TensorList& list, int k, size_t i) {
        list.param[k] = params[i].data<float>();
        list.grad[k] = grads[i].data<float>();
        list.state1[k] = m[i].data<float>();
        list.state2[k] = v[i].data<float>();
      },
      [&](const TensorList& list, dim3 grid) {
        adam_kernel<<<grid, kBlock, 0, s>>>(list, a, scalars);
        MINIDL_LAUNCH_CHECK();
      });
  return true;
}

}  // namespace

void register_optim_cuda() {
  // From the constants above, so the listing cannot drift from the kernels.
  const std::string how = str_cat("up to ", kMaxTensors, " tensors per launch, in the kernel's arguments; a block per ",
                                  "chunk of ", kChunk, " elements, each thread with ", kInFlight,
                                  " elements' loads in flight");
  register_kernel(keys::sgd_step, DeviceType::cuda, "multi_tensor", Priority::portable, how, sgd_multi_tensor);
  register_kernel(keys::adam_step, DeviceType::cuda, "multi_tensor", Priority::portable, how, adam_multi_tensor);
}

}  // namespace minidl
