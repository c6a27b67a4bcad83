#include "core/numerics.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/dispatch.h"
#include "core/settings.h"
#include "core/tensor.h"

namespace minidl {

namespace {

// MINIDL_CHECK_NUMERICS, a switch (core/settings.h): a malformed value is an error naming the variable.
bool parse_numerics_environment() { return settings::check_numerics.read(); }

std::atomic<int>& checking_state() {
  // -1: not read from the environment yet.
  static std::atomic<int> state{-1};
  return state;
}

// True while this thread is checking an output: the check itself copies tensors (a GPU output to the
// host, a strided one into a packed one), and those copies go through dispatch() too.
thread_local bool t_inside_check = false;

template <class T>
NonFinite scan(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return {i, static_cast<double>(p[i])};
  return {};
}

// "output 2 of 3" and its shape and dtype.
std::string describe_output(int position, int count, const std::string& label, const Tensor& out) {
  return str_cat("output ", position, label, " of ", count, ", ", shape_str(out.shape()), " ", dtype_name(out.dtype()));
}

// The one output allowed to hold non-finite values by contract (see core/numerics.h).
bool exempt(const KernelInfo& k, int position) { return k.key == "ctc_loss" && position == 2; }

}  // namespace

NonFinite first_non_finite(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype()) || t.numel() == 0) return {};
  const Tensor host = t.to(Device::cpu()).contiguous();
  if (host.dtype() == DType::float32) return scan(host.data<float>(), host.numel());
  return scan(host.data<double>(), host.numel());
}

std::string number_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string index_str(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t size = shape[d] > 0 ? shape[d] : 1;
    index[d] = flat % size;
    flat /= size;
  }
  return shape_str(index);
}

bool numerics_checking() {
  std::atomic<int>& state = checking_state();
  int on = state.load(std::memory_order_relaxed);
  if (on < 0) {
    on = parse_numerics_environment() ? 1 : 0;
    state.store(on, std::memory_order_relaxed);
  }
  return on == 1;
}

void set_numerics_checking(bool on) { checking_state().store(on ? 1 : 0, std::memory_order_relaxed); }

void check_numerics_environment() { parse_numerics_environment(); }

namespace detail {

void check_kernel_output(const KernelInfo& k, int position, int count, const Tensor& out, const std::string& label) {
  if (t_inside_check || exempt(k, position)) return;
  t_inside_check = true;
  NonFinite bad;
  try {
    bad = first_non_finite(out);
  } catch (...) {
    t_inside_check = false;
    throw;
  }
  t_inside_check = false;
  if (!bad.found()) return;
  throw NonFiniteError(str_cat("numerics: ", k.key, " (kernel '", k.name, "' on ", device_type_name(k.device),
                               ") wrote ", number_str(bad.value), " into ",
                               describe_output(position, count, label, out), ", at index ", index_str(out.shape(), bad.index), " (flat ", bad.index,
                               "); its inputs were checked when they were produced, so the value started here unless "
                               "it came from outside the kernels (data, loaded parameters)"));
}

void check_kernel_output_list(const KernelInfo& k, int position, int count, const std::vector<Tensor>& outs) {
  for (size_t i = 0; i < outs.size(); ++i) check_kernel_output(k, position, count, outs[i], str_cat("[", i, "]"));
}

}  // namespace detail

}  // namespace minidl
