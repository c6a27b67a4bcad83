// cuda/rnn_cudnn.cu — the sequence-level GRU and LSTM through cuDNN's RNN API: kernel "cudnn" of keys
// "gru_sequence" and "lstm_sequence" (cudnnRNNForward) and of their ".backward" stages
// (cudnnRNNBackwardData_v8, then cudnnRNNBackwardWeights_v8). One implementation for both, parameterised
// by cuDNN's RNN mode (CUDNN_GRU, CUDNN_LSTM) and its number of gate blocks G (3, 4). float32 only
// (declines float64).
// Accumulation convention: y, grad_x and the parameter gradients are overwritten (=); cuDNN adds the
// weight gradients (CUDNN_WGRAD_MODE_ADD) into a weight-gradient space we zero first.
//
// The math is ops/kernel_signatures.h's. cuDNN's GRU (CUDNN_GRU, CUDNN_RNN_DOUBLE_BIAS) computes
//   r = sigmoid(W_r x + b_Wr + R_r h + b_Rr),  u = sigmoid(W_u x + b_Wu + R_u h + b_Ru)
//   h' = tanh(W_h x + b_Wh + r * (R_h h + b_Rh)),  h_t = (1 - u) * h' + u * h
// which is PyTorch's GRU with (W, R, b_W, b_R) = (W_ih, W_hh, b_ih, b_hh) and u = z. Its LSTM (CUDNN_LSTM,
// no projection, no peepholes)
//   i = sigmoid(W_i x + b_Wi + R_i h + b_Ri),  f = sigmoid(W_f x + b_Wf + R_f h + b_Rf)
//   c~ = tanh(W_c x + b_Wc + R_c h + b_Rc),    o = sigmoid(W_o x + b_Wo + R_o h + b_Ro)
//   c_t = f * c + i * c~,  h_t = o * tanh(c_t)
// is PyTorch's LSTM with c~ = g. Mapping of our parameters (per layer k and direction d; cuDNN's
// pseudo-layer is k * dirs + d, forward even), with G gate blocks in our order (r, z, n or i, f, g, o,
// which is cuDNN's order of linLayerIDs too):
//   linLayerID 0 .. G-1 (the gates):   matrix = rows [g*H, g*H + H) of w_ih ([H, in_k], row-major),
//                                      bias   = b_ih[g*H, g*H + H)
//   linLayerID G .. 2G-1 (the same):   matrix = rows of w_hh ([H, H]), bias = b_hh[...]
// cudnnGetRNNWeightParams says where each matrix and bias sits in cuDNN's weight space; we check that
// it reports the sizes we expect (H * in_k, H), so a wrong mapping fails loudly rather than silently.
//
// Per call: our parameters are packed into a weight space (device-to-device copies on our stream), and
// unpacked from the weight-gradient space after the backward. Layouts: x and y are [T, N, features]
// (CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, every sequence of length T); zero initial states (hx = NULL,
// and cx = NULL for the LSTM); the final h (and c) are not kept. Descriptors, the buffer sizes and the
// parameter offsets are built once per (device, mode, T, N, I, H, layers, directions) and cached.
// CUDA graphs (nn/graphed_step.h): a call queues only device work on the device's stream (fills, copies
// between device buffers, cuDNN's kernels; buffers from the caching allocator), so a training step that
// holds it can be captured. The plan is built (and cuDNN's weight layout located) by the first, eager call
// of a shape, which a GraphedStep's warm-up makes.
//
// The reserve (RnnSequenceReserve::kernel "cudnn"): cuDNN's training reserve space, a float32 tensor of
// at least the byte size cuDNN asked for. The backward declines any other reserve. With no gradient
// wanted the forward runs CUDNN_FWD_MODE_INFERENCE and keeps no reserve.
//
// Precision: CUDNN_FMA_MATH (exact float32, like the CPU) unless MINIDL_TF32=1, then CUDNN_DEFAULT_MATH
// (TF32 tensor cores allowed), as in cuda/conv_cudnn.cu.
// BF16 (--precision bf16, core/precision.h): the plan is built for bfloat16 data (CUDNN_DATA_BFLOAT16
// for x, y, the states and the weight space; float32 math, tensor cores), which cuDNN supports from
// version 9.13. x and the parameters are cast to bfloat16 on the way in (the weight space is packed from
// bfloat16 copies of the parameters), y, grad_x and the weight gradients are widened back to float32 on
// the way out; the backward casts y (exactly: it is a widened bfloat16) and grad_y. If cuDNN refuses
// to build a bfloat16 plan (an older cuDNN), a warning is printed once and the RNN runs in float32.
#ifdef MINIDL_WITH_CUDNN
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/dispatch.h"
#include "cuda/cuda_common.h"
#include "cuda/kernel_helpers.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr const char* kName = "cudnn";

