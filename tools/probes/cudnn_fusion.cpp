// tools/probes/cudnn_fusion.cpp — which fusions cuDNN's graph API can run for minidl's two models, and how fast.
//
// Issue 26 asks for cuDNN's fusions "where it measures faster; minidl's own fused kernels where it does
// not". Before an op is built around a fusion, this program asks cuDNN (heuristics modes A and FALLBACK) for
// the engine configurations of three operation graphs on the models' float32 convolutions, builds each plan
// that finalizes, checks its output against the unfused convolution, and times it:
//
//   conv       y = conv(x, w)                                 the baseline: one node
//   bias_relu  y = relu(conv(x, w) + b)                       conv -> add -> relu, two virtual tensors
//                                                             (MNIST: Conv2d with a bias, then ReLU)
//   genstats   y = conv(x, w), sum[k] = sum of y[., k, ., .], the batch-norm statistics written by the
//              sqsum[k] = sum of y[., k, ., .]^2              convolution (captcha: Conv2d, BatchNorm2d)
//
// Each engine configuration is reported with its engine's global index, its notes (TC: tensor cores, which
// for float32 data means TF32; DOWN: converts inputs to 16 bits; RTC: compiled at run time), the workspace
// and the mean time of kRuns runs (CUDA events, after a warm-up run), and the largest difference from the
// reference (the unfused conv plan, then bias and ReLU, or the sums, on the host). minidl's strict FP32
// (--precision fp32) may use only configurations without TC; TF32 those without DOWN.
//
// Usage: cudnn_fusion_probe [GRAPH...]   (default: all three graphs on all shapes, NCHW and NHWC)
// The results and the command that made them: docs/results/README.md ("cuDNN fusions").
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda/cudnn_backend.h"

namespace {

using minidl::cudnn_backend::Desc;
using minidl::cudnn_backend::EngineNotes;

constexpr int kRuns = 20;
constexpr int kMaxPlans = 24;  // plans built per graph, case and layout (runtime-compiled ones take seconds)
constexpr int64_t kWorkspaceLimit = int64_t{1} << 30;

#define PROBE_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

using Dims = std::array<int64_t, 4>;  // [N, C, H, W] (the filter: [K, C, R, S])

// A float32 tensor descriptor of these dimensions, stored NHWC or NCHW.
std::unique_ptr<Desc> tensor(int64_t id, const Dims& dims, bool nhwc, bool is_virtual = false) {
  const minidl::Shape shape(dims.begin(), dims.end());
  return minidl::cudnn_backend::tensor_desc(id, shape, minidl::cudnn_backend::strides_of(shape, nhwc), is_virtual);
}

enum class Graph { conv, bias_relu, genstats };
const char* graph_name(Graph g) { return g == Graph::conv ? "conv" : g == Graph::bias_relu ? "bias_relu" : "genstats"; }

// The tensors' ids in the graphs and variant packs.
constexpr int64_t kX = 1, kW = 2, kY = 3, kB = 4, kSum = 5, kSqSum = 6, kConvOut = 7, kBiased = 8;

struct Case {
  const char* what;
  Dims x, w;
  int64_t pad;
};

// The float32 buffers of one case (device) and the host copies the checks read.
struct Buffers {
  float *x = nullptr, *w = nullptr, *b = nullptr, *y = nullptr, *sum = nullptr, *sqsum = nullptr;
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
};

// The operation graph of `g` on one case; null when cuDNN refuses to build it. `keep` holds the
// descriptors the graph refers to.
std::unique_ptr<Desc> build_graph(Graph g, const Case& c, bool nhwc, cudnnHandle_t handle,
                                  std::vector<std::unique_ptr<Desc>>& keep) {
  const Dims y_dims = {c.x[0], c.w[0], c.x[2] + 2 * c.pad - c.w[2] + 1, c.x[3] + 2 * c.pad - c.w[3] + 1};
  const Dims per_channel = {1, c.w[0], 1, 1};
  minidl::Conv2dParams params;
  params.pad_h = params.pad_w = static_cast<int>(c.pad);
  auto conv = minidl::cudnn_backend::convolution_desc(params);
  if (!conv->ok()) return nullptr;

  auto x = tensor(kX, c.x, nhwc);
  auto w = tensor(kW, c.w, nhwc);
  // The convolution's output: y itself, or a virtual tensor that the epilogue reads.
  auto conv_out = tensor(g == Graph::bias_relu ? kConvOut : kY, y_dims, nhwc, g == Graph::bias_relu);
  auto conv_op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  conv_op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x);
  conv_op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w);
  conv_op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *conv_out);
  conv_op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, *conv);
  conv_op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  conv_op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  if (!conv_op->finalize()) return nullptr;
  std::vector<cudnnBackendDescriptor_t> ops = {conv_op->get()};

  if (g == Graph::bias_relu) {
    auto b = tensor(kB, per_channel, nhwc);
    auto biased = tensor(kBiased, y_dims, nhwc, true);
    auto y = tensor(kY, y_dims, nhwc);
    auto add = minidl::cudnn_backend::pointwise_op(CUDNN_POINTWISE_ADD, *conv_out, b.get(), *biased, keep);
    auto relu = minidl::cudnn_backend::pointwise_op(CUDNN_POINTWISE_RELU_FWD, *biased, nullptr, *y, keep);
    if (!add->ok() || !relu->ok()) return nullptr;
    ops.push_back(add->get());
    ops.push_back(relu->get());
    for (auto* d : {&b, &biased, &y, &add, &relu}) keep.push_back(std::move(*d));
  } else if (g == Graph::genstats) {
    auto sum = tensor(kSum, per_channel, nhwc);
    auto sqsum = tensor(kSqSum, per_channel, nhwc);
    auto stats = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
    const cudnnGenStatsMode_t stats_mode = CUDNN_GENSTATS_SUM_SQSUM;
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    stats->set(CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &stats_mode);
    stats->set(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    stats->set_desc(CUDNN_ATTR_OPERATION_GENSTATS_XDESC, *conv_out);
    stats->set_desc(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, *sum);
    stats->set_desc(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, *sqsum);
    if (!stats->finalize()) return nullptr;
    ops.push_back(stats->get());
    for (auto* d : {&sum, &sqsum, &stats}) keep.push_back(std::move(*d));
  }
  for (auto* d : {&conv, &x, &w, &conv_out, &conv_op}) keep.push_back(std::move(*d));
  return minidl::cudnn_backend::operation_graph(handle, ops);
}

