#include "nn/data.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/backend.h"
#include "core/philox.h"
#include "core/random.h"
#include "ops/ops.h"

namespace minidl {

// ------------------------------------------------------------------ TensorDataset

TensorDataset::TensorDataset(Tensor inputs, Tensor targets) {
  MINIDL_CHECK(inputs.defined() && targets.defined(), "TensorDataset: inputs and targets must be defined");
  MINIDL_CHECK(inputs.dim() >= 1 && targets.dim() >= 1 && inputs.size(0) == targets.size(0),
               "TensorDataset: inputs ", shape_str(inputs.shape()), " and targets ", shape_str(targets.shape()),
               " must have the same first dimension (the number of samples)");
  MINIDL_CHECK(inputs.device().is_cpu() && targets.device().is_cpu(),
               "TensorDataset: the tensors must be on the CPU (batches are moved to the device in the loop)");
  inputs_ = inputs.detach().contiguous();
  targets_ = targets.detach().contiguous();
}

namespace {
// Copies rows `indices` of a contiguous CPU tensor into a new tensor [indices.size(), ...].
Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& indices) {
  Shape shape = src.shape();
  const int64_t n = shape[0];
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor out = empty(shape, TensorOptions(src.dtype(), Device::cpu()));
  const size_t row_bytes = (n == 0 ? 0 : src.numel() / n) * dtype_size(src.dtype());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(out.raw_data());
  for (size_t k = 0; k < indices.size(); ++k) {
    MINIDL_CHECK(indices[k] >= 0 && indices[k] < n, "TensorDataset: sample index ", indices[k], " out of range [0, ",
                 n, ")");
    std::memcpy(to + k * row_bytes, from + indices[k] * row_bytes, row_bytes);
  }
  return out;
}
}  // namespace

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  return Batch{gather_rows(inputs_, indices), gather_rows(targets_, indices)};
}

// ------------------------------------------------------------------ DatasetSlice and shard_range

DatasetSlice::DatasetSlice(std::shared_ptr<const Dataset> dataset, int64_t begin, int64_t end)
    : dataset_(std::move(dataset)), begin_(begin), end_(end) {
  MINIDL_CHECK(dataset_ != nullptr, "DatasetSlice: no dataset");
  MINIDL_CHECK(0 <= begin && begin <= end && end <= dataset_->size(), "DatasetSlice: samples [", begin, ", ", end,
               ") of a dataset of ", dataset_->size());
}

Batch DatasetSlice::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> shifted(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    MINIDL_CHECK(indices[k] >= 0 && indices[k] < size(), "DatasetSlice: sample index ", indices[k],
                 " out of range [0, ", size(), ")");
    shifted[k] = indices[k] + begin_;
  }
  return dataset_->get_batch(shifted);
}

Range shard_range(int64_t n, int index, int count) {
  MINIDL_CHECK(count >= 1 && index >= 0 && index < count, "shard_range: part ", index, " of ", count);
  return Range{n * index / count, n * (index + 1) / count};
}

// ------------------------------------------------------------------ DataLoader

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  MINIDL_CHECK(dataset_ != nullptr, "DataLoader: no dataset");
  MINIDL_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got ", options_.batch_size);
  MINIDL_CHECK(options_.shard_count >= 1 && options_.shard_index >= 0 && options_.shard_index < options_.shard_count,
               "DataLoader: shard ", options_.shard_index, " of ", options_.shard_count);
  seed_ = options_.seed ? *options_.seed : current_seed();
  if (options_.pin_memory) {
    const std::string no_gpu = why_no_gpu();
    MINIDL_CHECK(no_gpu.empty(), "DataLoader: pin_memory is for batches copied to a GPU, and there is none (", no_gpu,
                 ")");
  }
  if (!options_.device.is_cpu())
    if (const auto* tensors = dynamic_cast<const TensorDataset*>(dataset_.get())) {
      resident_inputs_ = tensors->inputs().to(options_.device);
      resident_targets_ = tensors->targets().to(options_.device);
    }
}

