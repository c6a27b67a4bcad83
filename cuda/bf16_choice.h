// cuda/bf16_choice.h — under `--precision bf16`, BF16 where it is faster, TF32 where it is not.
//
// BF16 tensor cores do twice the math of TF32 per cycle, but a BF16 call through minidl also pays for
// casting its float32 operands, and cuDNN's BF16 convolutions on NCHW tensors are often slower than its
// TF32 ones: measured on the H200 (`minidl bench --op conv2d --precision bf16` against `--precision tf32`,
// docs/results/README.md), 14 of the captcha model's 15 convolution stages were slower in BF16, the
// backward-data stage of [128, 32, 64, 192] 26 times. TF32 keeps more mantissa bits than BF16 (10 against
// 7), so running such a call in TF32 is no less exact than asked for, and faster.
//
// So the kernels that have both paths (cuBLAS's matmul, cuDNN's convolutions) ask run_faster_of: the first
// call of each shape runs both paths once (their cuDNN algorithm searches included), times each of them
// three more times on the GPU, keeps the faster and runs it once more (that run's output is the call's).
// Later calls of the shape run the kept path only. With --deterministic the choice is not timed (timings
// differ between runs): BF16 always. A capture (CUDA graphs) must not time: the eager warm-up steps
// before it make every choice first.
//
// MINIDL_LOG_DISPATCH=1 prints each choice with its two times; bf16_choices() lists them (the programs'
// `bench` prints them under --precision bf16).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace minidl {
namespace cuda {

// What identifies a call's choice: the caller's numbers, unused entries 0. The first names the op, so that
// two ops' shapes never share a choice: 0, 1, 2 the conv2d stages (cuda/conv_cudnn.cu's Stage), 3 matmul
// (cuda/matmul_cublas.cu), negative numbers the tests'; then the shapes and flags. Plain integers, so that looking
// a choice up formats nothing on every call (the eager MNIST step is host-bound).
using ChoiceKey = std::array<int64_t, 16>;

// Runs one call under --precision bf16 on `device`: `bf16` with bfloat16 operands, `tf32` with the float32
// ones (TF32 tensor cores allowed). (key, device) identifies the call's choice; `describe` names the call
// (op and shapes) for the log and bf16_choices(), and is only called when a choice is made. Returns what
// the chosen path returned (false: the kernel declines the call).
bool run_faster_of(const ChoiceKey& key, int device, const std::function<std::string()>& describe,
                   const std::function<bool()>& bf16, const std::function<bool()>& tf32);

// One line per choice made so far: "conv2d.backward_input [128,32,64,192] w [32,32,3,3] on cuda:0: tf32
// (0.51 ms; bf16 13.2 ms)".
std::vector<std::string> bf16_choices();

}  // namespace cuda
}  // namespace minidl
