// core/random.h — the global seed and stream position for random numbers.
//
// Every random draw (rand, randn, a dropout mask, a shuffle) takes a block of counter values from one
// global stream: draw k numbers -> they are philox(seed, offset .. offset+k-1) and offset += k. With the
// same manual_seed the whole run is reproducible, on any device.
#pragma once
#include <cstdint>

namespace minidl {

void manual_seed(uint64_t seed);
uint64_t current_seed();
// Reserves `count` consecutive counter values of the global stream and returns the first.
uint64_t reserve_random_offset(uint64_t count);
// The stream's position: counter values reserved since manual_seed. With set_random_state a resumed
// training run continues the stream where the saved run left it (same dropout masks, same shuffles).
uint64_t current_random_offset();
void set_random_state(uint64_t seed, uint64_t offset);

}  // namespace minidl
