// cuda/optim.cu — fused multi-tensor optimizer steps on the GPU (in place, float32). The math is in
// ops/kernel_signatures.h (SgdStepKernel, AdamStepKernel). Accumulation convention: parameters and
// optimizer state are updated in place (p -= ..., b = ..., m = ..., v = ...).
//
// "multi_tensor": one launch for the whole parameter list, however many tensors it has. The host packs a
// table into one small device buffer:
//   slots  [num_tensors]: (param, grad, state1, state2, numel)      state = momentum buffer, or Adam's m, v
//   chunks [num_chunks]:  (slot, first element)                     every tensor cut into kChunk pieces
// and block b updates chunk b. A model with hundreds of small tensors then costs one launch, not hundreds.
//
// The table travels with one cudaMemcpyAsync from a std::vector (pageable host memory). For pageable
// memory the call returns only after the bytes are staged in the driver's own buffer, so the vector may
// be destroyed right after it: no pinned buffer to keep alive, at the price of a short host-side copy
// (a few KB). The device buffer is a tensor from the caching allocator; freeing it after the launch is
// safe because any reuse is queued on the same stream, after this kernel.
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda/device_utils.cuh"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

using cuda::kBlock;

// Elements per block: 32 per thread, enough work to amortise reading the chunk's slot.
constexpr int64_t kChunk = 32 * kBlock;

struct Slot {
  float* param;
  const float* grad;
  float* state1;  // SGD: momentum buffer (null without momentum); Adam: m
  float* state2;  // Adam: v
  int64_t numel;
};

struct Chunk {
  int64_t slot;
  int64_t start;
};

// The device copy of the table: slots then chunks, in one buffer.
struct DeviceTable {
  Tensor buffer;  // keeps the memory alive until the launch is queued
  const Slot* slots = nullptr;
  const Chunk* chunks = nullptr;
  int64_t num_chunks = 0;
};

DeviceTable upload_table(const std::vector<Slot>& slots, Device device, cudaStream_t s) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < slots.size(); ++i)
    for (int64_t start = 0; start < slots[i].numel; start += kChunk)
      chunks.push_back(Chunk{static_cast<int64_t>(i), start});
  const size_t slot_bytes = slots.size() * sizeof(Slot), chunk_bytes = chunks.size() * sizeof(Chunk);
  static_assert(sizeof(Slot) % 8 == 0 && sizeof(Chunk) % 8 == 0, "table entries must keep 8-byte alignment");
  std::vector<int64_t> host((slot_bytes + chunk_bytes) / 8);
  std::memcpy(host.data(), slots.data(), slot_bytes);
  std::memcpy(reinterpret_cast<char*>(host.data()) + slot_bytes, chunks.data(), chunk_bytes);

  DeviceTable t;
  t.buffer = empty({static_cast<int64_t>(host.size())}, TensorOptions(DType::int64, device));
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(t.buffer.raw_data(), host.data(), host.size() * 8, cudaMemcpyHostToDevice, s));
  const char* base = static_cast<const char*>(t.buffer.raw_data());
  t.slots = reinterpret_cast<const Slot*>(base);
  t.chunks = reinterpret_cast<const Chunk*>(base + slot_bytes);
  t.num_chunks = static_cast<int64_t>(chunks.size());
  return t;
}

// Every tensor defined, float32, contiguous, on `device`, with `numel` elements.
bool usable(const Tensor& t, Device device, int64_t numel) {
  return t.defined() && t.dtype() == DType::float32 && t.is_contiguous() && t.device() == device &&
         t.numel() == numel;
}

// ---------------------------------------------------------------- SGD

struct SgdArgs {
  float lr, momentum, one_minus_dampening, weight_decay;
  bool use_momentum, nesterov, first_step;
};