// Where one gate's matrix or bias of one of our parameters lives in cuDNN's weight space.
struct Piece {
  size_t param;         // index into the flat parameter list
  int64_t src_offset;   // first element in our parameter tensor
  size_t dst_offset;    // byte offset in the weight space
  int64_t numel;        // H * in_k for a matrix, H for a bias
};

// The number of gate blocks of a cuDNN RNN mode (cuDNN's "linear layers" per weight, input or recurrent).
int gates_of(cudnnRNNMode_t mode) { return mode == CUDNN_LSTM ? 4 : 3; }

// Everything about one shape that does not change between calls.
struct RnnPlan {
  int device = 0;
  cudnnRNNMode_t mode = CUDNN_GRU;
  bool bf16 = false;           // bfloat16 data (element size 2), else float32 (4)
  size_t element_bytes = 4;
  int T = 0, N = 0, I = 0, H = 0, L = 0, dirs = 1;
  cudnnDropoutDescriptor_t dropout = nullptr;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnTensorDescriptor_t h_desc = nullptr;
  size_t weight_bytes = 0;
  size_t train_work_bytes = 0, train_reserve_bytes = 0;
  size_t infer_work_bytes = 0, infer_reserve_bytes = 0;
  std::vector<Piece> pieces;  // found on the first call (needs a weight space)

  RnnPlan() = default;
  RnnPlan(const RnnPlan&) = delete;
  RnnPlan& operator=(const RnnPlan&) = delete;
  ~RnnPlan() {
    if (h_desc) cudnnDestroyTensorDescriptor(h_desc);
    if (y_desc) cudnnDestroyRNNDataDescriptor(y_desc);
    if (x_desc) cudnnDestroyRNNDataDescriptor(x_desc);
    if (rnn) cudnnDestroyRNNDescriptor(rnn);
    if (dropout) cudnnDestroyDropoutDescriptor(dropout);
  }
};

using PlanKey = std::array<int, 10>;  // device, mode, T, N, I, H, layers, dirs, bf16, precision

