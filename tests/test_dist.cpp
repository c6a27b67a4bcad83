// tests/test_dist.cpp — minidl::dist and the pieces it rests on.
//
// [dist]  one process, every build: the gradient-ready hook (core/autograd.h), the sharded random stream
//         (core/random.h), sharded loading (nn/data.h), and DataParallel over a stand-in communicator
//         of one rank (buckets, overlap, gradients identical to plain training).
// [mpi]   collectives between processes: ctest runs them as `mpirun -np 2 minidl_tests "[mpi]"`
//         (tests/dist_test.sh; they hold for any number of processes, one included). all_reduce of
//         every dtype, broadcast, barrier, the async sum, the job-wide errors (run_on_root, the
//         divergence guard's agreement, examples/train_guard.h), and the central claim:
//         W processes train a small CNN (with dropout, a last batch split unevenly) through the same
//         losses and weights as one process with the same global batch and seed, to float tolerance.
//         Hidden, for tests/dist_timeout_test.sh: [mpi_timeout], two cases whose jobs end by
//         MINIDL_DIST_TIMEOUT (a rank skips a barrier; the ranks wait in different collectives).
// [cuda]  the nccl backend with a real NCCL communicator (one rank in a plain run, no MPI needed): the
//         same collective checks as mpi, and DataParallel over NCCL training like plain training.
#include <catch2/catch.hpp>
#include <cmath>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "core/autograd.h"
#include "core/random.h"
#include "core/settings.h"
#include "tests/env_scope.h"
#include "dist/communicator.h"
#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "dist/process.h"
#include "examples/train_guard.h"
#include "nn/data.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tests/skips.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// ------------------------------------------------------------------ helpers

// A communicator of one rank on any device, without any library: every collective is the identity.
// Lets the [dist] cases run DataParallel in every build.
class LoneCommunicator final : public dist::Communicator {
 public:
  explicit LoneCommunicator(Device d) : device_(d) {}
  dist::Backend backend() const override { return dist::backend_for(device_); }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Device device() const override { return device_; }
  std::string describe() const override { return "one rank, no library (test stand-in)"; }
  void all_reduce(const Tensor& t) override { check_tensor("all_reduce", t); }
  void broadcast(const Tensor& t, int) override { check_tensor("broadcast", t); }
  void barrier() override {}
  std::unique_ptr<dist::Work> all_reduce_async(const Tensor& t) override {
    check_tensor("all_reduce_async", t);
    ++async_calls;
    struct Done final : dist::Work {
      bool test() override { return true; }
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  int async_calls = 0;

 private:
  Device device_;
};

// n samples of 12x12: class c = i % 10 is a fixed +-1 pattern plus noise (from the global stream).
std::shared_ptr<TensorDataset> pattern_dataset(int64_t n) {
  const Tensor patterns = sub(mul_scalar(rand({10, 1, 12, 12}), 2.0), ones({10, 1, 12, 12}));
  std::vector<double> labels(n);
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < n; ++i) {
    labels[i] = static_cast<double>(i % 10);
    rows.push_back(patterns.slice(0, i % 10, i % 10 + 1));
  }
  const Tensor x = add(concat(rows, 0), mul_scalar(randn({n, 1, 12, 12}), 1.0));
  return std::make_shared<TensorDataset>(x, from_vector(labels, {n}, DType::int64));
}

// A small CNN with dropout in two places (batch-leading masks: the sharded stream reproduces them).
std::shared_ptr<Sequential> small_cnn() {
  return std::make_shared<Sequential>(Conv2d(1, 8, 3), ReLU(), MaxPool2d(2), Dropout(0.2), Flatten(),  // [N, 200]
                                      Linear(200, 32), ReLU(), Dropout(0.3), Linear(32, 10));
}

struct TrainResult {
  std::vector<double> losses;  // per step, of the whole batch
  NamedTensors weights;        // on the CPU
  int buckets = 0, started_in_backward = 0;
};

// Two epochs of 101 samples in batches of 12 (8 full batches, then 5: split 2 + 3 over two processes).
// With `comm`, data-parallel over its ranks (sharded loader, DataParallel); without, plain training.
TrainResult train_small_cnn(Device device, dist::Communicator* comm, size_t bucket_bytes = 2048) {
  manual_seed(11);
  auto data = pattern_dataset(101);
  auto model = small_cnn();
  model->to(device);
  std::unique_ptr<dist::DataParallel> dp;
  dist::DataParallelOptions options;
  options.bucket_bytes = bucket_bytes;
  if (comm) dp = std::make_unique<dist::DataParallel>(*model, *comm, options);
  AdamOptions ao;
  ao.lr = 3e-3;
  Adam adam(model->parameters(), ao);
  DataLoaderOptions lo;
  lo.batch_size = 12;
  lo.shuffle = true;
  lo.seed = 5;
  if (comm) {
    lo.shard_index = comm->rank();
    lo.shard_count = comm->world_size();
  }
  DataLoader loader(data, lo);
  TrainResult r;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (Batch& b : loader.epoch(epoch)) {
      if (dp) dp->begin_step(b.size(), b.global_size);
      const Tensor loss = cross_entropy((*model)(b.inputs.to(device)), b.targets.to(device));
      adam.zero_grad();
      loss.backward();
      if (dp) dp->finish_step();
      adam.step();
      double loss_sum = loss.item<double>() * static_cast<double>(b.size());
      if (dp) loss_sum = dp->sum({loss_sum})[0];
      r.losses.push_back(loss_sum / static_cast<double>(b.global_size));
    }
  for (auto& [name, t] : model->state_dict()) r.weights.emplace_back(name, t.to(Device::cpu()));
  if (dp) {
    r.buckets = static_cast<int>(dp->bucket_count());
    r.started_in_backward = dp->buckets_started_in_backward();
  }
  return r;
}

// Losses and weights of two runs agree within (rtol, atol); exact when both are 0.
void check_same_training(const TrainResult& got, const TrainResult& ref, double rtol, double atol) {
  REQUIRE(got.losses.size() == ref.losses.size());
  REQUIRE(got.losses.size() == 18);
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    INFO("step " << s << ": loss " << got.losses[s] << ", one process " << ref.losses[s]);
    CHECK(std::fabs(got.losses[s] - ref.losses[s]) <= atol + rtol * std::fabs(ref.losses[s]));
  }
  REQUIRE(got.weights.size() == ref.weights.size());
  for (size_t i = 0; i < ref.weights.size(); ++i) {
    INFO(ref.weights[i].first);
    const std::string diff = compare(got.weights[i].second, ref.weights[i].second, rtol, atol);
    CHECK(diff == "");
  }
}

}  // namespace