int64_t DataLoader::num_batches() const {
  const int64_t n = dataset_->size(), b = options_.batch_size;
  if (options_.drop_last) return n / b;
  const bool last_skipped = n % b != 0 && n % b < options_.shard_count;  // too small to give every part a sample
  return n / b + (n % b != 0 && !last_skipped ? 1 : 0);
}

int64_t DataLoader::num_samples() const {
  return std::min(dataset_->size(), num_batches() * options_.batch_size);
}

// Fisher-Yates: for i = n-1 .. 1, swap element i with a uniform j in [0, i]. The random word for
// position i of epoch e is Philox(counter = e * 2^32 + i, key = seed + a constant), a stream of its own.
std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  std::vector<int64_t> idx(dataset_->size());
  std::iota(idx.begin(), idx.end(), 0);
  if (!options_.shuffle) return idx;
  const uint64_t key = seed_ + 0x9E3779B97F4A7C15ull;
  for (int64_t i = static_cast<int64_t>(idx.size()) - 1; i > 0; --i) {
    const Philox4 r = philox4x32_10((static_cast<uint64_t>(epoch) << 32) + static_cast<uint64_t>(i), key);
    const uint64_t word = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
    std::swap(idx[i], idx[word % static_cast<uint64_t>(i + 1)]);
  }
  return idx;
}

DataLoader::Epoch DataLoader::epoch(int64_t e, int64_t first_batch) {
  MINIDL_CHECK(first_batch >= 0 && first_batch <= num_batches(), "DataLoader: epoch ", e, " has ", num_batches(),
               " batches; cannot start at batch ", first_batch);
  const std::vector<int64_t> idx = order(e);
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> global_sizes;
  const int64_t b = options_.batch_size, total = num_samples();
  for (int64_t start = first_batch * b; start < total; start += b) {
    const int64_t n = std::min(b, total - start);
    const Range part = shard_range(n, options_.shard_index, options_.shard_count);
    batches.emplace_back(idx.begin() + start + part.begin, idx.begin() + start + part.end);
    global_sizes.push_back(n);
  }
  if (resident()) return Epoch(resident_inputs_, resident_targets_, batches, std::move(global_sizes));
  return Epoch(dataset_, std::move(batches), std::move(global_sizes), options_.prefetch, options_.pin_memory);
}

// ------------------------------------------------------------------ Epoch and its prefetch thread

struct DataLoader::Epoch::Impl {
  static constexpr size_t kQueueCapacity = 2;

  std::shared_ptr<const Dataset> dataset;
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> global_sizes;  // Batch::global_size of each batch
  bool pin_memory = false;            // CPU batches in page-locked memory
  size_t consumed = 0;  // batches handed to the consumer

  // A resident dataset: its tensors on the device, every batch's indices one after the other on the
  // same device, and where batch k's start in that list.
  Tensor inputs, targets, device_indices;
  std::vector<int64_t> first_index;

  Batch assemble(size_t k) const {
    Batch batch;
    if (inputs.defined()) {
      const int64_t begin = first_index[k], end = begin + static_cast<int64_t>(batches[k].size());
      const Tensor picks = device_indices.slice(0, begin, end);
      batch.inputs = index_select(inputs, 0, picks);
      batch.targets = index_select(targets, 0, picks);
    } else {
      batch = dataset->get_batch(batches[k]);
      if (pin_memory) {
        batch.inputs = batch.inputs.pin_memory();
        batch.targets = batch.targets.pin_memory();
      }
    }
    batch.global_size = global_sizes[k];
    return batch;
  }

  // Shared with the worker, guarded by mutex.
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Batch> ready;
  std::exception_ptr error;  // set by the worker; re-thrown at the batch that failed
  bool finished = false;     // the worker has produced everything it will produce
  bool stop = false;         // the consumer is gone
  std::thread worker;

