// ops/elementwise_functors.h — the math of every elementwise op, written once for every backend.
//
// CPU kernels (cpu/elementwise_*.cpp) and CUDA kernels (cuda/elementwise.cu) instantiate their loops
// with these functors, so a formula cannot drift between devices.
#pragma once
#include <cmath>

#include "core/philox.h"  // MINIDL_HOST_DEVICE

namespace minidl {
namespace fn {

// ---- unary: y = f(x)
struct Neg     { template <class T> MINIDL_HOST_DEVICE T operator()(T x) const { return -x; } };
struct Exp     { template <class T> MINIDL_HOST_DEVICE T operator()(T x) const { return std::exp(x); } };
struct Log     { template <class T> MINIDL_HOST_DEVICE T operator()(T x) const { return std::log(x); } };
struct Sqrt    { template <class T> MINIDL_HOST_DEVICE T operator()(T x) const { return std::sqrt(x); } };
struct Relu    { template <class T> MINIDL_HOST_DEVICE T operator()(T x) const { return x > T(0) ? x : T(0); } };
// sigmoid(x) = 1 / (1 + e^-x), written so that neither branch overflows.
struct Sigmoid {
  template <class T> MINIDL_HOST_DEVICE T operator()(T x) const {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
};
struct Tanh    { template <class T> MINIDL_HOST_DEVICE T operator()(T x) const { return std::tanh(x); } };

// ---- unary with a scalar: y = f(x, s)
struct AddScalar { template <class T> MINIDL_HOST_DEVICE T operator()(T x, T s) const { return x + s; } };
struct MulScalar { template <class T> MINIDL_HOST_DEVICE T operator()(T x, T s) const { return x * s; } };
struct PowScalar { template <class T> MINIDL_HOST_DEVICE T operator()(T x, T s) const { return std::pow(x, s); } };

// ---- binary: y = f(a, b)
struct Add { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a + b; } };
struct Sub { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a - b; } };
struct Mul { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a * b; } };
struct Div { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a / b; } };
// comparisons: 1 where the relation holds, else 0 (in T: minidl has no bool dtype)
struct Eq { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a == b ? T(1) : T(0); } };
struct Ne { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a != b ? T(1) : T(0); } };
struct Gt { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a > b ? T(1) : T(0); } };
struct Ge { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a >= b ? T(1) : T(0); } };
struct Lt { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a < b ? T(1) : T(0); } };
struct Le { template <class T> MINIDL_HOST_DEVICE T operator()(T a, T b) const { return a <= b ? T(1) : T(0); } };
// relu'(x) * g: the gradient passes where the input was positive (a = g, b = x).
struct ReluBackward { template <class T> MINIDL_HOST_DEVICE T operator()(T g, T x) const { return x > T(0) ? g : T(0); } };

}  // namespace fn
}  // namespace minidl