std::unique_ptr<RnnPlan> build_plan(const PlanKey& key, cudnnHandle_t handle) {
  auto p = std::make_unique<RnnPlan>();
  p->device = key[0], p->mode = static_cast<cudnnRNNMode_t>(key[1]);
  p->T = key[2], p->N = key[3], p->I = key[4], p->H = key[5], p->L = key[6], p->dirs = key[7];
  p->bf16 = key[8] != 0;
  p->element_bytes = p->bf16 ? 2 : 4;
  const cudnnDataType_t type = p->bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  // No dropout between layers: a dropout descriptor with probability 0 and no state.
  MINIDL_CUDNN_CHECK(cudnnCreateDropoutDescriptor(&p->dropout));
  MINIDL_CUDNN_CHECK(cudnnSetDropoutDescriptor(p->dropout, handle, 0.0f, nullptr, 0, 0));
  MINIDL_CUDNN_CHECK(cudnnCreateRNNDescriptor(&p->rnn));
  const cudnnMathType_t math =
      p->bf16 ? CUDNN_TENSOR_OP_MATH : (cuda::tf32_enabled() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
  MINIDL_CUDNN_CHECK(cudnnSetRNNDescriptor_v8(p->rnn, CUDNN_RNN_ALGO_STANDARD, p->mode, CUDNN_RNN_DOUBLE_BIAS,
                                              p->dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                                              CUDNN_LINEAR_INPUT, type, CUDNN_DATA_FLOAT, math, p->I, p->H,
                                              /*projSize=*/p->H, p->L, p->dropout, CUDNN_RNN_PADDED_IO_ENABLED));

  // Every sequence has length T (host array: cuDNN copies it into the descriptor). The padding value is
  // read as the data type: all-zero bits are 0 in float32 and in bfloat16.
  const std::vector<int> lengths(p->N, p->T);
  float padding_fill = 0.0f;
  MINIDL_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&p->x_desc));
  MINIDL_CUDNN_CHECK(cudnnSetRNNDataDescriptor(p->x_desc, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                                               p->T, p->N, p->I, lengths.data(), &padding_fill));
  MINIDL_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&p->y_desc));
  MINIDL_CUDNN_CHECK(cudnnSetRNNDataDescriptor(p->y_desc, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                                               p->T, p->N, p->H * p->dirs, lengths.data(), &padding_fill));
  // Initial/final hidden (and LSTM cell) states [layers * dirs, N, H] (we pass none: zero initial
  // states, the final ones are not kept).
  MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->h_desc));
  const int h_dims[3] = {p->L * p->dirs, p->N, p->H};
  const int h_strides[3] = {p->N * p->H, p->H, 1};
  MINIDL_CUDNN_CHECK(cudnnSetTensorNdDescriptor(p->h_desc, type, 3, h_dims, h_strides));

  MINIDL_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle, p->rnn, &p->weight_bytes));
  MINIDL_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(handle, p->rnn, CUDNN_FWD_MODE_TRAINING, p->x_desc,
                                               &p->train_work_bytes, &p->train_reserve_bytes));
  MINIDL_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(handle, p->rnn, CUDNN_FWD_MODE_INFERENCE, p->x_desc,
                                               &p->infer_work_bytes, &p->infer_reserve_bytes));
  return p;
}

// The number of elements a cuDNN tensor descriptor describes.
int64_t described_numel(cudnnTensorDescriptor_t desc) {
  cudnnDataType_t type;
  int nb = 0, dims[8], strides[8];
  MINIDL_CUDNN_CHECK(cudnnGetTensorNdDescriptor(desc, 8, &type, &nb, dims, strides));
  int64_t n = 1;
  for (int i = 0; i < nb; ++i) n *= dims[i];
  return n;
}

// Asks cuDNN where each gate matrix and bias of each pseudo-layer lives in `weight_space` (see the
// mapping at the top of the file) and records it as pieces of our parameters.
void locate_pieces(RnnPlan& p, cudnnHandle_t handle, const void* weight_space) {
  cudnnTensorDescriptor_t m_desc = nullptr, b_desc = nullptr;
  MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m_desc));
  MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b_desc));
  std::vector<Piece> pieces;
  const int G = gates_of(p.mode);
  try {
    const char* base = static_cast<const char*>(weight_space);
    for (int k = 0; k < p.L; ++k) {
      const int64_t in = k == 0 ? p.I : int64_t{p.H} * p.dirs;
      for (int d = 0; d < p.dirs; ++d) {
        const int pseudo_layer = k * p.dirs + d;
        const size_t first = static_cast<size_t>(4 * pseudo_layer);  // w_ih, w_hh, b_ih, b_hh
        for (int lin = 0; lin < 2 * G; ++lin) {
          void* m_addr = nullptr;
          void* b_addr = nullptr;
          MINIDL_CUDNN_CHECK(cudnnGetRNNWeightParams(handle, p.rnn, pseudo_layer, p.weight_bytes, weight_space, lin,
                                                     m_desc, &m_addr, b_desc, &b_addr));
          const bool recurrent = lin >= G;
          const int gate = lin % G;
          const int64_t cols = recurrent ? p.H : in;
          const int64_t m_numel = int64_t{p.H} * cols;
          MINIDL_CHECK(m_addr != nullptr && b_addr != nullptr && described_numel(m_desc) == m_numel &&
                           described_numel(b_desc) == p.H,
                       p.mode == CUDNN_LSTM ? "lstm_sequence" : "gru_sequence",
                       " (cudnn): cuDNN's weight layout is not the expected one at layer ", k,
                       " direction ", d, " linLayerID ", lin, ": matrix of ", described_numel(m_desc),
                       " values (expected ", m_numel, "), bias of ", described_numel(b_desc), " (expected ", p.H,
                       ")");
          pieces.push_back({first + (recurrent ? 1 : 0), gate * m_numel,
                            static_cast<size_t>(static_cast<const char*>(m_addr) - base), m_numel});
          pieces.push_back({first + (recurrent ? 3 : 2), int64_t{gate} * p.H,
                            static_cast<size_t>(static_cast<const char*>(b_addr) - base), p.H});
        }
      }
    }
  } catch (...) {
    cudnnDestroyTensorDescriptor(m_desc);
    cudnnDestroyTensorDescriptor(b_desc);
    throw;
  }
  cudnnDestroyTensorDescriptor(m_desc);
  cudnnDestroyTensorDescriptor(b_desc);
  p.pieces = std::move(pieces);
}