// g' = g + wd p;  b = first ? g' : momentum b + (1 - dampening) g';  d = nesterov ? g' + momentum b : b;
// p -= lr d   (without momentum: d = g').
__global__ void sgd_kernel(const Slot* slots, const Chunk* chunks, SgdArgs a) {
  const Chunk c = chunks[blockIdx.x];
  const Slot t = slots[c.slot];
  const int64_t end = c.start + kChunk < t.numel ? c.start + kChunk : t.numel;
  for (int64_t i = c.start + threadIdx.x; i < end; i += blockDim.x) {
    const float p = t.param[i];
    const float g = t.grad[i] + a.weight_decay * p;
    float d = g;
    if (a.use_momentum) {
      const float b = a.first_step ? g : a.momentum * t.state1[i] + a.one_minus_dampening * g;
      t.state1[i] = b;
      d = a.nesterov ? g + a.momentum * b : b;
    }
    t.param[i] = p - a.lr * d;
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
  std::vector<Slot> slots;
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t n = params[i].numel();
    if (!usable(params[i], device, n) || !usable(grads[i], device, n)) return false;
    if (use_momentum && !usable(momentum_buffers[i], device, n)) return false;
    if (n == 0) continue;
    slots.push_back(Slot{params[i].data<float>(), grads[i].data<float>(),
                         use_momentum ? momentum_buffers[i].data<float>() : nullptr, nullptr, n});
  }
  if (slots.empty()) return true;
  cudaStream_t s = cuda::launch_stream(params[0]);
  const DeviceTable table = upload_table(slots, device, s);
  SgdArgs a;
  a.lr = static_cast<float>(h.lr);
  a.momentum = static_cast<float>(h.momentum);
  a.one_minus_dampening = static_cast<float>(1.0 - h.dampening);
  a.weight_decay = static_cast<float>(h.weight_decay);
  a.use_momentum = use_momentum;
  a.nesterov = h.nesterov;
  a.first_step = h.first_step;
  sgd_kernel<<<static_cast<unsigned int>(table.num_chunks), kBlock, 0, s>>>(table.slots, table.chunks, a);
  MINIDL_LAUNCH_CHECK();
  return true;
}

// ---------------------------------------------------------------- Adam / AdamW

struct AdamArgs {
  float lr, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay;
  float bias_correction1, bias_correction2;  // 1 - beta^t, computed in double on the host
  bool decoupled;
};

// Adam: g += wd p.  AdamW: p -= lr wd p.  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
// p -= lr (m / bc1) / (sqrt(v / bc2) + eps).
__global__ void adam_kernel(const Slot* slots, const Chunk* chunks, AdamArgs a) {
  const Chunk c = chunks[blockIdx.x];
  const Slot t = slots[c.slot];
  const int64_t end = c.start + kChunk < t.numel ? c.start + kChunk : t.numel;
  for (int64_t i = c.start + threadIdx.x; i < end; i += blockDim.x) {
    float p = t.param[i];
    float g = t.grad[i];
    if (a.decoupled)
      p -= a.lr * a.weight_decay * p;
    else
      g += a.weight_decay * p;
    const float m = a.beta1 * t.state1[i] + a.one_minus_beta1 * g;
    const float v = a.beta2 * t.state2[i] + a.one_minus_beta2 * g * g;
    t.state1[i] = m;
    t.state2[i] = v;
    t.param[i] = p - a.lr * (m / a.bias_correction1) / (sqrtf(v / a.bias_correction2) + a.eps);
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
  std::vector<Slot> slots;
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t n = params[i].numel();
    if (!usable(params[i], device, n) || !usable(grads[i], device, n) || !usable(m[i], device, n) ||
        !usable(v[i], device, n))
      return false;
    if (n == 0) continue;
    slots.push_back(Slot{params[i].data<float>(), grads[i].data<float>(), m[i].data<float>(), v[i].data<float>(), n});
  }
  if (slots.empty()) return true;
  cudaStream_t s = cuda::launch_stream(params[0]);
  const DeviceTable table = upload_table(slots, device, s);
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
  a.decoupled = h.decoupled_weight_decay;
  adam_kernel<<<static_cast<unsigned int>(table.num_chunks), kBlock, 0, s>>>(table.slots, table.chunks, a);
  MINIDL_LAUNCH_CHECK();
  return true;
}

}  // namespace

void register_optim_cuda() {
  register_kernel<SgdStepKernel>("sgd_step", DeviceType::cuda, "multi_tensor", 10,
                                 "every parameter in one launch: a chunk table in device memory, one block per chunk",
                                 sgd_multi_tensor);
  register_kernel<AdamStepKernel>("adam_step", DeviceType::cuda, "multi_tensor", 10,
                                  "every parameter in one launch: a chunk table in device memory, one block per chunk",
                                  adam_multi_tensor);
}

}  // namespace minidl
