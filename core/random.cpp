#include "core/random.h"

#include <atomic>

#include "core/error.h"

namespace minidl {

namespace {
std::atomic<uint64_t> global_seed{0x5eed5eedull};
std::atomic<uint64_t> global_offset{0};

// The data-parallel shard (set_random_shard); rows == 0: none.
std::atomic<int64_t> shard_first{0}, shard_rows{0}, shard_total{0};
}  // namespace

void manual_seed(uint64_t seed) {
  global_seed = seed;
  global_offset = 0;
}

uint64_t current_seed() { return global_seed; }

uint64_t reserve_random_offset(uint64_t count) {
  const int64_t rows = shard_rows;
  if (rows == 0) return global_offset.fetch_add(count);
  MINIDL_CHECK(count % static_cast<uint64_t>(rows) == 0, "random stream: a draw of ", count, " numbers in a data-"
               "parallel step of ", rows, " rows on this process (the draw must be a whole number per row)");
  const uint64_t per_row = count / static_cast<uint64_t>(rows);
  const uint64_t base = global_offset.fetch_add(per_row * static_cast<uint64_t>(shard_total.load()));
  return base + static_cast<uint64_t>(shard_first.load()) * per_row;
}

void set_random_shard(int64_t first_row, int64_t rows, int64_t total_rows) {
  MINIDL_CHECK(rows > 0 && first_row >= 0 && first_row + rows <= total_rows, "set_random_shard: rows [", first_row,
               ", ", first_row + rows, ") of a batch of ", total_rows);
  shard_first = first_row;
  shard_total = total_rows;
  shard_rows = rows;
}

void clear_random_shard() { shard_rows = 0; }

uint64_t current_random_offset() { return global_offset; }

void set_random_state(uint64_t seed, uint64_t offset) {
  global_seed = seed;
  global_offset = offset;
}

}  // namespace minidl
