#include "dist/data_parallel.h"

#include <string>

#include "core/random.h"
#include "core/settings.h"
#include "core/strings.h"
#include "dist/process.h"
#include "nn/data.h"
#include "ops/ops.h"

namespace minidl {
namespace dist {

DataParallelOptions DataParallelOptions::from_environment() {
  DataParallelOptions o;
  // Both strictly parsed, in range (core/settings.h); unset, the defaults above.
  if (settings::dist_bucket_mb.is_set())
    o.bucket_bytes = static_cast<size_t>(settings::dist_bucket_mb.read() * (1 << 20));
  o.overlap = settings::dist_overlap.read();
  return o;
}

DataParallel::DataParallel(Module& model, Communicator& communicator, const DataParallelOptions& options)
    : comm_(communicator), options_(options) {
  for (auto& [name, t] : model.named_parameters()) {
    if (!t.requires_grad()) continue;
    MINIDL_CHECK(t.device() == comm_.device(), "DataParallel: parameter '", name, "' is on ", t.device().str(),
                 " but the communicator works on ", comm_.device().str(), "; move the model first (model.to)");
    MINIDL_CHECK(t.is_contiguous(), "DataParallel: parameter '", name, "' is not contiguous");
    names_.push_back(name);
    params_.push_back(t);
  }
  for (auto& [name, t] : model.named_buffers()) buffers_.push_back(t);
  check_same_model_on_all_ranks(model);

  // Everyone starts from rank 0's weights and buffers.
  {
    NoGradGuard no_grad;
    for (const Tensor& p : params_) comm_.broadcast(p, 0);
    for (const Tensor& b : buffers_) comm_.broadcast(b, 0);
  }

  // Buckets: parameters in reverse registration order; each joins the last bucket while that holds
  // fewer than bucket_bytes (and the same dtype), so a bucket closes once it reaches the size, with the
  // parameter that took it there (PyTorch's rule). A large parameter thus shares a bucket with the small
  // ones before it instead of leaving them a collective of their own.
  bucket_of_.assign(params_.size(), 0);
  offset_of_.assign(params_.size(), 0);
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k];
    const bool open = !buckets_.empty() && buckets_.back().flat.dtype() == p.dtype() &&
                      static_cast<size_t>(buckets_.back().numel) * dtype_size(p.dtype()) < options_.bucket_bytes;
    if (!open) {
      buckets_.emplace_back();
      buckets_.back().flat = empty({0}, p.options());  // placeholder holding the dtype until allocated
    }
    Bucket& b = buckets_.back();
    bucket_of_[k] = buckets_.size() - 1;
    offset_of_[k] = b.numel;
    b.params.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
  }
  for (Bucket& b : buckets_) b.flat = zeros({b.numel}, b.flat.options());
  ready_.assign(params_.size(), false);

  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(add_grad_ready_hook(params_[k], [this, k](const Tensor&) { on_gradient_ready(k); }));
}

DataParallel::~DataParallel() {
  clear_random_shard();
  // Collectives still in flight (a step left by an exception) must finish before their buckets are freed.
  for (Bucket& b : buckets_)
    if (b.work) {
      try {
        b.work->wait();
      } catch (...) {
      }
    }
}

// The ranks must hold the same parameters and buffers (names, shapes, dtypes) before any broadcast:
// otherwise the collectives below would pair different tensors, or wait forever.
void DataParallel::check_same_model_on_all_ranks(Module& model) const {
  std::string signature;
  for (const NamedTensors& named : {model.named_parameters(), model.named_buffers()})
    for (auto& [name, t] : named) signature += str_cat(name, shape_str(t.shape()), dtype_name(t.dtype()), ";");
  const std::vector<std::string> all = all_gather_strings(signature);
  std::string problem;
  if (all[comm_.rank()] != all[0])
    problem = "its model's parameters or buffers differ from rank 0's (build the same model on every rank)";
  agree_or_throw(problem, "DataParallel");
}

void DataParallel::begin_step(int64_t local_samples, int64_t global_samples) {
  MINIDL_CHECK(!in_step_, "DataParallel: begin_step twice without finish_step");
  MINIDL_CHECK(local_samples > 0 && global_samples >= local_samples, "DataParallel: ", local_samples,
               " samples on this rank of a batch of ", global_samples);
  const Range part = shard_range(global_samples, comm_.rank(), comm_.world_size());
  MINIDL_CHECK(part.size() == local_samples, "DataParallel: rank ", comm_.rank(), " has ", local_samples,
               " samples of a batch of ", global_samples, ", but its part is ", part.size(),
               " (read batches with a sharded DataLoader: DataLoaderOptions::shard_index/shard_count)");
  weight_ = static_cast<double>(local_samples) / static_cast<double>(global_samples);
  if (comm_.world_size() > 1) set_random_shard(part.begin, local_samples, global_samples);
  for (Bucket& b : buckets_) b.waiting = static_cast<int>(b.params.size());
  ready_.assign(params_.size(), false);
  next_bucket_ = 0;
  started_in_backward_ = 0;
  in_backward_ = true;
  in_step_ = true;
}

