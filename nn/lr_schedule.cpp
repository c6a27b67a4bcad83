#include "nn/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace minidl {

namespace {
constexpr double kPi = 3.14159265358979323846;

// From a (f = 0) to b (f = 1) along half a cosine.
double cos_anneal(double a, double b, double f) { return b + (a - b) * (1 + std::cos(kPi * f)) / 2; }
}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer), base_lr_(optimizer.lr()) {}

void LRScheduler::step() { set_step(t_ + 1); }

void LRScheduler::set_step(int64_t t) {
  MINIDL_CHECK(t >= 0, "lr schedule: step must be >= 0, got ", t);
  t_ = t;
  optimizer_.set_lr(lr_at(t_));
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  MINIDL_CHECK(step_size > 0 && gamma > 0, "StepLR: step_size must be > 0 and gamma > 0, got ", step_size, " and ",
               gamma);
}

double StepLR::lr_at(int64_t t) const { return base_lr_ * std::pow(gamma_, static_cast<double>(t / step_size_)); }

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  MINIDL_CHECK(t_max > 0, "CosineAnnealingLR: t_max must be > 0, got ", t_max);
}

double CosineAnnealingLR::lr_at(int64_t t) const {
  if (t >= t_max_) return eta_min_;
  return cos_anneal(base_lr_, eta_min_, static_cast<double>(t) / t_max_);
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start,
                       double div_factor, double final_div_factor)
    : LRScheduler(optimizer),
      max_lr_(max_lr),
      initial_lr_(max_lr / div_factor),
      min_lr_(max_lr / div_factor / final_div_factor),
      up_end_(pct_start * static_cast<double>(total_steps) - 1),
      last_(static_cast<double>(total_steps) - 1) {
  MINIDL_CHECK(std::isfinite(max_lr) && max_lr > 0 && pct_start > 0 && pct_start < 1 && div_factor > 0 &&
                   final_div_factor > 0,
               "OneCycleLR: bad configuration: max_lr ", max_lr, ", pct_start ", pct_start, ", div_factor ",
               div_factor, ", final_div_factor ", final_div_factor);
  MINIDL_CHECK(up_end_ > 0 && up_end_ < last_, "OneCycleLR: pct_start ", pct_start, " of ", total_steps,
               " steps leaves no room for the warm-up or the annealing phase (it needs at least ",
               min_total_steps(pct_start), " steps)");
  base_lr_ = initial_lr_;
  optimizer_.set_lr(lr_at(0));
}

int64_t OneCycleLR::min_total_steps(double pct_start) {
  MINIDL_CHECK(pct_start > 0 && pct_start < 1, "OneCycleLR: pct_start must be in (0, 1), got ", pct_start);
  // up = pct_start * total - 1 > 0  <=>  total > 1 / pct_start (then up < last holds, as pct_start < 1)
  int64_t total = std::max<int64_t>(2, static_cast<int64_t>(std::floor(1.0 / pct_start)));
  while (pct_start * static_cast<double>(total) - 1 <= 0) ++total;  // at most a step or two of rounding
  return total;
}

double OneCycleLR::lr_at(int64_t step) const {
  const double t = std::min(static_cast<double>(step), last_);
  if (t <= up_end_) return cos_anneal(initial_lr_, max_lr_, t / up_end_);
  return cos_anneal(max_lr_, min_lr_, (t - up_end_) / (last_ - up_end_));
}

}  // namespace minidl
