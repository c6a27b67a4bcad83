// tests/test_data.cpp — TensorDataset and DataLoader: every sample once per epoch, batch contents,
// reproducible shuffles, drop_last, and the prefetch thread (errors reach the consumer; leaving early
// shuts it down).
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <set>
#include <stdexcept>

#include "nn/data.h"

using namespace minidl;

namespace {

// inputs[i] = {i, 10 i} (float32 [N, 2]), targets[i] = 100 + i (int64 [N]).
std::shared_ptr<TensorDataset> counting_dataset(int64_t n) {
  std::vector<double> x, y;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<double>(i));
    x.push_back(10.0 * i);
    y.push_back(100.0 + i);
  }
  return std::make_shared<TensorDataset>(from_vector(x, {n, 2}), from_vector(y, {n}, DType::int64));
}

// Every sample index visited in one epoch, checking each batch's rows belong together.
std::vector<int64_t> visit(DataLoader& loader, int64_t epoch, std::vector<int64_t>* batch_sizes = nullptr) {
  std::vector<int64_t> seen;
  for (Batch& b : loader.epoch(epoch)) {
    CHECK(b.inputs.device() == Device::cpu());
    CHECK(b.targets.dtype() == DType::int64);
    const std::vector<float> x = b.inputs.to_vector<float>();
    const std::vector<int64_t> y = b.targets.to_vector<int64_t>();
    REQUIRE(static_cast<int64_t>(y.size()) == b.size());
    for (int64_t k = 0; k < b.size(); ++k) {
      const int64_t i = y[k] - 100;
      CHECK(x[2 * k] == static_cast<float>(i));
      CHECK(x[2 * k + 1] == static_cast<float>(10 * i));
      seen.push_back(i);
    }
    if (batch_sizes) batch_sizes->push_back(b.size());
  }
  return seen;
}

class FailingDataset : public Dataset {
 public:
  explicit FailingDataset(int64_t fail_at) : fail_at_(fail_at) {}
  int64_t size() const override { return 10; }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    for (int64_t i : indices)
      if (i == fail_at_) throw std::runtime_error("cannot decode sample " + std::to_string(i));
    return Batch{zeros({static_cast<int64_t>(indices.size()), 1}),
                 from_vector(std::vector<double>(indices.begin(), indices.end()), {static_cast<int64_t>(indices.size())},
                             DType::int64)};
  }

 private:
  int64_t fail_at_;
};

// Counts batches assembled, to see that a consumer that stops early stops the worker too.
class CountingDataset : public Dataset {
 public:
  int64_t size() const override { return 1000; }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    ++assembled;
    return Batch{zeros({static_cast<int64_t>(indices.size()), 1}), zeros({static_cast<int64_t>(indices.size())}, DType::int64)};
  }
  mutable std::atomic<int> assembled{0};
};

}  // namespace

TEST_CASE("data: every sample exactly once per epoch, in order without shuffle", "[data]") {
  for (bool prefetch : {false, true}) {
    INFO("prefetch " << prefetch);
    DataLoaderOptions o;
    o.batch_size = 4;
    o.prefetch = prefetch;
    DataLoader loader(counting_dataset(10), o);
    CHECK(loader.num_batches() == 3);
    CHECK(loader.num_samples() == 10);
    std::vector<int64_t> sizes;
    const std::vector<int64_t> seen = visit(loader, 0, &sizes);
    CHECK(sizes == std::vector<int64_t>{4, 4, 2});
    CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
}

TEST_CASE("data: shuffling is a permutation, reproducible from the seed, new each epoch", "[data]") {
  DataLoaderOptions o;
  o.batch_size = 7;
  o.shuffle = true;
  o.seed = 1234;
  DataLoader a(counting_dataset(50), o), b(counting_dataset(50), o);
  const std::vector<int64_t> a0 = visit(a, 0), a1 = visit(a, 1);
  std::vector<int64_t> sorted = a0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(50);
  for (int64_t i = 0; i < 50; ++i) all[i] = i;
  CHECK(sorted == all);
  CHECK(a0 != all);  // P(identity) = 1/50!
  CHECK(a0 != a1);
  CHECK(visit(b, 1) == a1);  // same seed and epoch: same order, whatever ran before
  CHECK(visit(b, 0) == a0);
  CHECK(a.order(0) == a0);

  o.seed = 1235;
  DataLoader c(counting_dataset(50), o);
  CHECK(visit(c, 0) != a0);
}

TEST_CASE("data: drop_last drops only the partial batch", "[data]") {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.drop_last = true;
  o.shuffle = true;
  o.seed = 7;
  DataLoader loader(counting_dataset(10), o);
  CHECK(loader.num_batches() == 2);
  CHECK(loader.num_samples() == 8);
  std::vector<int64_t> sizes;
  const std::vector<int64_t> seen = visit(loader, 3, &sizes);
  CHECK(sizes == std::vector<int64_t>{4, 4});
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 8);
  const std::vector<int64_t> order = loader.order(3);
  CHECK(seen == std::vector<int64_t>(order.begin(), order.begin() + 8));

  o.batch_size = 5;  // divides evenly: nothing dropped
  DataLoader even(counting_dataset(10), o);
  CHECK(even.num_batches() == 2);
  CHECK(visit(even, 0).size() == 10);
}