// Runs a plan of graph `g` on the case's buffers.
bool execute(cudnnHandle_t handle, const Desc& plan, Graph g, const Buffers& b, void* workspace) {
  std::vector<int64_t> ids = {kX, kW, kY};
  std::vector<void*> pointers = {b.x, b.w, b.y};
  if (g == Graph::bias_relu) ids.push_back(kB), pointers.push_back(b.b);
  if (g == Graph::genstats) {
    ids.push_back(kSum), pointers.push_back(b.sum);
    ids.push_back(kSqSum), pointers.push_back(b.sqsum);
  }
  return minidl::cudnn_backend::execute(handle, plan, ids, pointers, workspace);
}

std::vector<float> download(const float* d, int64_t n) {
  std::vector<float> h(static_cast<size_t>(n));
  PROBE_CUDA(cudaMemcpy(h.data(), d, sizeof(float) * static_cast<size_t>(n), cudaMemcpyDeviceToHost));
  return h;
}

// The largest |a - b| / (1 + |b|) over two equally long vectors.
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]) / (1.0 + std::fabs(double(b[i]))));
  return m;
}

// Runs every configuration of `g` on one case and layout; prints one line per configuration that builds and
// a summary line (the best strict-FP32 and TF32 times) that scripts can grep ("best").
void probe(Graph g, const Case& c, bool nhwc, cudnnHandle_t handle, const std::vector<float>& reference_y) {
  const char* layout = nhwc ? "nhwc" : "nchw";
  std::vector<std::unique_ptr<Desc>> keep;
  auto graph = build_graph(g, c, nhwc, handle, keep);
  std::printf("%s %s %s:", graph_name(g), c.what, layout);
  if (!graph) {
    std::printf(" the operation graph does not finalize\n");
    return;
  }
  const int64_t y_numel = c.x[0] * c.w[0] * (c.x[2] + 2 * c.pad - c.w[2] + 1) * (c.x[3] + 2 * c.pad - c.w[3] + 1);
  const int64_t x_numel = c.x[0] * c.x[1] * c.x[2] * c.x[3], w_numel = c.w[0] * c.w[1] * c.w[2] * c.w[3];
  Buffers b;
  PROBE_CUDA(cudaMalloc(&b.x, sizeof(float) * x_numel));
  PROBE_CUDA(cudaMalloc(&b.w, sizeof(float) * w_numel));
  PROBE_CUDA(cudaMalloc(&b.b, sizeof(float) * c.w[0]));
  PROBE_CUDA(cudaMalloc(&b.y, sizeof(float) * y_numel));
  PROBE_CUDA(cudaMalloc(&b.sum, sizeof(float) * c.w[0]));
  PROBE_CUDA(cudaMalloc(&b.sqsum, sizeof(float) * c.w[0]));
  // The same values for every graph: a fixed seed, x and w in [-1, 1], b in [-0.5, 0.5]. The layout only
  // reorders them: the reference comes from the unfused plan of the same layout.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> hx(static_cast<size_t>(x_numel)), hw(static_cast<size_t>(w_numel)), hb(static_cast<size_t>(c.w[0]));
  for (float& v : hx) v = u(rng);
  for (float& v : hw) v = u(rng) * 0.2f;
  for (float& v : hb) v = 0.5f * u(rng);
  PROBE_CUDA(cudaMemcpy(b.x, hx.data(), sizeof(float) * x_numel, cudaMemcpyHostToDevice));
  PROBE_CUDA(cudaMemcpy(b.w, hw.data(), sizeof(float) * w_numel, cudaMemcpyHostToDevice));
  PROBE_CUDA(cudaMemcpy(b.b, hb.data(), sizeof(float) * c.w[0], cudaMemcpyHostToDevice));

  std::vector<std::unique_ptr<Desc>> configs = minidl::cudnn_backend::heuristic_configs(*graph, CUDNN_HEUR_MODE_A);
  const size_t from_a = configs.size();
  for (auto& cfg : minidl::cudnn_backend::heuristic_configs(*graph, CUDNN_HEUR_MODE_FALLBACK)) configs.push_back(std::move(cfg));
  std::printf(" %zu configurations (heuristics A %zu, fallback %zu)\n", configs.size(), from_a, configs.size() - from_a);

  cudaEvent_t start, stop;
  PROBE_CUDA(cudaEventCreate(&start));
  PROBE_CUDA(cudaEventCreate(&stop));
  double best_fp32 = -1, best_tf32 = -1;
  std::vector<int64_t> seen;
  int built = 0;
  for (auto& cfg : configs) {
    const EngineNotes info = minidl::cudnn_backend::engine_notes(cfg->get());
    // Heuristics A may list an engine several times (other knobs); FALLBACK repeats A's engines.
    const bool from_fallback = static_cast<size_t>(&cfg - configs.data()) >= from_a;
    if (from_fallback && std::find(seen.begin(), seen.end(), info.engine) != seen.end()) continue;
    if (built >= kMaxPlans) break;
    const std::shared_ptr<minidl::cudnn_backend::Plan> built_plan = minidl::cudnn_backend::build_plan(handle, cfg->get());
    if (built_plan == nullptr) continue;
    seen.push_back(info.engine);
    const Desc& plan = *built_plan->plan;
    const int64_t workspace = built_plan->workspace;
    if (workspace > kWorkspaceLimit) continue;
    void* wsp = nullptr;
    if (workspace > 0) PROBE_CUDA(cudaMalloc(&wsp, static_cast<size_t>(workspace)));
    ++built;
    std::printf("  engine %3lld %-4s%-5s%-4s workspace %9lld B", static_cast<long long>(info.engine),
                info.tensor_cores ? "TC" : "", info.down_converts ? "DOWN" : "", info.runtime_compiled ? "RTC" : "",
                static_cast<long long>(workspace));
    PROBE_CUDA(cudaMemset(b.y, 0, sizeof(float) * y_numel));
    if (!execute(handle, plan, g, b, wsp)) {
      std::printf("  refused at execution\n");
      if (wsp) cudaFree(wsp);
      continue;
    }
    PROBE_CUDA(cudaDeviceSynchronize());
    // The check against the reference (the first strict conv plan's output, see main).
    const std::vector<float> y = download(b.y, y_numel);
    double diff = 0;
    if (reference_y.empty()) {
      diff = -1;  // no strict FP32 conv plan to compare with: printed as a negative difference
    } else if (g == Graph::conv) {
      diff = max_rel_diff(y, reference_y);
    } else if (g == Graph::bias_relu) {
      std::vector<float> expect(reference_y);
      const int64_t hw_plane = y_numel / (c.x[0] * c.w[0]);
      for (int64_t i = 0; i < y_numel; ++i) {
        const int64_t k = nhwc ? i % c.w[0] : (i / hw_plane) % c.w[0];
        expect[static_cast<size_t>(i)] = std::max(0.0f, reference_y[static_cast<size_t>(i)] + hb[static_cast<size_t>(k)]);
      }
      diff = max_rel_diff(y, expect);
    } else if (g == Graph::genstats) {
      // Float sums round by about eps * (sum of |terms|): the differences are scaled by that sum.
      std::vector<double> sum(static_cast<size_t>(c.w[0])), sq(sum), abs_sum(sum);
      const int64_t hw_plane = y_numel / (c.x[0] * c.w[0]);
      for (int64_t i = 0; i < y_numel; ++i) {
        const size_t k = static_cast<size_t>(nhwc ? i % c.w[0] : (i / hw_plane) % c.w[0]);
        const double v = reference_y[static_cast<size_t>(i)];
        sum[k] += v, sq[k] += v * v, abs_sum[k] += std::fabs(v);
      }
      const std::vector<float> gs = download(b.sum, c.w[0]), gq = download(b.sqsum, c.w[0]);
      for (size_t k = 0; k < sum.size(); ++k) {
        diff = std::max(diff, std::fabs(gs[k] - sum[k]) / (1.0 + abs_sum[k]));
        diff = std::max(diff, std::fabs(gq[k] - sq[k]) / (1.0 + sq[k]));
      }
      diff = std::max(diff, max_rel_diff(y, reference_y));
    }
    PROBE_CUDA(cudaEventRecord(start));
    for (int r = 0; r < kRuns; ++r) execute(handle, plan, g, b, wsp);
    PROBE_CUDA(cudaEventRecord(stop));
    PROBE_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    PROBE_CUDA(cudaEventElapsedTime(&ms, start, stop));
    const double us = 1000.0 * ms / kRuns;
    std::printf("  %9.1f us  max rel diff %.2e\n", us, diff);
    if (!info.tensor_cores && (best_fp32 < 0 || us < best_fp32)) best_fp32 = us;
    if (!info.down_converts && (best_tf32 < 0 || us < best_tf32)) best_tf32 = us;
    if (wsp) cudaFree(wsp);
  }
  if (built >= kMaxPlans) std::printf("  (stopped after %d plans)\n", kMaxPlans);
  std::printf("best %s %s %s: %d plans built; strict FP32 %s; TF32 allowed %s\n", graph_name(g), c.what, layout, built,
              best_fp32 < 0 ? "none" : (std::to_string(best_fp32) + " us").c_str(),
              best_tf32 < 0 ? "none" : (std::to_string(best_tf32) + " us").c_str());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  for (float* p : {b.x, b.w, b.b, b.y, b.sum, b.sqsum}) cudaFree(p);
}