// Runs inside backward, when parameter k's gradient is final for this pass. The gradient stays where
// backward put it (p.grad()) until its whole bucket is ready; start_bucket then packs them all at once.
void DataParallel::on_gradient_ready(size_t k) {
  if (!in_step_ || !in_backward_ || ready_[k]) return;  // a backward outside a step is not ours to reduce
  Bucket& b = buckets_[bucket_of_[k]];
  ready_[k] = true;
  --b.waiting;
  if (options_.overlap) start_complete_buckets();
  // Let a non-blocking MPI collective make progress while backward runs (Open MPI advances one only
  // inside MPI calls). NCCL needs no help, and a query per hook would only cost host time.
  if (comm_.backend() == Backend::mpi)
    for (size_t i = 0; i < next_bucket_; ++i)
      if (buckets_[i].work) buckets_[i].work->test();
}

void DataParallel::start_complete_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].waiting == 0) {
    start_bucket(buckets_[next_bucket_++]);
    if (in_backward_) ++started_in_backward_;
  }
}

// The bucket's gradients go into its flat buffer in one pack_ (one kernel launch on a GPU, where a
// copy per parameter would be one launch each), then the all-reduce starts. A parameter without a
// gradient this step has had its slot zeroed by finish_step.
void DataParallel::start_bucket(Bucket& b) {
  std::vector<Tensor> grads;
  std::vector<int64_t> offsets;
  for (size_t j = 0; j < b.params.size(); ++j) {
    const size_t k = b.params[j];
    if (!ready_[k]) continue;
    grads.push_back(params_[k].grad());
    offsets.push_back(b.offsets[j]);
  }
  pack_(b.flat, grads, offsets);
  b.reduced = weight_ == 1.0 ? b.flat : mul_scalar(b.flat, weight_);
  b.work = comm_.all_reduce_async(b.reduced);
}

void DataParallel::finish_step() {
  MINIDL_CHECK(in_step_, "DataParallel: finish_step without begin_step");
  clear_random_shard();
  in_backward_ = false;
  NoGradGuard no_grad;
  // Parameters that got no gradient contribute zeros; every remaining bucket starts, in order.
  for (size_t i = next_bucket_; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    for (size_t j = 0; j < b.params.size(); ++j) {
      const size_t k = b.params[j];
      if (ready_[k]) continue;
      const Tensor& p = params_[k];
      fill_(make_view(b.flat, p.shape(), contiguous_strides(p.shape()), b.offsets[j]), 0.0);
    }
    b.waiting = 0;
  }
  start_complete_buckets();
  for (Bucket& b : buckets_) {
    b.work->wait();
    b.work.reset();
  }
  // Each gradient becomes a view of its slice of the reduced bucket.
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!ready_[k]) continue;  // no gradient on this rank (the ranks run the same graph: on none)
    const Bucket& b = buckets_[bucket_of_[k]];
    const Tensor& p = params_[k];
    p.set_grad(make_view(b.reduced, p.shape(), contiguous_strides(p.shape()), offset_of_[k]));
  }
  in_step_ = false;
}

void DataParallel::average_buffers() {
  if (comm_.world_size() == 1) return;
  NoGradGuard no_grad;
  for (const Tensor& b : buffers_) {
    if (!is_floating(b.dtype())) continue;
    const Tensor sum = b.contiguous().clone();
    comm_.all_reduce(sum);
    copy_(b, mul_scalar(sum, 1.0 / comm_.world_size()));
  }
}

std::vector<double> DataParallel::sum(const std::vector<double>& values) {
  if (values.empty()) return values;
  const Tensor t =
      from_vector(values, {static_cast<int64_t>(values.size())}, TensorOptions(DType::float64, comm_.device()));
  comm_.all_reduce(t);
  return t.to_vector<double>();
}

std::string DataParallel::describe_buckets() const {
  std::string out;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    const Bucket& b = buckets_[i];
    const std::string names = join(b.params, ", ", [&](size_t k) { return names_[k]; });
    out += str_cat("bucket ", i, ": ", b.numel, " ", dtype_name(b.flat.dtype()), " (",
                   b.numel * static_cast<int64_t>(dtype_size(b.flat.dtype())), " bytes): ", names, "\n");
  }
  return out;
}

}  // namespace dist
}  // namespace minidl
