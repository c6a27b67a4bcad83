// examples/captcha/loss_log.h — `captcha train`'s running loss of an epoch, read from the device in
// batches of up to 64 losses and checked by the divergence guard (examples/train_guard.h); mnist's
// counterpart is RunningStats (examples/mnist/common.h). examples/training_loop.h saves its sums mid-epoch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "dist/data_parallel.h"
#include "examples/train_guard.h"
#include "ops/ops.h"

namespace captcha {

// Losses of recent steps, kept on the device and read in one go (a read waits for the GPU). Each read
// loss is checked by the guard, which stops at the first that is not finite (in a --distributed job, at
// the guard's next agree()).
class LossLog {
 public:
  explicit LossLog(examples::DivergenceGuard& guard) : guard_(guard) {}
  // `step` (1-based over the run) and `lr` (that step's learning rate) are for the guard's message.
  void add(const minidl::Tensor& loss, int64_t samples, int64_t step, double lr) {
    pending_.push_back(loss.detach().reshape({1}));
    pending_samples_.push_back(samples);
    pending_steps_.emplace_back(step, lr);
    if (pending_.size() >= 64) flush();
  }
  void flush() {
    if (pending_.empty()) return;
    const std::vector<double> values = minidl::concat(pending_, 0).to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i) {
      guard_.check_loss(values[i], pending_steps_[i].first, pending_steps_[i].second);
      sum_ += values[i] * static_cast<double>(pending_samples_[i]);
      count_ += pending_samples_[i];
    }
    pending_.clear();
    pending_samples_.clear();
    pending_steps_.clear();
  }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  int64_t samples() const { return count_; }
  // The running sums {loss sum, samples} (after flush()): saved in the middle of an epoch and restored
  // when the run resumes there (examples/run_state.h), so the epoch's summary covers all of it.
  static constexpr size_t kSums = 2;
  std::vector<double> sums() const { return {sum_, static_cast<double>(count_)}; }
  void restore(const std::vector<double>& sums) {
    MINIDL_CHECK(sums.size() == kSums && pending_.empty(), "LossLog: restore needs ", kSums, " sums, got ",
                 sums.size());
    sum_ = sums[0];
    count_ = static_cast<int64_t>(sums[1]);
  }
  // Data-parallel: the totals of every rank (call on every rank, after flush()).
  void sum_over_ranks(minidl::dist::DataParallel& dp) {
    const std::vector<double> total = dp.sum({sum_, static_cast<double>(count_)});
    sum_ = total[0];
    count_ = static_cast<int64_t>(total[1]);
  }

 private:
  examples::DivergenceGuard& guard_;
  std::vector<minidl::Tensor> pending_;
  std::vector<int64_t> pending_samples_;
  std::vector<std::pair<int64_t, double>> pending_steps_;  // (step, lr) of each loss
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace captcha
