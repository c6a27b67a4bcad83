// nn/data.h — datasets and a batching loader with a background prefetch thread.
//
//   auto data = std::make_shared<TensorDataset>(images, labels);   // [N, ...] and [N, ...], CPU
//   DataLoaderOptions options;
//   options.batch_size = 64;
//   options.shuffle = true;
//   DataLoader loader(data, options);
//   for (int epoch = 0; epoch < epochs; ++epoch)
//     for (Batch& batch : loader.epoch(epoch)) {
//       Tensor x = batch.inputs.to(device), y = batch.targets.to(device);
//       ...
//     }
//
// Batches are CPU tensors; the training loop moves them to its device. With prefetch on (the default)
// a worker thread assembles the next batches (at most 2 ahead) while the training step runs. An
// exception thrown while assembling a batch is re-thrown to the consumer at that batch; leaving the loop
// early (break, exception) stops and joins the worker.
//
// Batches for a GPU that are not resident there (generated, augmented or read on the fly) go up with
// each step. Ordinary host memory makes that copy wait, as said below; with options.pin_memory the
// batches are delivered in page-locked memory and the copy is queued without waiting: the host goes on
// to queue the step's kernels while the GPU is still busy with the previous one.
//
// Data resident on the GPU (options.device = a GPU, with a TensorDataset): the loader copies the whole
// dataset to that GPU once, at construction, and assembles every batch there: each epoch's order goes up
// once (one int64 per sample), and batch b is index_select(inputs, 0, order[b*B .. b*B+B)) on the
// device, two kernel launches and no copy from the host. Why it matters: a batch copied from pageable
// host memory is staged by the driver and queued behind the previous step's kernels, so the host waits
// for the GPU at every step and cannot queue the next step's kernels ahead of it. MNIST's 60,000
// training images take 188 MB of float32 on the GPU. The batches are the same samples in the same order
// as on the CPU path (the same bits), so results and --resume do not depend on where the data lives.
//
// The order of epoch e is a pure function of (seed, e): a Fisher-Yates shuffle driven by Philox
// (core/philox.h), so runs are reproducible whatever else draws random numbers.
//
// Data-parallel reading: with shard_count = W, W loaders (one per process, same seed and options) cut every
// batch of that order into W contiguous parts and loader k yields part k (shard_range). The processes
// read disjoint samples and, together, exactly the batches one loader would yield. Batch::global_size
// says how large the whole batch was. DatasetSlice gives each process a contiguous part of a dataset
// (evaluation, where batches need not line up).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace minidl {

struct Batch {
  Tensor inputs;   // [B, ...]
  Tensor targets;  // [B, ...]
  // Set by DataLoader: the samples in the whole batch of which this is one part (a sharded loader), or
  // size() (an unsharded one). 0 in a batch straight from Dataset::get_batch.
  int64_t global_size = 0;
  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

// The samples [begin, end) of n that part `index` of `count` holds: n * index / count up to
// n * (index + 1) / count (sizes differ by at most one; a part is empty when n < count).
struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Range shard_range(int64_t n, int index, int count);

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The samples at `indices` stacked into one batch of CPU tensors. Called from the prefetch thread, so
  // it must not modify shared state.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const = 0;
};

// Samples [begin, end) of another dataset, renumbered from 0.
class DatasetSlice : public Dataset {
 public:
  DatasetSlice(std::shared_ptr<const Dataset> dataset, int64_t begin, int64_t end);
  int64_t size() const override { return end_ - begin_; }
  Batch get_batch(const std::vector<int64_t>& indices) const override;

 private:
  std::shared_ptr<const Dataset> dataset_;
  int64_t begin_, end_;
};

// Samples are the rows (dim 0) of two CPU tensors with the same first dimension, e.g. images float32
// [N, 1, 28, 28] and labels int64 [N].
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor inputs, Tensor targets);
  int64_t size() const override { return inputs_.size(0); }
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  const Tensor& inputs() const { return inputs_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor inputs_, targets_;  // contiguous
};

struct DataLoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = false;
  std::optional<uint64_t> seed;  // of the shuffle; the global seed (core/random.h) when unset
  bool drop_last = false;        // drop the last batch when it would be smaller than batch_size
  bool prefetch = true;          // assemble batches on a background thread
  // Data-parallel reading (see the header comment): this loader yields part shard_index of every batch
  // of shard_count parts; batch_size is the whole (global) batch. A batch with fewer samples than
  // shard_count (only a last, partial one can be) would leave a part empty and is skipped.
  int shard_index = 0, shard_count = 1;
  // Where the batches are delivered. A GPU with a TensorDataset: the data is resident there (see the
  // header comment) and prefetch is not used (nothing is left to do on the host). Any other dataset
  // delivers CPU batches whatever this says.
  Device device = Device::cpu();
  // CPU batches in page-locked memory (Tensor::pin_memory; the prefetch thread copies each batch there),
  // for a loop that copies them to a GPU: the copy then does not make the host wait for the GPU's queue
  // (see the header comment). Needs a usable GPU; for a resident dataset it changes nothing.
  bool pin_memory = false;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options);

  int64_t num_batches() const;
  // Samples per epoch in all parts together (the dataset size, minus a dropped or skipped last batch).
  int64_t num_samples() const;
  const DataLoaderOptions& options() const { return options_; }
  // The order in which epoch e visits the samples (identity without shuffle).
  std::vector<int64_t> order(int64_t epoch) const;

  class Epoch;
  // One pass over the data. The returned object owns the prefetch thread; iterate it once.
  // first_batch > 0 starts the pass at that batch of epoch e (0-based), skipping the ones before it
  // without reading them: a run resumed in the middle of an epoch continues with the very batches the
  // uninterrupted run would have seen (the order is a pure function of the seed and e).
  Epoch epoch(int64_t e, int64_t first_batch = 0);
  // Whether batches are assembled on options().device from a resident copy of the dataset.
  bool resident() const { return resident_inputs_.defined(); }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  uint64_t seed_;
  Tensor resident_inputs_, resident_targets_;  // the TensorDataset's tensors on options_.device, or undefined
};

class DataLoader::Epoch {
 public:
  // batches: the sample indices of each batch; global_sizes: each batch's Batch::global_size.
  Epoch(std::shared_ptr<const Dataset> dataset, std::vector<std::vector<int64_t>> batches,
        std::vector<int64_t> global_sizes, bool prefetch, bool pin_memory = false);
  // Batches assembled on the device of `inputs` and `targets` (a resident dataset, no prefetch thread):
  // the indices of every batch go up in one copy.
  Epoch(Tensor inputs, Tensor targets, const std::vector<std::vector<int64_t>>& batches,
        std::vector<int64_t> global_sizes);
  ~Epoch();
  Epoch(Epoch&&) noexcept;
  Epoch& operator=(Epoch&&) = delete;
  Epoch(const Epoch&) = delete;

  // The next batch into `out`; false after the last one. Re-throws an error from assembling it.
  bool next(Batch& out);

  class iterator {
   public:
    iterator(Epoch* epoch);  // nullptr = end
    Batch& operator*() { return batch_; }
    Batch* operator->() { return &batch_; }
    iterator& operator++();
    bool operator!=(const iterator& o) const { return epoch_ != o.epoch_; }

   private:
    Epoch* epoch_;
    Batch batch_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(nullptr); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minidl
