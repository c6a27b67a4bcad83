// cuda/mma_tf32.cuh — the two instructions every mma.sync TF32 kernel of minidl uses (the TF32 matmul
// cuda/matmul_tf32_mma.cu, the implicit-GEMM convolution cuda/conv_implicit_gemm_tf32.cu, the channels-last
// weight gradient cuda/conv_wgrad_nhwc_3x3.cu): the rounding of a float32 to TF32 and one
//
//     mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32     D[16x8] += A[16x8] * B[8x8]
//
// Fragment ownership (PTX ISA, "Matrix fragments for mma.m16n8k8", .tf32), with g = lane / 4, t = lane % 4:
//     a0 = A[g][t]   a1 = A[g+8][t]   a2 = A[g][t+4]   a3 = A[g+8][t+4]      (A row-major, 16 x 8)
//     b0 = B[t][g]   b1 = B[t+4][g]                                          (B "col": 8 x 8, k rows)
//     c0 = C[g][2t]  c1 = C[g][2t+1]  c2 = C[g+8][2t]  c3 = C[g+8][2t+1]
#pragma once
#include <cstdint>

namespace minidl {
namespace cuda {

// v rounded to TF32 (10 explicit mantissa bits, to nearest, ties away from zero), as a bit pattern.
__device__ __forceinline__ uint32_t to_tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return r;
}

// d += a b on one 16 x 8 x 8 tile; a and b hold TF32 bit patterns, d accumulates in float32.
__device__ __forceinline__ void mma_tf32_16x8x8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace cuda
}  // namespace minidl
