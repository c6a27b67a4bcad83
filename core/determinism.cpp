#include "core/determinism.h"

#include <atomic>
#include <cstdlib>

namespace minidl {

namespace {
std::atomic<bool> g_deterministic{false};
}

bool deterministic_algorithms() { return g_deterministic.load(std::memory_order_relaxed); }

void set_deterministic_algorithms(bool on) {
  g_deterministic.store(on, std::memory_order_relaxed);
  // cuBLAS (also inside cuDNN's RNN) picks per-stream workspaces; one fixed configuration removes that
  // source of variation. Read when a cuBLAS handle is created; never overrides the user's setting.
  if (on) ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
}

}  // namespace minidl
