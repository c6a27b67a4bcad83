// core/call_shape.h — the shape of one kernel call, as text: "64x1x28x28,32x1x5x5,64x32x24x24,s1p0".
//
// The dispatcher describes a call only when something needs it: the per-shape profile (MINIDL_PROFILE),
// the dispatch log at level 2, and the `auto` selection, which times the kernels once per shape
// (core/dispatch.h). With none of them on, nothing here runs.
//
// One part per argument, in the signature's order (ops/kernel_signatures.h), separated by commas:
//   - a tensor: its sizes joined by 'x' ("64x1x28x28"; "0d" for a scalar tensor, "-" for an undefined
//     one), then ":float64" (any dtype but float32) and ":strided" (not contiguous) when they apply;
//   - a list of tensors: "[count:elements]" ("[8:1199882]"), short whatever the list's length;
//   - a bool: "0" or "1" (matmul's transposes);
//   - a parameter struct that describes itself: a `describe_arg` overload beside it, found by
//     argument-dependent lookup (Conv2dParams gives "s1p0", Pool2dParams "k2s2p0", in `minidl bench`'s
//     option syntax);
//   - nothing for other numbers and structs: they are values, not shapes (a dropout's counter offset, a
//     learning rate), and a profile row per value would grow without end.
// No part holds a space, so a shape is one word in the `auto` table's file (core/kernel_auto.h).
#pragma once
#include <string>
#include <type_traits>
#include <vector>

namespace minidl {

class Tensor;

// The parts of the list above; each appends to `out`, after a comma when `out` is not empty.
void describe_arg(std::string& out, const Tensor& t);
void describe_arg(std::string& out, const std::vector<Tensor>& list);
// A parameter struct's option for one pair of axes, as `minidl bench` writes it: ('s', 1, 1) -> "s1",
// ('s', 2, 1) -> "s2x1". For the describe_arg overloads beside the structs.
std::string describe_axes(char letter, int h, int w);
// Every other argument: a bool, or nothing (the types with a description have their own overload).
template <class T>
void describe_arg(std::string& out, const T& value) {
  if constexpr (std::is_same_v<T, bool>) out += out.empty() ? (value ? "1" : "0") : (value ? ",1" : ",0");
}

// The shape of a call with these arguments.
template <class... Args>
std::string describe_call(const Args&... args) {
  std::string out;
  (describe_arg(out, args), ...);
  return out;
}

}  // namespace minidl