// ================================================================== [dist]: one process

TEST_CASE("gradient-ready hook: once per leaf, after its last accumulation, with the final gradient", "[dist]") {
  const Tensor w = from_vector({2.0, 3.0}, {2}).requires_grad_();
  const Tensor unused = from_vector({1.0}, {1}).requires_grad_();
  const Tensor x = from_vector({5.0, 7.0}, {2});
  std::vector<std::vector<float>> seen;
  GradReadyHookHandle on_w =
      add_grad_ready_hook(w, [&](const Tensor& leaf) { seen.push_back(leaf.grad().to_vector<float>()); });
  GradReadyHookHandle on_unused = add_grad_ready_hook(unused, [&](const Tensor&) { seen.push_back({-1}); });
  // w is used twice (two AccumulateGrad nodes): loss = sum(w * x) + sum(w * w); dloss/dw = x + 2w.
  const Tensor loss = add(sum(mul(w, x)), sum(mul(w, w)));
  loss.backward();
  REQUIRE(seen.size() == 1);  // once, and nothing for the leaf that got no gradient
  CHECK(seen[0] == std::vector<float>{9.0f, 13.0f});
  CHECK(w.grad().to_vector<float>() == std::vector<float>{9.0f, 13.0f});

  // A removed hook no longer runs.
  on_w = GradReadyHookHandle();
  w.zero_grad();
  sum(mul(w, x)).backward();
  CHECK(seen.size() == 1);
}

