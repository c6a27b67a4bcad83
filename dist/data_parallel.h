// dist/data_parallel.h — data-parallel training: every process holds the whole model, trains on its part
// of each batch, and all of them apply the same update (what PyTorch's DistributedDataParallel does).
//
//   DataParallel dp(*model, communicator);          // after model->to(device): broadcasts rank 0's weights
//   for (Batch& batch : loader.epoch(e)) {          // a sharded loader (nn/data.h): this rank's part
//     dp.begin_step(batch.size(), batch.global_size);
//     loss = loss_fn(model(x), y);                   // mean over this rank's part
//     optimizer.zero_grad();
//     loss.backward();                               // buckets of gradients start their all-reduce here
//     dp.finish_step();                              // every .grad is now the whole batch's gradient
//     optimizer.step();                              // the same update on every rank
//   }
//
// What is reduced, and when:
//   - At construction: every parameter and buffer is broadcast from rank 0, so all ranks start equal
//     (whatever their initialisation), and the ranks check that they hold the same model.
//   - Every step, the gradients. Rank k computes g_k, the gradient of the mean loss over its n_k samples;
//     the gradient of the mean over the whole batch of N = sum n_k samples is
//         g = sum_k (n_k / N) g_k,
//     so each rank scales its gradients by n_k / N (nothing to do when that is 1) and they are summed.
//     With equal parts this is the average, 1/W each.
//   - Buffers (batch-norm running statistics) only when average_buffers() is called (before evaluating
//     or saving); between those calls each rank updates its own from its own samples.
//   - Metrics, when the program asks: sum() adds per-rank numbers (loss sums, counts).
//
// Buckets and overlap. The parameters are laid out, in reverse registration order (roughly the order in
// which backward finishes them: the last layer first), in flat buffers ("buckets"): each parameter joins
// the last bucket while that holds fewer than bucket_bytes, so a bucket closes at the first parameter
// that takes it to bucket_bytes or more (PyTorch's rule). A gradient-ready hook
// (core/autograd.h) counts each gradient that backward has finished; when a bucket's last one is ready,
// all of its gradients are packed into it with one pack_ (ops/ops.h: one kernel launch on a GPU, not one
// copy per parameter) and its all-reduce starts (Communicator::all_reduce_async) while backward goes on
// with earlier layers. Buckets always start in index order, so every rank issues the same collectives in the
// same order even if backward finished parameters in another order. finish_step() starts whatever has
// not started (parameters that got no gradient contribute zeros), waits for every bucket, and makes each
// parameter's .grad a view of its slice of the reduced bucket (no copy back).
//
// The random stream is sharded during each step (core/random.h set_random_shard), so the ranks' dropout
// masks are their parts of the mask one process would draw for the whole batch: with a model without
// batch norm, W processes compute the same steps as one process with the same global batch, up to the
// order of floating-point sums. Batch norm normalises with the statistics of each rank's part (as
// PyTorch's DDP does without SyncBatchNorm), which is not the whole batch's.
//
// Rules: every rank builds the same model and calls begin_step/backward/finish_step for every batch;
// zero the gradients before each backward (a .grad is a view into a bucket until then); the model and
// the communicator must outlive the DataParallel.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "dist/communicator.h"
#include "nn/module.h"

namespace minidl {
namespace dist {

struct DataParallelOptions {
  // Target size of a gradient bucket. The default suits these small models (MNIST's CNN: 2 buckets; the
  // captcha model: 3): large enough that each all-reduce moves megabytes, small enough that the first
  // starts early in backward. PyTorch's default, 25 MiB, is tuned for models of hundreds of megabytes.
  size_t bucket_bytes = size_t(4) << 20;
  // Start each bucket's all-reduce during backward as soon as it is complete. Off: every bucket starts
  // in finish_step(), after backward (for measuring what the overlap gains).
  bool overlap = true;

  // The defaults, changed by MINIDL_DIST_BUCKET_MB (bucket_bytes in MiB, e.g. 25 or 0.5) and
  // MINIDL_DIST_OVERLAP=0 (overlap off) when set: what the programs use, so both can be measured
  // without rebuilding.
  static DataParallelOptions from_environment();
};

class DataParallel {
 public:
  DataParallel(Module& model, Communicator& communicator, const DataParallelOptions& options = {});
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Before the forward pass of a step in which this rank has `local_samples` of the batch's
  // `global_samples` (its part as shard_range, nn/data.h, gives it).
  void begin_step(int64_t local_samples, int64_t global_samples);
  // After backward, before the optimizer step: every .grad holds the gradient of the whole batch.
  void finish_step();

  // Replaces every floating buffer by its average over the ranks (batch-norm running statistics).
  void average_buffers();
  // Element-wise sums over the ranks of per-rank values (loss sums, correct counts, sample counts).
  std::vector<double> sum(const std::vector<double>& values);

  Communicator& communicator() { return comm_; }
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.world_size(); }
  // One line per bucket: its parameters (names) and size, for logs and tests.
  std::string describe_buckets() const;
  size_t bucket_count() const { return buckets_.size(); }
  // Buckets whose all-reduce started inside backward (not in finish_step) in the last step.
  int buckets_started_in_backward() const { return started_in_backward_; }

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_, in the order laid out
    std::vector<int64_t> offsets;  // of each parameter in `flat`, in elements
    int64_t numel = 0;
    Tensor flat;                   // [numel]: the gradients of this rank
    Tensor reduced;                // what was all-reduced: flat, or flat * (n_k / N)
    int waiting = 0;               // parameters not yet finished by backward in this step
    std::unique_ptr<Work> work;
  };

  void on_gradient_ready(size_t param);
  void start_bucket(Bucket& bucket);
  void start_complete_buckets();
  void check_same_model_on_all_ranks(Module& model) const;

  Communicator& comm_;
  DataParallelOptions options_;
  std::vector<std::string> names_;
  std::vector<Tensor> params_;
  std::vector<size_t> bucket_of_;      // per parameter
  std::vector<int64_t> offset_of_;     // per parameter, in its bucket
  std::vector<bool> ready_;            // per parameter, this step
  std::vector<Bucket> buckets_;
  std::vector<Tensor> buffers_;
  std::vector<GradReadyHookHandle> hooks_;
  size_t next_bucket_ = 0;             // the next bucket to start (they start in order)
  bool in_step_ = false;
  bool in_backward_ = true;            // hooks run inside backward; finish_step sets false
  double weight_ = 1;                  // n_k / N of this step
  int started_in_backward_ = 0;
};

}  // namespace dist
}  // namespace minidl
