// core/numerics.h — finding NaN and infinity: in one tensor, in every kernel's outputs (a debug mode),
// and the typed error both report.
//
// Debug mode: MINIDL_CHECK_NUMERICS=1 (or set_numerics_checking(true)) makes the dispatcher check, after
// each kernel serves a call, every output of the call, and throw NonFiniteError at the first NaN or
// +-infinity, naming the kernel key, the kernel, the device, which output and the first bad index:
//
//   numerics: conv2d (kernel 'im2col_blas' on cpu) wrote inf into output 1 of 1, [64,32,26,26] float32,
//   at index [0,3,7,12] (flat 6073)
//
// Because every op's outputs are checked as they are produced, the first op reported is the one that
// created the value (its inputs were outputs of earlier, checked ops), not one that passed it on.
//
// "The outputs" of a kernel are the arguments its signature (ops/kernel_signatures.h) takes by non-const
// reference: `Tensor&` and `std::vector<Tensor>&` (the optimizer kernels update parameters and moments in
// place, so those are checked too). Integer tensors are skipped. One output may hold infinities by
// contract and is not checked: ctc_loss's log_alpha (unreachable lattice states are -inf, and cuDNN's
// kernel fills it with NaN; see ops/kernel_signatures.h).
//
// GPU outputs are copied to the host to be checked: the mode synchronises after every kernel and is slow,
// which is fine for finding where a NaN comes from; it is off by default and costs one function call per
// dispatch when off.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace minidl {

class Tensor;
struct KernelInfo;

// A NaN or infinity where there must be none: a kernel's output in the debug mode, or a training loss.
class NonFiniteError : public Error {
 public:
  explicit NonFiniteError(const std::string& what) : Error(what) {}
};

// The first element of `t` (row-major order, whatever the strides) that is NaN or +-infinity.
struct NonFinite {
  int64_t index = -1;  // flat row-major index, -1 when every element is finite
  double value = 0;    // the element (NaN, inf or -inf)
  bool found() const { return index >= 0; }
};
// Integer tensors have none. A GPU tensor is copied to the host first.
NonFinite first_non_finite(const Tensor& t);
// "nan", "inf", "-inf" or the number (printf's "%g"): a NaN prints without the sign bit glibc shows.
std::string number_str(double v);
// The multi-index of a flat row-major index: "[0,3,7,12]".
std::string index_str(const std::vector<int64_t>& shape, int64_t flat);

// Whether kernel outputs are checked: MINIDL_CHECK_NUMERICS=1 at start-up (0 or unset: no; anything else
// is an Error naming the variable), or the last set_numerics_checking().
bool numerics_checking();
void set_numerics_checking(bool on);
// Throws an Error naming MINIDL_CHECK_NUMERICS when its value is not 0, 1 or empty (programs call it at
// start-up so a typo fails before any work).
void check_numerics_environment();

namespace detail {
// Throws NonFiniteError when `out` (output number `position`, counted from 1 among the call's `count`
// outputs) holds a NaN or an infinity. `label` names vector elements ("[3]").
void check_kernel_output(const KernelInfo& k, int position, int count, const Tensor& out,
                         const std::string& label = "");
void check_kernel_output_list(const KernelInfo& k, int position, int count, const std::vector<Tensor>& outs);

template <class Param>
constexpr bool is_output_param() {
  return std::is_same_v<Param, Tensor&> || std::is_same_v<Param, std::vector<Tensor>&>;
}

template <class Param, class Arg>
void check_if_output(const KernelInfo& k, int& position, int count, const Arg& arg) {
  if constexpr (std::is_same_v<Param, Tensor&>) {
    check_kernel_output(k, ++position, count, arg);
  } else if constexpr (std::is_same_v<Param, std::vector<Tensor>&>) {
    check_kernel_output_list(k, ++position, count, arg);
  }
}

template <class Fn>
struct KernelOutputs;
template <class... Params>
struct KernelOutputs<bool(Params...)> {
  template <class... Args>
  static void check(const KernelInfo& k, const Args&... args) {
    constexpr int count = (0 + ... + (is_output_param<Params>() ? 1 : 0));
    int position = 0;
    (check_if_output<Params>(k, position, count, args), ...);
  }
};
}  // namespace detail

// Checks the outputs of a call of kernel `k`, whose signature is Fn (e.g. UnaryKernel), made with `args`.
// Called by dispatch() (core/dispatch.h) when numerics_checking() is on.
template <class Fn, class... Args>
void check_kernel_outputs(const KernelInfo& k, const Args&... args) {
  detail::KernelOutputs<Fn>::check(k, args...);
}

}  // namespace minidl
