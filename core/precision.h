// core/precision.h — the precision of float32 products on a GPU (`--precision` in the programs).
//
//   fp32  strict float32: every product and sum rounded as float32, as on the CPU (the default);
//   tf32  TF32 tensor cores may compute float32 matmuls, convolutions and the cuDNN RNN: the inputs of
//         each product keep about 10 mantissa bits (sums stay float32). Faster, less exact; PyTorch's
//         default for cuDNN convolutions. cuBLAS and cuDNN get TF32 math, and our own tf32_* kernels
//         (cuda/sgemm_common.cuh, cuda/conv_implicit_gemm_tf32.cu) may serve calls.
// The default comes from the environment: MINIDL_TF32=1 means tf32, anything else fp32.
// set_float32_precision overrides it; call it before the first GPU operation: cuDNN's algorithm choices
// and cuBLAS's math mode are made when a shape or a handle is first used, and kept.
// BF16 is not offered: it needs a bfloat16 tensor type, which minidl does not have (docs/results/README.md).
#pragma once
#include <string>

namespace minidl {

enum class Precision { fp32, tf32 };

Precision float32_precision();
void set_float32_precision(Precision p);
// "fp32" or "tf32"; anything else throws an Error that lists both.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

}  // namespace minidl