// The plan cache. Deliberately never destroyed: its descriptors would otherwise be destroyed during
// static destruction, after cuDNN may already be unloaded. Calls hold the mutex from lookup to the last
// cuDNN call (cuDNN descriptors are not meant for concurrent use).
std::mutex g_plan_mutex;
std::map<PlanKey, std::unique_ptr<RnnPlan>>& plans() {
  static auto* cache = new std::map<PlanKey, std::unique_ptr<RnnPlan>>();
  return *cache;
}

// Set when cuDNN refused a bfloat16 plan: from then on the RNN runs in float32 under --precision bf16.
std::atomic<bool> g_bf16_refused{false};

RnnPlan& plan_for(PlanKey key, cudnnHandle_t handle) {
  auto it = plans().find(key);
  if (it != plans().end()) return *it->second;
  if (key[8] != 0) {
    try {
      return *plans().emplace(key, build_plan(key, handle)).first->second;
    } catch (const Error& e) {
      g_bf16_refused = true;
      std::fprintf(stderr, "minidl: warning: this cuDNN (%d) has no bfloat16 RNN (%s); under --precision bf16 the "
                   "GRU and LSTM run in float32\n", static_cast<int>(cudnnGetVersion()), e.what());
      key[8] = 0;
      it = plans().find(key);
      if (it != plans().end()) return *it->second;
    }
  }
  return *plans().emplace(key, build_plan(key, handle)).first->second;
}

// The tensors in the plan's data type: t itself (float32), or a bfloat16 copy.
Tensor in_plan_type(const RnnPlan& p, const Tensor& t) { return p.bf16 ? t.to(DType::bfloat16) : t; }
Tensor empty_in_plan_type(const RnnPlan& p, const Tensor& like) {
  return p.bf16 ? empty(like.shape(), TensorOptions(DType::bfloat16, like.device())) : like;
}

// The weight space holding our parameters in cuDNN's layout (and data type).
Tensor pack_weights(RnnPlan& p, cudnnHandle_t handle, const std::vector<Tensor>& params, cudaStream_t s) {
  Tensor space = cuda::scratch_bytes(p.weight_bytes, p.device);
  char* base = static_cast<char*>(space.raw_data());
  // Zero first: whatever cuDNN keeps between the pieces (alignment padding) holds no stale values.
  MINIDL_CUDA_CHECK(cudaMemsetAsync(base, 0, p.weight_bytes, s));
  if (p.pieces.empty()) locate_pieces(p, handle, base);
  std::vector<Tensor> typed;
  for (const Tensor& t : params) typed.push_back(in_plan_type(p, t));
  for (const Piece& c : p.pieces)
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(base + c.dst_offset,
                                      static_cast<const char*>(typed[c.param].raw_data()) + c.src_offset * p.element_bytes,
                                      c.numel * p.element_bytes, cudaMemcpyDeviceToDevice, s));
  return space;
}