TEST_CASE("gradient-ready hook: the last layer's parameters are ready first", "[dist]") {
  manual_seed(3);
  Sequential model(Linear(4, 5), ReLU(), Linear(5, 3));
  std::vector<std::string> order;
  std::vector<GradReadyHookHandle> handles;
  for (auto& [name, p] : model.named_parameters())
    handles.push_back(add_grad_ready_hook(p, [&order, n = name](const Tensor&) { order.push_back(n); }));
  sum((model)(randn({2, 4}))).backward();
  REQUIRE(order.size() == 4);
  const auto position = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(position("2.weight") < position("0.weight"));
  CHECK(position("2.bias") < position("0.bias"));
}

TEST_CASE("shard_range: contiguous parts that cover the batch, sizes within one", "[dist]") {
  for (int64_t n : {0, 1, 5, 12, 13}) {
    for (int count : {1, 2, 3, 4}) {
      int64_t next = 0;
      for (int k = 0; k < count; ++k) {
        const Range r = shard_range(n, k, count);
        CHECK(r.begin == next);
        CHECK((r.size() == n / count || r.size() == n / count + 1));
        next = r.end;
      }
      CHECK(next == n);
    }
  }
  CHECK(shard_range(5, 0, 2).size() == 2);
  CHECK(shard_range(5, 1, 2).size() == 3);
  CHECK_THROWS_WITH(shard_range(5, 2, 2), Catch::Contains("part 2 of 2"));
}

TEST_CASE("DataLoader shards: the parts of every batch are the unsharded batch, disjoint", "[dist]") {
  std::vector<double> x(20), y(20);
  for (int i = 0; i < 20; ++i) x[i] = y[i] = i;
  auto data = std::make_shared<TensorDataset>(from_vector(x, {20, 1}), from_vector(y, {20}, DType::int64));
  for (int count : {2, 3}) {
    DataLoaderOptions o;
    o.batch_size = 6;
    o.shuffle = true;
    o.seed = 9;
    DataLoader whole(data, o);
    std::vector<std::vector<int64_t>> expected;
    for (Batch& b : whole.epoch(1)) {
      CHECK(b.global_size == b.size());
      expected.push_back(b.targets.to_vector<int64_t>());
    }
    // 20 = 3 x 6 + 2: two samples split over 2 parts, but not over 3 (a part would be empty: skipped).
    const size_t batches = count == 2 ? 4 : 3;
    std::vector<std::vector<int64_t>> joined(batches);
    std::vector<int64_t> global_sizes(batches);
    for (int k = 0; k < count; ++k) {
      o.shard_index = k;
      o.shard_count = count;
      DataLoader part(data, o);
      CHECK(part.num_batches() == static_cast<int64_t>(batches));
      size_t i = 0;
      for (Batch& b : part.epoch(1)) {
        REQUIRE(i < batches);
        CHECK(b.size() == shard_range(b.global_size, k, count).size());
        for (int64_t v : b.targets.to_vector<int64_t>()) joined[i].push_back(v);
        global_sizes[i] = b.global_size;
        ++i;
      }
      CHECK(i == batches);
    }
    for (size_t i = 0; i < batches; ++i) {
      CHECK(joined[i] == expected[i]);
      CHECK(global_sizes[i] == static_cast<int64_t>(expected[i].size()));
    }
  }
}