// The reference output of a case: the first configuration of the one-node conv graph without tensor cores
// (strict FP32), run once on the same inputs as probe() makes.
std::vector<float> reference(const Case& c, bool nhwc, cudnnHandle_t handle) {
  std::vector<std::unique_ptr<Desc>> keep;
  auto graph = build_graph(Graph::conv, c, nhwc, handle, keep);
  if (!graph) return {};
  const int64_t y_numel = c.x[0] * c.w[0] * (c.x[2] + 2 * c.pad - c.w[2] + 1) * (c.x[3] + 2 * c.pad - c.w[3] + 1);
  const int64_t x_numel = c.x[0] * c.x[1] * c.x[2] * c.x[3], w_numel = c.w[0] * c.w[1] * c.w[2] * c.w[3];
  Buffers b;
  PROBE_CUDA(cudaMalloc(&b.x, sizeof(float) * x_numel));
  PROBE_CUDA(cudaMalloc(&b.w, sizeof(float) * w_numel));
  PROBE_CUDA(cudaMalloc(&b.y, sizeof(float) * y_numel));
  std::mt19937 rng(7);  // as probe() draws them
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> hx(static_cast<size_t>(x_numel)), hw(static_cast<size_t>(w_numel));
  for (float& v : hx) v = u(rng);
  for (float& v : hw) v = u(rng) * 0.2f;
  PROBE_CUDA(cudaMemcpy(b.x, hx.data(), sizeof(float) * x_numel, cudaMemcpyHostToDevice));
  PROBE_CUDA(cudaMemcpy(b.w, hw.data(), sizeof(float) * w_numel, cudaMemcpyHostToDevice));
  std::vector<float> y;
  std::vector<std::unique_ptr<Desc>> configs = minidl::cudnn_backend::heuristic_configs(*graph, CUDNN_HEUR_MODE_A);
  for (auto& cfg : minidl::cudnn_backend::heuristic_configs(*graph, CUDNN_HEUR_MODE_FALLBACK)) configs.push_back(std::move(cfg));
  for (auto& cfg : configs) {
    if (minidl::cudnn_backend::engine_notes(cfg->get()).tensor_cores) continue;
    const std::shared_ptr<minidl::cudnn_backend::Plan> built_plan = minidl::cudnn_backend::build_plan(handle, cfg->get());
    if (built_plan == nullptr) continue;
    const Desc& plan = *built_plan->plan;
    const int64_t workspace = built_plan->workspace;
    void* wsp = nullptr;
    if (workspace > kWorkspaceLimit) continue;
    if (workspace > 0) PROBE_CUDA(cudaMalloc(&wsp, static_cast<size_t>(workspace)));
    const bool ran = execute(handle, plan, Graph::conv, b, wsp);
    PROBE_CUDA(cudaDeviceSynchronize());
    if (wsp) cudaFree(wsp);
    if (!ran) continue;
    y = download(b.y, y_numel);
    break;
  }
  for (float* p : {b.x, b.w, b.y}) cudaFree(p);
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "cudnn_fusion_probe: no CUDA device\n");
    return 2;
  }
  cudnnHandle_t handle;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "cudnn_fusion_probe: cudnnCreate failed\n");
    return 2;
  }
  cudaDeviceProp prop{};
  PROBE_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; cuDNN %zu\n", prop.name, cudnnGetVersion());

  // MNIST's convolutions (Conv2d with a bias, then ReLU) at batch 64 and 1024; the captcha model's
  // 3x3 convolutions of blocks 1 to 3 (Conv2d without a bias, then BatchNorm2d) at batch 128.
  const std::vector<Case> mnist = {{"mnist_conv1_b64", {64, 1, 28, 28}, {32, 1, 3, 3}, 0},
                                   {"mnist_conv2_b64", {64, 32, 26, 26}, {64, 32, 3, 3}, 0},
                                   {"mnist_conv2_b1024", {1024, 32, 26, 26}, {64, 32, 3, 3}, 0}};
  const std::vector<Case> captcha = {{"captcha_b1_128", {128, 32, 64, 192}, {32, 32, 3, 3}, 1},
                                     {"captcha_b2_128", {128, 64, 32, 96}, {64, 64, 3, 3}, 1},
                                     {"captcha_b3_128", {128, 128, 16, 48}, {128, 128, 3, 3}, 1}};
  std::vector<std::string> wanted(argv + 1, argv + argc);
  auto want = [&wanted](Graph g) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), graph_name(g)) != wanted.end();
  };
  for (const std::string& w : wanted)
    if (w != "conv" && w != "bias_relu" && w != "genstats") {
      std::fprintf(stderr, "cudnn_fusion_probe: unknown graph '%s' (conv, bias_relu or genstats)\n", w.c_str());
      return 2;
    }
  for (bool nhwc : {false, true}) {
    for (const Case& c : mnist) {
      const std::vector<float> ref = reference(c, nhwc, handle);
      for (Graph g : {Graph::conv, Graph::bias_relu})
        if (want(g)) probe(g, c, nhwc, handle, ref);
    }
    for (const Case& c : captcha) {
      const std::vector<float> ref = reference(c, nhwc, handle);
      for (Graph g : {Graph::conv, Graph::genstats})
        if (want(g)) probe(g, c, nhwc, handle, ref);
    }
  }
  cudnnDestroy(handle);
  return 0;
}
