// core/determinism.h — the switch for deterministic algorithms (`--deterministic` in the programs).
//
// On the CPU minidl is deterministic already: the same seed and the same thread count give the same bits
// (OpenMP loops split work statically and every reduction adds in a fixed order). On a GPU two things can
// make runs differ, and this switch removes both:
//   - the choice of an algorithm by timing: cuDNN's convolution search (cudnnFind*) picks the fastest
//     algorithm of the moment, which can differ between runs; deterministic mode picks by cuDNN's
//     heuristics instead (the same choice for the same shapes, GPU and library);
//   - kernels whose additions race: atomicAdd accumulation (cuda/reduce.cu gather.backward "direct"),
//     cuDNN convolution algorithms that cuDNN reports as non-deterministic, cuDNN CTC's
//     non-deterministic algorithm. In deterministic mode these kernels decline, and the dispatcher takes
//     the next kernel, which is deterministic (docs/architecture.md, "Determinism").
// The cost: cuDNN's heuristic choice is sometimes slower than the timed one, and the deterministic
// scatter-add reads its index once per output element instead of once per input.
#pragma once

namespace minidl {

// Off by default.
bool deterministic_algorithms();
void set_deterministic_algorithms(bool on);

}  // namespace minidl
