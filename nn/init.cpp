#include "nn/init.h"

#include <cmath>

#include "core/autograd.h"
#include "ops/ops.h"

namespace minidl {
namespace init {

namespace {

int64_t receptive_field(const Tensor& w) {
  int64_t r = 1;
  for (int d = 2; d < w.dim(); ++d) r *= w.shape()[d];
  return r;
}

void check_weight(const char* fn, const Tensor& w) {
  MINIDL_CHECK(w.defined() && w.dim() >= 2, "init.", fn, ": needs a weight of at least 2 dims, got ",
               w.defined() ? shape_str(w.shape()) : std::string("an undefined tensor"));
}

void check_floating(const char* fn, const Tensor& t) {
  MINIDL_CHECK(t.defined() && is_floating(t.dtype()), "init.", fn, ": needs a defined floating tensor");
}

int64_t fan(const Tensor& w, FanMode mode) { return mode == FanMode::fan_in ? fan_in(w) : fan_out(w); }

}  // namespace

int64_t fan_in(const Tensor& w) {
  check_weight("fan_in", w);
  return w.shape()[1] * receptive_field(w);
}

int64_t fan_out(const Tensor& w) {
  check_weight("fan_out", w);
  return w.shape()[0] * receptive_field(w);
}

// Draws in t's own dtype and device (rand/randn take the next block of the global stream) and copies
// the transformed values in; parameters are leaves, so this must not record a graph.
void uniform_(const Tensor& t, double a, double b) {
  check_floating("uniform_", t);
  NoGradGuard no_grad;
  copy_(t, add_scalar(mul_scalar(rand(t.shape(), t.options()), b - a), a));
}

void normal_(const Tensor& t, double mean, double std) {
  check_floating("normal_", t);
  NoGradGuard no_grad;
  copy_(t, add_scalar(mul_scalar(randn(t.shape(), t.options()), std), mean));
}

void constant_(const Tensor& t, double value) {
  check_floating("constant_", t);
  fill_(t, value);
}

void zeros_(const Tensor& t) { constant_(t, 0.0); }
void ones_(const Tensor& t) { constant_(t, 1.0); }

void kaiming_uniform_(const Tensor& t, double a, FanMode mode) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fan(t, mode)));
  uniform_(t, -bound, bound);
}

void kaiming_normal_(const Tensor& t, double a, FanMode mode) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  normal_(t, 0.0, gain / std::sqrt(static_cast<double>(fan(t, mode))));
}

void xavier_uniform_(const Tensor& t, double gain) {
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in(t) + fan_out(t)));
  uniform_(t, -bound, bound);
}

void xavier_normal_(const Tensor& t, double gain) {
  normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in(t) + fan_out(t))));
}

}  // namespace init
}  // namespace minidl