  void produce() {
    for (size_t k = 0; k < batches.size(); ++k) {
      Batch batch;
      try {
        batch = assemble(k);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        error = std::current_exception();
        break;
      }
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return stop || ready.size() < kQueueCapacity; });
      if (stop) return;
      ready.push_back(std::move(batch));
      changed.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
    changed.notify_all();
  }

  ~Impl() {
    if (!worker.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    changed.notify_all();
    worker.join();
  }
};

DataLoader::Epoch::Epoch(std::shared_ptr<const Dataset> dataset, std::vector<std::vector<int64_t>> batches,
                         std::vector<int64_t> global_sizes, bool prefetch, bool pin_memory)
    : impl_(std::make_unique<Impl>()) {
  MINIDL_CHECK(global_sizes.size() == batches.size(), "DataLoader::Epoch: ", batches.size(), " batches but ",
               global_sizes.size(), " global sizes");
  impl_->dataset = std::move(dataset);
  impl_->batches = std::move(batches);
  impl_->global_sizes = std::move(global_sizes);
  impl_->pin_memory = pin_memory;
  if (prefetch && !impl_->batches.empty()) impl_->worker = std::thread([impl = impl_.get()] { impl->produce(); });
}

DataLoader::Epoch::Epoch(Tensor inputs, Tensor targets, const std::vector<std::vector<int64_t>>& batches,
                         std::vector<int64_t> global_sizes)
    : impl_(std::make_unique<Impl>()) {
  MINIDL_CHECK(global_sizes.size() == batches.size(), "DataLoader::Epoch: ", batches.size(), " batches but ",
               global_sizes.size(), " global sizes");
  Impl& s = *impl_;
  s.batches = batches;
  s.global_sizes = std::move(global_sizes);
  int64_t total = 0;
  for (const std::vector<int64_t>& b : batches) {
    s.first_index.push_back(total);
    total += static_cast<int64_t>(b.size());
  }
  const int64_t n = inputs.size(0);
  Tensor host_indices = empty({total}, TensorOptions(DType::int64, Device::cpu()));
  int64_t* at = host_indices.data<int64_t>();
  for (const std::vector<int64_t>& b : batches)
    for (int64_t i : b) {
      MINIDL_CHECK(i >= 0 && i < n, "DataLoader: sample index ", i, " out of range [0, ", n, ")");
      *at++ = i;
    }
  s.device_indices = host_indices.to(inputs.device());  // the epoch's one copy from the host
  s.inputs = std::move(inputs);
  s.targets = std::move(targets);
}

DataLoader::Epoch::~Epoch() = default;
DataLoader::Epoch::Epoch(Epoch&&) noexcept = default;

bool DataLoader::Epoch::next(Batch& out) {
  Impl& s = *impl_;
  if (s.consumed >= s.batches.size()) return false;
  if (!s.worker.joinable()) {  // no prefetch: assemble here
    out = s.assemble(s.consumed);
    ++s.consumed;
    return true;
  }
  std::unique_lock<std::mutex> lock(s.mutex);
  s.changed.wait(lock, [&] { return !s.ready.empty() || s.error || s.finished; });
  if (s.ready.empty()) {
    if (s.error) {
      s.consumed = s.batches.size();  // the epoch ends with the error
      std::rethrow_exception(s.error);
    }
    return false;
  }
  out = std::move(s.ready.front());
  s.ready.pop_front();
  ++s.consumed;
  s.changed.notify_all();
  return true;
}

DataLoader::Epoch::iterator::iterator(Epoch* epoch) : epoch_(epoch) {
  if (epoch_ && !epoch_->next(batch_)) epoch_ = nullptr;
}

DataLoader::Epoch::iterator& DataLoader::Epoch::iterator::operator++() {
  if (epoch_ && !epoch_->next(batch_)) epoch_ = nullptr;
  return *this;
}

}  // namespace minidl
