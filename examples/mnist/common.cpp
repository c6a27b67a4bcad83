// examples/mnist/common.cpp — what the mnist subcommands share (examples/mnist/common.h): the device
// choice, evaluation, loading a saved model, and number formatting.
#include "examples/mnist/common.h"

#include <cstdio>

#include "core/backend.h"
#include "core/numerics.h"
#include "nn/checkpoint.h"
#include "nn/progress.h"

using namespace minidl;

namespace mnist {

Device choose_device(const std::string& flag) { return minidl::choose_device(flag, "mnist"); }

int64_t eval_batch_size(Device device) { return device.is_cuda() ? 1000 : 200; }

EvalResult evaluate(Module& model, DataLoader& loader, Device device, dist::DataParallel* dp) {
  model.eval();
  NoGradGuard no_grad;
  RunningStats stats;
  Progress progress("test", loader.num_batches());
  int64_t step = 0;
  for (Batch& batch : loader.epoch(0)) {
    const Tensor targets = batch.targets.to(device);
    const Tensor logits = model(batch.inputs.to(device));
    stats.add(cross_entropy(logits, targets), logits, targets);
    ++step;
    if (progress.live() && progress.due(step)) {
      stats.flush();
      progress.update(step, stats.count(), stats.mean_loss(), stats.accuracy());
    }
  }
  stats.flush();
  progress.clear();
  if (dp) stats.sum_over_ranks(*dp);
  return {stats.mean_loss(), stats.accuracy(), stats.correct(), stats.count()};
}

std::shared_ptr<Sequential> load_model(const std::string& path, Device device) {
  const Checkpoint file = read_checkpoint(path);
  std::shared_ptr<Sequential> model = mnist::load_model_from(file, path);
  // A model holding NaN or infinity answers nonsense with confidence ("probability nan"): refuse it.
  for (const auto& [name, tensor] : model->state_dict()) {
    const NonFinite bad = first_non_finite(tensor);
    MINIDL_CHECK(!bad.found(), "'", path, "' holds ", number_str(bad.value), " in '", name, "' at ",
                 index_str(tensor.shape(), bad.index), ": it was saved by a run that diverged; train again");
  }
  model->to(device);
  model->eval();
  return model;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * fraction);
  return buf;
}

std::string number_4(double x) {  // "%.4f"
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4f", x);
  return buf;
}

}  // namespace mnist
