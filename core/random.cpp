#include "core/random.h"

#include <atomic>

namespace minidl {

namespace {
std::atomic<uint64_t> global_seed{0x5eed5eedull};
std::atomic<uint64_t> global_offset{0};
}  // namespace

void manual_seed(uint64_t seed) {
  global_seed = seed;
  global_offset = 0;
}

uint64_t current_seed() { return global_seed; }

uint64_t reserve_random_offset(uint64_t count) { return global_offset.fetch_add(count); }

uint64_t current_random_offset() { return global_offset; }

void set_random_state(uint64_t seed, uint64_t offset) {
  global_seed = seed;
  global_offset = offset;
}

}  // namespace minidl