TEST_CASE("data: an epoch started at batch k yields the same batches as the whole epoch from k on", "[data]") {
  // What a run resumed in the middle of an epoch relies on: the batches after k, in every part of a
  // sharded loader, are those of the uninterrupted epoch.
  for (int shards : {1, 3}) {
    for (int shard = 0; shard < shards; ++shard) {
      DataLoaderOptions o;
      o.batch_size = 6;
      o.shuffle = true;
      o.seed = 99;
      o.shard_index = shard;
      o.shard_count = shards;
      DataLoader loader(counting_dataset(27), o);  // 4 batches of 6 and one of 3
      REQUIRE(loader.num_batches() == 5);
      std::vector<std::vector<int64_t>> whole;
      for (Batch& b : loader.epoch(2)) whole.push_back(b.targets.to_vector<int64_t>());
      for (int64_t k = 0; k <= 5; ++k) {
        INFO("shard " << shard << " of " << shards << ", first batch " << k);
        std::vector<std::vector<int64_t>> tail;
        std::vector<int64_t> global_sizes;
        for (Batch& b : loader.epoch(2, k)) {
          tail.push_back(b.targets.to_vector<int64_t>());
          global_sizes.push_back(b.global_size);
        }
        CHECK(tail == std::vector<std::vector<int64_t>>(whole.begin() + k, whole.end()));
        if (k < 5) CHECK(global_sizes.back() == 3);
      }
    }
  }
  DataLoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(counting_dataset(10), o);
  CHECK_THROWS_WITH(loader.epoch(0, 4), Catch::Contains("has 3 batches; cannot start at batch 4"));
  CHECK_THROWS_WITH(loader.epoch(0, -1), Catch::Contains("cannot start at batch -1"));
}

TEST_CASE("data: an error in the prefetch thread reaches the consumer at that batch", "[data]") {
  for (bool prefetch : {false, true}) {
    INFO("prefetch " << prefetch);
    DataLoaderOptions o;
    o.batch_size = 3;
    o.prefetch = prefetch;
    DataLoader loader(std::make_shared<FailingDataset>(7), o);  // sample 7 is in batch 2 (6, 7, 8)
    int delivered = 0;
    auto run = [&] {
      for (Batch& b : loader.epoch(0)) {
        (void)b;
        ++delivered;
      }
    };
    CHECK_THROWS_WITH(run(), "cannot decode sample 7");
    CHECK(delivered == 2);
  }
}

TEST_CASE("data: leaving an epoch early stops the prefetch thread", "[data]") {
  auto data = std::make_shared<CountingDataset>();
  DataLoaderOptions o;
  o.batch_size = 10;
  DataLoader loader(data, o);
  {
    auto epoch = loader.epoch(0);
    Batch b;
    REQUIRE(epoch.next(b));
  }  // the Epoch's destructor stops and joins the worker
  const int after = data->assembled;
  CHECK(after <= 1 + 2 + 1);  // the one consumed, a full queue, and one waiting to be queued
  int n = 0;
  for (Batch& b : loader.epoch(1)) n += static_cast<int>(b.size());
  CHECK(n == 1000);
}

TEST_CASE("data: on the CPU the loader keeps its prefetch path (no resident copy)", "[data]") {
  DataLoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(counting_dataset(10), o);
  CHECK_FALSE(loader.resident());
  std::vector<int64_t> sizes;
  CHECK(visit(loader, 0, &sizes).size() == 10);
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});
}

TEST_CASE("data: TensorDataset checks its tensors", "[data]") {
  CHECK_THROWS_WITH(TensorDataset(zeros({3, 2}), zeros({4}, DType::int64)),
                    Catch::Contains("[3,2]") && Catch::Contains("[4]") && Catch::Contains("same first dimension"));
  DataLoaderOptions o;
  o.batch_size = 0;
  CHECK_THROWS_WITH(DataLoader(counting_dataset(3), o), Catch::Contains("batch_size must be positive"));
}
