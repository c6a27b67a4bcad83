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

// Data-parallel sharding of the stream. Several processes that together compute one batch of `total_rows`
// samples, this one rows [first_row, first_row + rows), call set_random_shard before the step's forward
// pass (and clear_random_shard after). Each draw of `count` numbers is then this process's part of one
// draw for the whole batch:
//   per_row = count / rows;   the stream advances by per_row * total_rows;
//   this process gets the counters  offset + first_row * per_row  onward.
// So for a mask whose leading dimension is the batch (dropout on [N, ...]) the processes together use
// exactly the numbers one process would draw for the whole batch, no two processes share a number, and
// every process's stream position stays the one process's (a checkpoint's random_offset does not depend on
// the number of processes). A draw whose batch is not the leading dimension (dropout on [T, N, C]) still
// gets disjoint numbers in every process, only not the same ones as one process. count must be a
// multiple of rows. The shard is process-wide, like the stream.
void set_random_shard(int64_t first_row, int64_t rows, int64_t total_rows);
void clear_random_shard();

}  // namespace minidl
