#include "core/determinism.h"

#include <atomic>

namespace minidl {

namespace {
std::atomic<bool> g_deterministic{false};
}

bool deterministic_algorithms() { return g_deterministic.load(std::memory_order_relaxed); }

void set_deterministic_algorithms(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }

}  // namespace minidl