void unpack_gradients(const RnnPlan& p, const Tensor& space, std::vector<Tensor>& grads, cudaStream_t s) {
  const char* base = static_cast<const char*>(space.raw_data());
  std::vector<Tensor> typed;
  for (const Tensor& g : grads) typed.push_back(empty_in_plan_type(p, g));
  for (const Piece& c : p.pieces)
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(typed[c.param].raw_data()) + c.src_offset * p.element_bytes,
                                      base + c.dst_offset, c.numel * p.element_bytes, cudaMemcpyDeviceToDevice, s));
  if (p.bf16)
    for (size_t k = 0; k < grads.size(); ++k) copy_(grads[k], typed[k]);  // widened to float32, exactly
}

// cuDNN wants the sequence lengths on the device too (read asynchronously by its kernels). Filled there by
// a kernel rather than copied from the host: a copy from host memory cannot be captured in a CUDA graph
// (nn/graphed_step.h), a fill can, and each replay refills them.
Tensor device_lengths(const RnnPlan& p) {
  return full({p.N}, static_cast<double>(p.T), TensorOptions(DType::int32, Device::cuda(p.device)));
}

// Float32 and sizes cuDNN can take (int everywhere); fills the plan key.
bool accepts(cudnnRNNMode_t mode, const Tensor& x, const std::vector<Tensor>& params, int num_layers,
             bool bidirectional, PlanKey& key) {
  if (x.dtype() != DType::float32) return false;
  for (const Tensor& t : params)
    if (t.dtype() != DType::float32) return false;
  const int64_t T = x.shape()[0], N = x.shape()[1], I = x.shape()[2], H = params[1].shape()[1];
  const int dirs = bidirectional ? 2 : 1;
  for (int64_t v : {T, N, I, H, T * N * I, T * N * H * dirs, gates_of(mode) * H * std::max(I, H * dirs)})
    if (!cuda::fits_int(v)) return false;
  const bool bf16 = cuda::bf16_enabled() && !g_bf16_refused;
  key = {x.device().index, static_cast<int>(mode), int(T), int(N), int(I), int(H), num_layers, dirs, bf16 ? 1 : 0,
         static_cast<int>(float32_precision())};
  return true;
}

template <cudnnRNNMode_t Mode>
bool sequence_cudnn(const Tensor& x, const std::vector<Tensor>& params, int num_layers, bool bidirectional,
                    bool keep_reserve, Tensor& y, RnnSequenceReserve& reserve) {
  PlanKey key;
  if (!accepts(Mode, x, params, num_layers, bidirectional, key)) return false;
  const int device = key[0];
  cuda::set_device(device);
  cudnnHandle_t handle = cuda::cudnn_handle(device);
  cudaStream_t s = cuda::stream(device);
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  RnnPlan& p = plan_for(key, handle);

  const Tensor weights = pack_weights(p, handle, params, s);
  const Tensor lengths = device_lengths(p);
  const Tensor x_in = in_plan_type(p, x);
  Tensor y_out = empty_in_plan_type(p, y);
  const cudnnForwardMode_t mode = keep_reserve ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
  const size_t work_bytes = keep_reserve ? p.train_work_bytes : p.infer_work_bytes;
  const size_t reserve_bytes = keep_reserve ? p.train_reserve_bytes : p.infer_reserve_bytes;
  const Tensor work = cuda::scratch_bytes(work_bytes > 0 ? work_bytes : 1, device);
  Tensor kept = cuda::scratch_bytes(reserve_bytes > 0 ? reserve_bytes : 1, device);
  MINIDL_CUDNN_CHECK(cudnnRNNForward(handle, p.rnn, mode, lengths.data<int32_t>(), p.x_desc, x_in.raw_data(), p.y_desc,
                                     y_out.raw_data(), p.h_desc, /*hx=*/nullptr, /*hy=*/nullptr, p.h_desc, nullptr, nullptr,
                                     p.weight_bytes, weights.raw_data(), work_bytes, work.raw_data(), reserve_bytes,
                                     kept.raw_data()));
  if (p.bf16) copy_(y, y_out);  // widened to float32, exactly
  if (keep_reserve) reserve = {kName, kept};
  return true;
}

