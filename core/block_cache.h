// core/block_cache.h — freed memory blocks kept for reuse: keyed by exact size, within a byte limit,
// evicting the least recently freed first.
//
// A training step allocates the same activation and gradient sizes every step. The CPU backend
// (core/cpu_backend.cpp) puts each large freed block here and takes it back on the next request of the
// same size, instead of returning it to the OS and faulting fresh pages in a few milliseconds later.
// When a new block would pass the limit, the blocks freed longest ago go first (a size the program
// stopped using, such as an evaluation batch's, leaves the cache; the step's working set stays). A
// block larger than the whole limit is released at once.
//
// Not thread-safe: the owner locks around every call.
#pragma once
#include <cstddef>
#include <functional>
#include <iterator>
#include <list>
#include <map>
#include <string>
#include <utility>

namespace minidl {

// The CPU backend's cache limit (core/cpu_backend.cpp): a quarter of the memory the process may use, the
// smaller of physical_bytes and a cgroup limit (0: none), and at least the smaller of 1 GiB and half of it.
size_t cpu_cache_limit(size_t physical_bytes, size_t cgroup_bytes);
// The memory limit of this process's cgroup in bytes (v2 memory.max, else v1 memory.limit_in_bytes), or
// 0 when there is none (unlimited, or not in a container). The second form reads the given files (tests).
size_t cgroup_memory_limit();
size_t cgroup_memory_limit(const std::string& v2_path, const std::string& v1_path);

class BlockCache {
 public:
  // `release` gives a block back for good (std::free for the CPU backend).
  BlockCache(size_t limit_bytes, std::function<void(void*)> release)
      : limit_(limit_bytes), release_(std::move(release)) {}
  ~BlockCache() { release_all(); }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A cached block of exactly `size` bytes (the most recently freed one), or nullptr.
  void* take(size_t size) {
    const auto [first, last] = by_size_.equal_range(size);
    if (first == last) return nullptr;
    const auto it = std::prev(last);  // equal keys keep insertion order: the last is the newest
    void* p = it->second->ptr;
    order_.erase(it->second);
    by_size_.erase(it);
    cached_ -= size;
    return p;
  }

  // Keeps `ptr` (of `size` bytes) for reuse, evicting the least recently freed blocks while the total
  // would pass the limit; releases `ptr` itself when it alone is larger than the limit.
  void put(void* ptr, size_t size) {
    if (size > limit_) {
      release_(ptr);
      return;
    }
    while (cached_ + size > limit_) evict_oldest();
    order_.push_front(Block{ptr, size});
    by_size_.emplace(size, order_.begin());
    cached_ += size;
  }

  // Releases every cached block (before retrying an allocation that failed, and at destruction).
  void release_all() {
    while (!order_.empty()) evict_oldest();
  }

  size_t cached_bytes() const { return cached_; }
  size_t cached_blocks() const { return order_.size(); }
  size_t limit() const { return limit_; }

 private:
  struct Block {
    void* ptr;
    size_t size;
  };

  void evict_oldest() {
    const auto oldest = std::prev(order_.end());
    auto [first, last] = by_size_.equal_range(oldest->size);
    for (auto it = first; it != last; ++it) {
      if (it->second == oldest) {
        by_size_.erase(it);
        break;
      }
    }
    cached_ -= oldest->size;
    release_(oldest->ptr);
    order_.erase(oldest);
  }

  size_t limit_;
  std::function<void(void*)> release_;
  std::list<Block> order_;                                    // most recently freed first
  std::multimap<size_t, std::list<Block>::iterator> by_size_;  // size -> its blocks in order_
  size_t cached_ = 0;
};

}  // namespace minidl
