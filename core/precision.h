// core/precision.h — the precision of float32 products on a GPU (`--precision` in the programs).
//
//   fp32  strict float32: every product and sum rounded as float32, as on the CPU (the default);
//   tf32  TF32 tensor cores may compute float32 matmuls, convolutions and the cuDNN RNN: the inputs of
//         each product keep about 10 mantissa bits (sums stay float32). Faster, less exact; PyTorch's
//         default for cuDNN convolutions. cuBLAS and cuDNN get TF32 math, and our own tf32_* kernels
//         (cuda/sgemm_common.cuh, cuda/conv_implicit_gemm_tf32.cu) may serve calls.
//   bf16  mixed precision with bfloat16 (core/bfloat16.h): the kernels of matmuls (cuBLAS), convolutions
//         and the RNN (cuDNN) cast their float32 operands to bfloat16 (8 significant bits, float32's
//         range), multiply on BF16 tensor cores with float32 accumulation, and write float32 results.
//         Everything else stays float32: the parameters (the "master weights"), their gradients and the
//         optimizer, batch-norm statistics, softmax and the losses, and activations unless a model asks.
//         The range is float32's, so unlike FP16 no loss scaling is needed. A matmul or convolution shape whose BF16 path is slower
//         than its TF32 one (casts included) runs in TF32 instead, chosen by timing both once
//         (cuda/bf16_choice.h); on the H200 that is every one of them. Kernels without a BF16 path (ours:
//         the GEMM and convolution ladders) compute in float32 when they serve a call.
//         This is autocast at the kernel boundary. PyTorch's autocast also keeps the matmul and
//         convolution *outputs* in bfloat16, halving the traffic of the elementwise ops between them; in
//         minidl a model does that by giving its layers bfloat16 activations (the op cast): conv2d,
//         batch_norm (+ReLU) and the pooling ops take and give bfloat16 tensors (ops/bfloat16_widening.h),
//         and the captcha model does so with --activations bf16 (examples/flags.h).
//         docs/results/README.md, "BF16 mixed precision" and "Issue 26, round 13", has the measurements.
// On the CPU every precision computes strict float32.
// The default comes from the environment: MINIDL_TF32=1 means tf32, anything else fp32.
// set_float32_precision overrides it; call it before the first GPU operation: cuDNN's algorithm choices
// and cuBLAS's math mode are made when a shape or a handle is first used, and kept (per precision).
#pragma once
#include <string>

namespace minidl {

enum class Precision { fp32, tf32, bf16 };

Precision float32_precision();
void set_float32_precision(Precision p);
// "fp32", "tf32" or "bf16"; anything else throws an Error that lists them.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

}  // namespace minidl