template <cudnnRNNMode_t Mode>
bool sequence_backward_cudnn(const Tensor& grad_y, const Tensor& x, const std::vector<Tensor>& params,
                             int num_layers, bool bidirectional, const Tensor& y, const RnnSequenceReserve& reserve,
                             Tensor& grad_x, std::vector<Tensor>& grad_params) {
  PlanKey key;
  if (reserve.kernel != kName || !reserve.data.defined() || !accepts(Mode, x, params, num_layers, bidirectional, key))
    return false;
  const int device = key[0];
  cuda::set_device(device);
  cudnnHandle_t handle = cuda::cudnn_handle(device);
  cudaStream_t s = cuda::stream(device);
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  RnnPlan& p = plan_for(key, handle);
  const size_t reserve_bytes = p.train_reserve_bytes;
  // A reserve of another shape (or device) is not ours to read.
  if (reserve.data.device() != x.device() ||
      static_cast<size_t>(reserve.data.numel()) * sizeof(float) < reserve_bytes)
    return false;

  const Tensor weights = pack_weights(p, handle, params, s);
  const Tensor lengths = device_lengths(p);
  const Tensor work = cuda::scratch_bytes(p.train_work_bytes > 0 ? p.train_work_bytes : 1, device);
  void* kept = reserve.data.raw_data();
  // In the plan's type: y is the forward's bfloat16 output widened, so casting it back is exact.
  const Tensor x_in = in_plan_type(p, x), y_in = in_plan_type(p, y), grad_y_in = in_plan_type(p, grad_y);
  Tensor grad_x_out = empty_in_plan_type(p, grad_x);
  // Data first: it leaves in the reserve what the weight gradient then reads (cuDNN's required order).
  MINIDL_CUDNN_CHECK(cudnnRNNBackwardData_v8(handle, p.rnn, lengths.data<int32_t>(), p.y_desc, y_in.raw_data(),
                                             grad_y_in.raw_data(), p.x_desc, grad_x_out.raw_data(), p.h_desc,
                                             /*hx=*/nullptr, /*dhy=*/nullptr, /*dhx=*/nullptr, p.h_desc, nullptr,
                                             nullptr, nullptr, p.weight_bytes, weights.raw_data(), p.train_work_bytes,
                                             work.raw_data(), reserve_bytes, kept));
  const Tensor dweights = cuda::scratch_bytes(p.weight_bytes, device);
  MINIDL_CUDA_CHECK(cudaMemsetAsync(dweights.raw_data(), 0, p.weight_bytes, s));
  MINIDL_CUDNN_CHECK(cudnnRNNBackwardWeights_v8(handle, p.rnn, CUDNN_WGRAD_MODE_ADD, lengths.data<int32_t>(), p.x_desc,
                                                x_in.raw_data(), p.h_desc, /*hx=*/nullptr, p.y_desc, y_in.raw_data(),
                                                p.weight_bytes, dweights.raw_data(), p.train_work_bytes,
                                                work.raw_data(), reserve_bytes, kept));
  if (p.bf16) copy_(grad_x, grad_x_out);
  unpack_gradients(p, dweights, grad_params, s);
  return true;
}

}  // namespace

void register_rnn_cudnn_cuda() {
  const char* precision =
      "exact FP32 (FMA math) unless --precision tf32 (or MINIDL_TF32=1); BF16 data under --precision bf16";
  const std::string backward = str_cat("cudnnRNNBackwardData_v8 + cudnnRNNBackwardWeights_v8; ", precision);
  register_kernel(keys::gru_sequence, DeviceType::cuda, kName, Priority::tuned,
                  str_cat("cudnnRNNForward (CUDNN_GRU, all layers and directions); ", precision),
                  sequence_cudnn<CUDNN_GRU>);
  register_kernel(keys::gru_sequence_backward, DeviceType::cuda, kName, Priority::tuned, backward,
                  sequence_backward_cudnn<CUDNN_GRU>);
  register_kernel(keys::lstm_sequence, DeviceType::cuda, kName, Priority::tuned,
                  str_cat("cudnnRNNForward (CUDNN_LSTM, all layers and directions); ", precision),
                  sequence_cudnn<CUDNN_LSTM>);
  register_kernel(keys::lstm_sequence_backward, DeviceType::cuda, kName, Priority::tuned, backward,
                  sequence_backward_cudnn<CUDNN_LSTM>);
}

}  // namespace minidl

#endif  // MINIDL_WITH_CUDNN
