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
// The order of epoch e is a pure function of (seed, e): a Fisher-Yates shuffle driven by Philox
// (core/philox.h), so runs are reproducible whatever else draws random numbers.
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
  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The samples at `indices` stacked into one batch of CPU tensors. Called from the prefetch thread, so
  // it must not modify shared state.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const = 0;
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
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options);

  int64_t num_batches() const;
  // Samples per epoch (the dataset size, minus the dropped partial batch).
  int64_t num_samples() const;
  const DataLoaderOptions& options() const { return options_; }
  // The order in which epoch e visits the samples (identity without shuffle).
  std::vector<int64_t> order(int64_t epoch) const;

  class Epoch;
  // One pass over the data. The returned object owns the prefetch thread; iterate it once.
  Epoch epoch(int64_t e);

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  uint64_t seed_;
};

class DataLoader::Epoch {
 public:
  Epoch(std::shared_ptr<const Dataset> dataset, std::vector<std::vector<int64_t>> batches, bool prefetch);
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
