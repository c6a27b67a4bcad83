// core/determinism.h — the switch for deterministic algorithms (`--deterministic` in the programs).
//
// On the CPU minidl is deterministic already: the same seed and the same thread count give the same bits
// (OpenMP loops split work statically and every reduction adds in a fixed order). On a GPU two things can
// make runs differ, and this switch removes both:
//   - the choice of an algorithm by timing: cuDNN's convolution search (cudnnFind*) picks the fastest
//     algorithm of the moment, which can differ between runs; deterministic mode picks by cuDNN's
//     heuristics instead (the same choice for the same shapes, GPU and library);
//   - additions in a varying order: atomicAdd accumulation (cuda/reduce.cu gather.backward "direct"),
//     cuDNN convolution algorithms that cuDNN reports as non-deterministic, cuDNN CTC's
//     non-deterministic algorithm. In deterministic mode the cuDNN kernels use only deterministic
//     algorithms, and "direct" declines so the dispatcher takes "ordered" (docs/architecture.md,
//     "Determinism").
// Turning it on also sets CUBLAS_WORKSPACE_CONFIG=:4096:8 unless it is set (NVIDIA's setting for
// reproducible cuBLAS across streams; read when a cuBLAS handle is created, so programs turn the mode on
// before their first GPU op). cuBLAS itself is deterministic on one stream, which is all minidl uses.
// The cost: cuDNN's heuristic choice is sometimes slower than the timed one, and the ordered scatter-add
// reads k indices for each of its outputs instead of one per input.
#pragma once

namespace minidl {

// Off by default. Programs: `--deterministic`.
bool deterministic_algorithms();
void set_deterministic_algorithms(bool on);

}  // namespace minidl