TEST_CASE("DatasetSlice: the samples from begin to end, renumbered from 0", "[dist]") {
  std::vector<double> y{10, 11, 12, 13, 14};
  auto data = std::make_shared<TensorDataset>(from_vector(y, {5, 1}), from_vector(y, {5}, DType::int64));
  DatasetSlice slice(data, 1, 4);
  CHECK(slice.size() == 3);
  CHECK(slice.get_batch({0, 2}).targets.to_vector<int64_t>() == std::vector<int64_t>{11, 13});
  CHECK_THROWS_WITH(slice.get_batch({3}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(DatasetSlice(data, 2, 6), Catch::Contains("[2, 6) of a dataset of 5"));
}

TEST_CASE("random shard: the parts' dropout masks are the rows of the whole batch's", "[dist]") {
  const Tensor x = ones({6, 5});
  manual_seed(21);
  rand({3});  // some earlier draw
  const std::vector<float> whole = dropout(x, 0.5, true).to_vector<float>();
  const uint64_t after_whole = current_random_offset();
  std::vector<float> parts;
  for (auto [first, rows] : {std::pair<int64_t, int64_t>{0, 2}, {2, 4}}) {  // uneven parts: 2 + 4 rows
    manual_seed(21);
    rand({3});
    set_random_shard(first, rows, 6);
    const std::vector<float> mine = dropout(x.slice(0, 0, rows), 0.5, true).to_vector<float>();
    clear_random_shard();
    CHECK(current_random_offset() == after_whole);  // the stream moved as for the whole batch
    parts.insert(parts.end(), mine.begin(), mine.end());
  }
  CHECK(parts == whole);
  set_random_shard(0, 4, 6);
  CHECK_THROWS_WITH(rand({7}), Catch::Contains("whole number per row"));
  clear_random_shard();
}

TEST_CASE("DataParallel of one rank: buckets in reverse layer order, training identical to plain", "[dist]") {
  LoneCommunicator lone(Device::cpu());
  const TrainResult plain = train_small_cnn(Device::cpu(), nullptr);
  const TrainResult dp = train_small_cnn(Device::cpu(), &lone);
  check_same_training(dp, plain, 0, 0);  // one rank: the gradients are copied, not changed
  CHECK(dp.buckets == 2);              // the layout is checked in the next case
  CHECK(dp.started_in_backward == 2);  // every bucket started inside backward
  CHECK(lone.async_calls == 2 * 18);
}

TEST_CASE("DataParallel: bucket layout and overlap switch", "[dist]") {
  LoneCommunicator lone(Device::cpu());
  manual_seed(1);
  auto model = small_cnn();
  dist::DataParallelOptions o;
  o.bucket_bytes = 2048;
  dist::DataParallel dp(*model, lone, o);
  // Reverse registration order; a bucket takes parameters while it holds under 2 KiB, so 5.weight
  // (25,600 bytes) joins the 1,448 bytes before it and closes the bucket.
  CHECK(dp.describe_buckets() ==
        "bucket 0: 6762 float32 (27048 bytes): 8.bias, 8.weight, 5.bias, 5.weight\n"
        "bucket 1: 80 float32 (320 bytes): 0.bias, 0.weight\n");
  // A bucket that reached the size exactly is closed too.
  dist::DataParallel exact(*model, lone, dist::DataParallelOptions{1448, true});
  CHECK(exact.describe_buckets() ==
        "bucket 0: 362 float32 (1448 bytes): 8.bias, 8.weight, 5.bias\n"
        "bucket 1: 6400 float32 (25600 bytes): 5.weight\n"
        "bucket 2: 80 float32 (320 bytes): 0.bias, 0.weight\n");
  dist::DataParallel one_bucket(*model, lone, dist::DataParallelOptions{size_t(1) << 20, false});
  CHECK(one_bucket.bucket_count() == 1);
  one_bucket.begin_step(4, 4);
  sum((*model)(randn({4, 1, 12, 12}))).backward();
  one_bucket.finish_step();
  CHECK(one_bucket.buckets_started_in_backward() == 0);  // overlap off: started after backward
  CHECK_THROWS_WITH(one_bucket.begin_step(3, 4), Catch::Contains("its part is 4"));
}

TEST_CASE("DivergenceGuard: alone, the first non-finite loss throws at once", "[dist]") {
  examples::DivergenceGuard guard("");
  CHECK_NOTHROW(guard.check_loss(0.5, 1, 1e-3));
  CHECK_THROWS_AS(guard.check_loss(INFINITY, 2, 1e-3), NonFiniteError);
  CHECK_THROWS_WITH(guard.check_loss(INFINITY, 2, 1e-3),
                    Catch::StartsWith("training diverged: the loss is inf at step 2 (learning rate 0.001)"));
  CHECK_NOTHROW(guard.agree());
}

TEST_CASE("MINIDL_DIST_TIMEOUT: a number of seconds from 1 to a week, or 0 or off", "[dist][settings]") {
  const std::vector<std::pair<const char*, double>> good = {{"600", 600}, {"5", 5},   {"1", 1},     {"90.5", 90.5},
                                                            {"604800", 604800}, {"0", 0}, {"0.0", 0}, {"off", 0}};
  for (const auto& [text, seconds] : good) {
    testing::EnvScope v("MINIDL_DIST_TIMEOUT", text);
    CHECK(dist_timeout_seconds() == seconds);
  }
  for (const char* bad : {"5abc", "abc", "inf", "nan", "-1", " 5", "5 ", "0.5", "604801", "1e400", "0x10", "OFF", "no"}) {
    INFO("'" << bad << "'");
    testing::EnvScope v("MINIDL_DIST_TIMEOUT", bad);
    CHECK_THROWS_WITH(dist_timeout_seconds(),
                      Catch::StartsWith(std::string("MINIDL_DIST_TIMEOUT='") + bad + "' is not valid") &&
                          Catch::Contains("expected 0 or off (wait forever), or a number of seconds from 1 to 604800"));
  }
  testing::EnvScope unset("MINIDL_DIST_TIMEOUT", "");
  CHECK(dist_timeout_seconds() == 600);
}

// ================================================================== collectives, for every backend

namespace {

// The checks every backend passes, for any number of ranks; tensors on the communicator's device.
void check_all_reduce(dist::Communicator& comm) {
  const int r = comm.rank(), w = comm.world_size();
  const Device d = comm.device();
  const double rank_sum = w * (w - 1) / 2.0;  // 0 + 1 + ... + (w-1)
  for (DType t : {DType::float32, DType::float64, DType::int32, DType::int64}) {
    INFO(dtype_name(t));
    // element i of rank r: i + 1000 r
    std::vector<double> mine(12), expected(12);
    for (int i = 0; i < 12; ++i) {
      mine[i] = i + 1000.0 * r;
      expected[i] = w * i + 1000.0 * rank_sum;
    }
    const Tensor x = from_vector(mine, {12}, TensorOptions(t, d));
    comm.all_reduce(x);
    CHECK(compare(x, from_vector(expected, {12}, t), 0, 0) == "");
  }
  // A transposed view is reduced through a contiguous copy and written back in place.
  const Tensor base = add_scalar(arange(6, TensorOptions(DType::float64, d)), r).reshape({2, 3});
  const Tensor view = base.transpose(0, 1);
  comm.all_reduce(view);
  std::vector<double> expected(6);
  for (int i = 0; i < 6; ++i) expected[i] = w * i + rank_sum;
  CHECK(compare(base, from_vector(expected, {2, 3}, DType::float64), 0, 0) == "");
}

void check_broadcast_barrier_async(dist::Communicator& comm) {
  const int r = comm.rank(), w = comm.world_size(), root = w - 1;
  const Device d = comm.device();
  const Tensor x = full({5}, 10.0 + r, TensorOptions(DType::int64, d));
  comm.broadcast(x, root);
  CHECK(x.to_vector<int64_t>() == std::vector<int64_t>(5, 10 + root));
  comm.barrier();
  const Tensor a = full({1 << 20}, 1.0 + r, TensorOptions(DType::float32, d));
  const Tensor b = full({3}, 2.0, TensorOptions(DType::float64, d));
  auto wa = comm.all_reduce_async(a);
  auto wb = comm.all_reduce_async(b);  // two in flight at once
  wb->wait();
  wa->wait();
  CHECK(a.to_vector<float>() == std::vector<float>(1 << 20, static_cast<float>(w + w * (w - 1) / 2)));
  CHECK(b.to_vector<double>() == std::vector<double>(3, 2.0 * w));
  CHECK(wa->test());
}

void check_buffers_and_sums(dist::Communicator& comm) {
  const int r = comm.rank(), w = comm.world_size();
  manual_seed(2);
  Sequential model(Conv2d(1, 2, 3), BatchNorm2d(2));
  model.to(comm.device());
  dist::DataParallel dp(model, comm);
  NamedTensors buffers = model.named_buffers();
  REQUIRE(!buffers.empty());
  for (auto& [name, t] : buffers)
    if (is_floating(t.dtype())) fill_(t, static_cast<double>(r));
  dp.average_buffers();
  for (auto& [name, t] : buffers)
    if (is_floating(t.dtype())) CHECK(t.to_vector<double>() == std::vector<double>(t.numel(), (w - 1) / 2.0));
  CHECK(dp.sum({1.0, static_cast<double>(r)}) == std::vector<double>{static_cast<double>(w), w * (w - 1) / 2.0});
}

}  // namespace

// ================================================================== [mpi]: several processes

// The mpi communicator, or nothing (with a visible warning) in a build without Open MPI, where these
// cases have nothing to test: the whole binary then still passes, e.g. on a GPU host built with
// -DMINIDL_WITH_MPI=OFF.
static std::unique_ptr<dist::Communicator> mpi_communicator_or_skip() {
  if (!dist::backend_built_in(dist::Backend::mpi)) {
    minidl::testing::skip_test("this build has no mpi backend (Open MPI not found, or -DMINIDL_WITH_MPI=OFF)");
    return nullptr;
  }
  return dist::make_communicator(dist::Backend::mpi, Device::cpu());
}

TEST_CASE("mpi: all_reduce sums every dtype in place, contiguous or not", "[mpi]") {
  auto comm = mpi_communicator_or_skip();
  if (!comm) return;
  check_all_reduce(*comm);
}

TEST_CASE("mpi: broadcast, barrier, and overlapping async sums", "[mpi]") {
  auto comm = mpi_communicator_or_skip();
  if (!comm) return;
  check_broadcast_barrier_async(*comm);
}

TEST_CASE("mpi: a problem on one rank stops every rank with the same JobError", "[mpi]") {
  const dist::ProcessInfo& p = dist::process_info();
  const std::vector<std::string> all = dist::all_gather_strings(std::string(static_cast<size_t>(p.rank), 'x'));
  REQUIRE(static_cast<int>(all.size()) == p.world_size);
  for (int k = 0; k < p.world_size; ++k) CHECK(all[k] == std::string(static_cast<size_t>(k), 'x'));
  CHECK(p.local_rank < p.local_size);
  const int last = p.world_size - 1;
  const std::string mine = p.rank == last ? "no GPU here" : "";
  const std::string expected =
      p.world_size > 1 ? "setup: rank " + std::to_string(last) + ": no GPU here" : "setup: no GPU here";
  CHECK_THROWS_AS(dist::agree_or_throw(mine, "setup"), dist::JobError);
  CHECK_THROWS_WITH(dist::agree_or_throw(mine, "setup"), expected);
  CHECK_NOTHROW(dist::agree_or_throw("", "setup"));
  // max_over_ranks: what the ranks use to agree on stopping when one of them got SIGINT.
  CHECK(dist::max_over_ranks(p.rank == last ? 2 : 0) == 2);
  CHECK(dist::max_over_ranks(0) == 0);
  CHECK(dist::max_over_ranks(p.rank) == last);
}

TEST_CASE("mpi: run_on_root runs its work on rank 0 alone and stops every rank when it fails", "[mpi]") {
  const dist::ProcessInfo& p = dist::process_info();
  int runs = 0;
  dist::run_on_root([&] { ++runs; });
  CHECK(runs == (p.rank == 0 ? 1 : 0));
  const std::string message = "--save 'out/m.ckpt': the folder 'out' does not exist";
  try {
    dist::run_on_root([&] { throw Error(message); });
    FAIL("no JobError");
  } catch (const dist::JobError& e) {
    CHECK(std::string(e.what()) == message);
    CHECK(e.exit_status() == 1);
  }
}

TEST_CASE("mpi: a loss that diverged on one rank stops every rank together, with exit status 3", "[mpi]") {
  const dist::ProcessInfo& p = dist::process_info();
  dist::DistributedRun job;
  job.rank = p.rank;
  job.world_size = p.world_size;
  examples::DivergenceGuard guard("m.ckpt", &job);
  guard.saved(2);
  guard.check_loss(1.5, 10, 0.1);
  CHECK_NOTHROW(guard.agree());
  // The last rank's loss goes bad at step 12 and rank 0's at step 13 (with one rank: both, 12 first).
  // Noting does not throw; agree() throws on every rank, naming the earliest.
  const int last = p.world_size - 1;
  if (p.rank == last) CHECK_NOTHROW(guard.check_loss(std::nan(""), 12, 0.1));
  if (p.rank == 0) CHECK_NOTHROW(guard.check_loss(INFINITY, 13, 0.1));
  const std::string where = p.world_size > 1 ? " on rank " + std::to_string(last) + " of " +
                                                   std::to_string(p.world_size)
                                             : "";
  try {
    guard.agree();
    FAIL("no JobError");
  } catch (const dist::JobError& e) {
    CHECK(e.exit_status() == examples::kExitNonFinite);
    CHECK_THAT(e.what(), Catch::StartsWith("training diverged" + where +
                                           ": the loss is nan at step 12 (learning rate 0.1). Stopped. m.ckpt "
                                           "keeps epoch 2, the last good one."));
  }
}

TEST_CASE("mpi: W processes train like one process with the same global batch and seed", "[mpi]") {
  auto comm = mpi_communicator_or_skip();
  if (!comm) return;
  const TrainResult together = train_small_cnn(Device::cpu(), comm.get());
  const TrainResult alone = train_small_cnn(Device::cpu(), nullptr);  // every rank computes the reference
  // Only the order of floating-point sums differs (gradients summed per part, then over the parts).
  check_same_training(together, alone, 1e-5, 1e-6);
  CHECK(together.started_in_backward == together.buckets);
}

TEST_CASE("mpi: DataParallel averages buffers and sums metrics over the ranks", "[mpi]") {
  auto comm = mpi_communicator_or_skip();
  if (!comm) return;
  check_buffers_and_sums(*comm);
}

// Run only by tests/dist_timeout_test.sh, each by its name (hidden, and left out of ctest's list: the job
// each starts ends with exit status 5), as `mpirun -np 2 minidl_tests NAME` with MINIDL_DIST_TIMEOUT=1 (the
// mismatched collectives: 5 s on rank 0, 60 s on rank 1).
// Here rank 1 skips a barrier and is silent (asleep, in no collective); rank 0 must end the job, naming it.
TEST_CASE("mpi timeout: rank 1 skips a barrier, rank 0 names it and ends the job", "[.][mpi_timeout]") {
  auto comm = mpi_communicator_or_skip();
  if (!comm) return;
  REQUIRE(comm->world_size() == 2);
  if (comm->rank() == 0) {
    comm->barrier();
    FAIL("the barrier returned without rank 1");
  }
  std::this_thread::sleep_for(std::chrono::seconds(60));  // rank 0 ends the job long before
  FAIL("the job was not ended");
}

// Rank 0 waits in a barrier, rank 1 in max_over_ranks (another
// collective of the same number): both answer each other, so neither names a silent rank.
TEST_CASE("mpi timeout: ranks in collectives that do not match, no rank is silent", "[.][mpi_timeout]") {
  auto comm = mpi_communicator_or_skip();
  if (!comm) return;
  REQUIRE(comm->world_size() == 2);
  if (comm->rank() == 0)
    comm->barrier();
  else
    dist::max_over_ranks(0);
  FAIL("a collective returned without its partner");
}

// ================================================================== [cuda]: NCCL

// One rank in a plain run (a real NCCL communicator, no MPI needed); under mpirun on a host with a GPU
// per process, every rank of the job (each on the GPU of its local rank).
TEST_CASE("nccl: a real communicator: the collective checks, and training like one process", "[cuda]") {
  if (!minidl::testing::have_gpu()) return;
  const Device gpu = Device::cuda(dist::process_info().local_rank);
  // With a GPU, NCCL must load: a failure here is a failure (`minidl info` says where it looked).
  auto comm = dist::make_communicator(dist::Backend::nccl, gpu);
  REQUIRE(comm->world_size() == dist::process_info().world_size);
  check_all_reduce(*comm);
  check_broadcast_barrier_async(*comm);
  check_buffers_and_sums(*comm);
  CHECK_THROWS_WITH(comm->all_reduce(ones({1})), Catch::Contains(gpu.str()));

  // The same training with and without the communicator. Not compared bit for bit even with one rank:
  // cuDNN's algorithm search may pick kernels that order their sums differently in the two runs, and
  // Adam turns such differences in near-zero gradients into differences of up to lr per step. A bucket
  // laid out or assigned wrongly moves weights by far more than the tolerance.
  const TrainResult plain = train_small_cnn(gpu, nullptr);
  const TrainResult dp = train_small_cnn(gpu, comm.get());
  check_same_training(dp, plain, 1e-3, 1e-4);
  CHECK(dp.started_in_backward == dp.buckets);
}
