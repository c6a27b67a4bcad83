// nn/lr_schedule.h — learning-rate schedules. Each sets the optimizer's lr from a closed form of its
// step counter t (0 at construction, +1 per step()); `base` is the optimizer's lr at construction.
//
//   StepLR(step_size, gamma)               lr(t) = base * gamma^floor(t / step_size)          (per epoch)
//   CosineAnnealingLR(t_max, eta_min)      lr(t) = eta_min + (base - eta_min) * (1 + cos(pi * t / t_max)) / 2
//                                          for t <= t_max, then eta_min                       (per epoch)
//   OneCycleLR(max_lr, total_steps, ...)   (per batch) warm-up from initial = max_lr / div_factor to max_lr
//                                          over the first pct_start of the steps, then down to
//                                          min = initial / final_div_factor, both halves by cosine:
//                                            cos_anneal(a, b, f) = b + (a - b) * (1 + cos(pi * f)) / 2
//                                            t <= up:  lr = cos_anneal(initial, max_lr, t / up)
//                                            t >  up:  lr = cos_anneal(max_lr, min, (t - up) / (last - up))
//                                          with up = pct_start * total_steps - 1, last = total_steps - 1
//                                          (PyTorch's OneCycleLR with anneal_strategy='cos'). Its base is
//                                          `initial`, set on the optimizer at construction.
#pragma once
#include <cstdint>

#include "nn/optim.h"

namespace minidl {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;

  // Advances t by one and sets the optimizer's lr to lr_at(t).
  void step();
  // Jumps to step t (resuming from a checkpoint) and sets the lr.
  void set_step(int64_t t);
  int64_t last_step() const { return t_; }
  // The closed form.
  virtual double lr_at(int64_t t) const = 0;

 protected:
  Optimizer& optimizer_;
  double base_lr_;

 private:
  int64_t t_ = 0;
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t t) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0);
  double lr_at(int64_t t) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start = 0.3,
             double div_factor = 25, double final_div_factor = 1e4);
  double lr_at(int64_t t) const override;
  // The fewest total_steps that leave room for both phases (up > 0): 4 for pct_start 0.3. Programs check
  // their step count against it before training.
  static int64_t min_total_steps(double pct_start = 0.3);

 private:
  double max_lr_, initial_lr_, min_lr_;
  double up_end_, last_;
};

}  // namespace minidl
