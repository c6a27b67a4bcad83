// ops/optim_ops.cpp — front ends of the fused optimizer updates (ops/optim_ops.h): argument checks, then
// one dispatch for the whole parameter list. The math is in ops/kernel_signatures.h (SgdStepKernel,
// AdamStepKernel). No autograd: these write parameters and optimizer state in place.
#include "ops/optim_ops.h"

#include "core/dispatch.h"

namespace minidl {

namespace {

// Every list has params.size() entries, and each entry i is a contiguous float32 tensor of params[i]'s
// shape on params[0]'s device.
void check_lists(const char* op, const std::vector<Tensor>& params,
                 const std::vector<std::pair<const char*, const std::vector<Tensor>*>>& lists) {
  for (const auto& [name, list] : lists)
    MINIDL_CHECK(list->size() == params.size(), op, ": ", params.size(), " params but ", list->size(), " ", name);
  const Device device = params[0].device();
  auto check_one = [&](const char* name, size_t i, const Tensor& t) {
    MINIDL_CHECK(t.defined(), op, ": ", name, "[", i, "] is undefined");
    MINIDL_CHECK(t.dtype() == DType::float32, op, ": ", name, "[", i, "] is ", dtype_name(t.dtype()),
                 "; optimizer updates work on float32");
    MINIDL_CHECK(t.is_contiguous(), op, ": ", name, "[", i, "] of shape ", shape_str(t.shape()), " is not contiguous");
    MINIDL_CHECK(t.device() == device, op, ": ", name, "[", i, "] is on ", t.device().str(), " but params[0] is on ",
                 device.str());
    MINIDL_CHECK(t.shape() == params[i].shape(), op, ": ", name, "[", i, "] has shape ", shape_str(t.shape()),
                 " but params[", i, "] has shape ", shape_str(params[i].shape()));
  };
  for (size_t i = 0; i < params.size(); ++i) {
    check_one("params", i, params[i]);
    for (const auto& [name, list] : lists) check_one(name, i, (*list)[i]);
  }
}

// Device scalars (SgdParams/AdamParams::scalars): `count` float64 values on the parameters' device. On the
// CPU the front end reads them here, so that CPU kernels only ever see plain values.
std::vector<double> check_scalars(const char* op, const Tensor& scalars, int64_t count, Device device) {
  MINIDL_CHECK(scalars.dtype() == DType::float64 && scalars.numel() == count && scalars.device() == device, op,
               ": scalars must be ", count, " float64 values on ", device.str(), ", got ", dtype_name(scalars.dtype()),
               " ", shape_str(scalars.shape()), " on ", scalars.device().str());
  return device.is_cpu() ? scalars.to_vector<double>() : std::vector<double>();
}

}  // namespace

void sgd_step(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& momentum_buffers,
              const SgdParams& h) {
  MINIDL_CHECK(h.momentum >= 0, "sgd_step: momentum must be non-negative, got ", h.momentum);
  MINIDL_CHECK(!h.nesterov || h.momentum > 0, "sgd_step: nesterov needs a positive momentum");
  if (params.empty()) return;
  // Without momentum the buffers are never read: an empty list is accepted.
  if (h.momentum == 0 && momentum_buffers.empty())
    check_lists("sgd_step", params, {{"grads", &grads}});
  else
    check_lists("sgd_step", params, {{"grads", &grads}, {"momentum_buffers", &momentum_buffers}});
  if (h.scalars.defined()) {
    const std::vector<double> values = check_scalars("sgd_step", h.scalars, 2, params[0].device());
    if (!values.empty()) {  // the CPU: plain values
      SgdParams plain = h;
      plain.lr = values[0];
      plain.first_step = values[1] != 0;
      plain.scalars = Tensor();
      dispatch(keys::sgd_step, params[0].device(), params, grads, momentum_buffers, plain);
      return;
    }
  }
  dispatch(keys::sgd_step, params[0].device(), params, grads, momentum_buffers, h);
}

void adam_step(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m,
               std::vector<Tensor>& v, const AdamParams& h) {
  MINIDL_CHECK(h.step >= 1, "adam_step: step counts from 1, got ", h.step);
  MINIDL_CHECK(h.beta1 >= 0 && h.beta1 < 1 && h.beta2 >= 0 && h.beta2 < 1, "adam_step: betas must be in [0, 1), got (",
               h.beta1, ", ", h.beta2, ")");
  if (params.empty()) return;
  check_lists("adam_step", params, {{"grads", &grads}, {"m", &m}, {"v", &v}});
  if (h.scalars.defined()) {
    const std::vector<double> values = check_scalars("adam_step", h.scalars, 2, params[0].device());
    if (!values.empty()) {  // the CPU: plain values
      MINIDL_CHECK(values[1] >= 1, "adam_step: step counts from 1, got ", values[1]);
      AdamParams plain = h;
      plain.lr = values[0];
      plain.step = static_cast<int64_t>(values[1]);
      plain.scalars = Tensor();
      dispatch(keys::adam_step, params[0].device(), params, grads, m, v, plain);
      return;
    }
  }
  dispatch(keys::adam_step, params[0].device(), params, grads, m, v, h);
}

}  // namespace minidl
