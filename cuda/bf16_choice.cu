// cuda/bf16_choice.cu — run_faster_of (cuda/bf16_choice.h): time the BF16 and TF32 paths of a call once,
// keep the faster.
#include "cuda/bf16_choice.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <mutex>
#include <utility>

#include "core/determinism.h"
#include "core/dispatch.h"
#include "cuda/cuda_common.h"

namespace minidl {
namespace cuda {

namespace {

struct Choice {
  bool bf16 = true;
  double bf16_ms = -1, tf32_ms = -1;  // -1: not timed (deterministic mode) or the path declined
  std::string line;                   // for bf16_choices()
};

// (key, device, deterministic mode) -> the choice. Deterministic mode's choices are its own (untimed), so
// that turning it on mid-run changes them.
using FullKey = std::tuple<ChoiceKey, int, bool>;
std::mutex g_mutex;
std::map<FullKey, Choice>& choices() {
  static auto* map = new std::map<FullKey, Choice>();  // never destroyed: see rnn_cudnn.cu
  return *map;
}

constexpr int kTimedRuns = 3;

// The fastest of kTimedRuns runs of `path` on the device's stream, in milliseconds; -1 if it declines.
double fastest_ms(int device, const std::function<bool()>& path) {
  cudaStream_t s = stream(device);
  cudaEvent_t start, stop;
  MINIDL_CUDA_CHECK(cudaEventCreate(&start));
  MINIDL_CUDA_CHECK(cudaEventCreate(&stop));
  double best = -1;
  for (int i = 0; i < kTimedRuns; ++i) {
    MINIDL_CUDA_CHECK(cudaEventRecord(start, s));
    const bool served = path();
    MINIDL_CUDA_CHECK(cudaEventRecord(stop, s));
    MINIDL_CUDA_CHECK(cudaEventSynchronize(stop));
    if (!served) {
      best = -1;
      break;
    }
    float ms = 0;
    MINIDL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = best < 0 ? ms : std::min(best, static_cast<double>(ms));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

std::string describe(const std::string& what, int device, const Choice& c) {
  if (c.bf16_ms < 0 && c.tf32_ms < 0) return str_cat(what, " on cuda:", device, ": bf16 (deterministic: not timed)");
  auto ms = [](double v) { return v < 0 ? std::string("declined") : str_cat(v, " ms"); };
  return str_cat(what, " on cuda:", device, ": ", c.bf16 ? "bf16" : "tf32", " (bf16 ", ms(c.bf16_ms), ", tf32 ",
                 ms(c.tf32_ms), ")");
}

}  // namespace

bool run_faster_of(const ChoiceKey& call, int device, const std::function<std::string()>& what,
                   const std::function<bool()>& bf16, const std::function<bool()>& tf32) {
  const FullKey key(call, device, deterministic_algorithms());
  bool known = false, use_bf16 = true;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = choices().find(key);
    if (it != choices().end()) known = true, use_bf16 = it->second.bf16;
  }
  // The paths run without the lock: they dispatch casts and cuDNN searches of their own.
  if (known) return use_bf16 ? bf16() : tf32();

  Choice c;
  if (deterministic_algorithms()) {  // no timing: the same path on every run
    if (!bf16()) return false;
  } else {
    // Each path once untimed (cuDNN's algorithm search, first launches), then timed.
    const bool bf16_served = bf16();
    const bool tf32_served = tf32();
    if (!bf16_served && !tf32_served) return false;  // the kernel declines; nothing to remember
    c.bf16_ms = bf16_served ? fastest_ms(device, bf16) : -1;
    c.tf32_ms = tf32_served ? fastest_ms(device, tf32) : -1;
    c.bf16 = c.bf16_ms >= 0 && (c.tf32_ms < 0 || c.bf16_ms <= c.tf32_ms);
    // The call's output: the kept path's, run last.
    if (!(c.bf16 ? bf16() : tf32())) return false;
  }
  c.line = describe(what(), device, c);
  if (KernelRegistry::instance().log_level() >= 1)
    std::fprintf(stderr, "[minidl dispatch] --precision bf16: %s\n", c.line.c_str());
  std::lock_guard<std::mutex> lock(g_mutex);
  choices()[key] = std::move(c);
  return true;
}

std::vector<std::string> bf16_choices() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::string> out;
  for (const auto& entry : choices()) out.push_back(entry.second.line);
  return out;
}

}  // namespace cuda
}  // namespace minidl
