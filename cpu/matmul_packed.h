// cpu/matmul_packed.h — the Goto/BLIS matrix product that the packed matmul kernels share (steps 3 and 4
// of the CPU GEMM ladder, docs/results/benchmarks.md): cache blocks, packed panels, and a register-blocked
// micro-kernel written with vector intrinsics, one per instruction set.
//
// C [M, N] = op(A) [M, K] op(B) [K, N] is computed as (loop names as in BLIS):
//   for jc in steps of NC:                      a panel of NC columns of C
//     for pc in steps of KC:                    a slice of KC terms of the sum
//       pack op(B)[pc:pc+KC, jc:jc+NC]  -> B~ (KC x NC, in micro-panels of NR columns)   ~ lives in L3
//       for ic in steps of MC:
//         pack op(A)[ic:ic+MC, pc:pc+KC] -> A~ (MC x KC, in micro-panels of MR rows)    ~ lives in L2
//         for jr in steps of NR:                a micro-panel of B~ (KC x NR)              ~ lives in L1
//           for ir in steps of MR:
//             C[ic+ir : +MR, jc+jr : +NR] (+)= A~ micro-panel x B~ micro-panel   (the micro-kernel)
// Why it is fast:
//   - the micro-kernel keeps an MR x NR tile of C in vector registers for all KC terms: per term it
//     loads NR/lanes vectors of B~, broadcasts MR values of A~, and issues MR*NR/lanes FMAs, so the FMA
//     units, not the loads, set the pace (12x32 on AVX-512: 2 loads + 12 broadcasts feed 24 FMAs);
//   - packing copies each block once into the exact order the micro-kernel reads, with stride 1, so
//     every load hits a cache line already fetched and transposed operands cost nothing more (the pack
//     reads them either way), and zero padding makes every tile full size;
//   - the blocks are sized for the caches: B~'s micro-panel stays in L1 while the ir loop sweeps A~,
//     A~ stays in L2 while the jr loop sweeps B~, and B~ is reused by every ic block.
// Edge tiles (M or N not a multiple of MR or NR) are computed into a small buffer and copied out.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace minidl {
namespace packed {

// A micro-kernel and the block sizes tuned for it.
struct MicroKernel {
  const char* isa;     // "AVX-512"
  int64_t mr, nr;      // the register tile of C
  int64_t mc, kc, nc;  // the cache blocks: A~ is MC x KC, B~ is KC x NC
  // c[0:mr, 0:nr] (row stride ldc) = (accumulate ? c : 0) + sum over kc terms of a~ (kc x mr, stored
  // a[k * mr + r]) times b~ (kc x nr, stored b[k * nr + j]).
  void (*tile)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate);
};

// The micro-kernels, or nullptr when this CPU lacks the instructions (checked at run time with
// __builtin_cpu_supports; the intrinsics are compiled for their target only, never -march=native).
const MicroKernel* avx2_micro_kernel();    // cpu/matmul_packed_avx2.cpp: 6 x 16, AVX2 + FMA
const MicroKernel* avx512_micro_kernel();  // cpu/matmul_packed_avx512.cpp: 12 x 32, AVX-512F

// The matmul kernel signature's work with micro-kernel `micro`, float32 only (false otherwise): a
// [B, ra, ca], b [B, rb, cb], out [B, M, N] contiguous, transposes as in ops/kernel_signatures.h. With
// threads > 1 the products (or slices of one product's columns or rows) are split across OpenMP threads,
// each packing its own panels.
bool matmul_packed(const MicroKernel& micro, const Tensor& a, const Tensor& b, Tensor& out, bool trans_a,
                   bool trans_b, int threads);

}  // namespace packed
}  // namespace minidl
