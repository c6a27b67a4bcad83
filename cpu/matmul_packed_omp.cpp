// cpu/matmul_packed_omp.cpp — step 4 of the CPU GEMM ladder (docs/results/benchmarks.md): the packed
// product of step 3 on every OpenMP thread, with the widest micro-kernel this CPU runs (AVX-512, else
// AVX2), chosen at run time.
//   out[i] = op(a[i]) op(b[i])   (key "matmul", ops/kernel_signatures.h); the algorithm is in
//   cpu/matmul_packed.h.
//
// What changed from packed_avx512 / packed_avx2: the work is split across threads the way the openblas
// kernel splits it (cpu/matmul_blas.cpp), so the two compare like for like: whole products per thread
// when the batch has enough of them, otherwise each product cut into one slice of C per thread along
// its longer side, in whole micro-tiles. Each thread packs its own panels, so threads never wait for each
// other inside a product (a barrier per block costs a scheduler time slice on a busy machine); the price
// is that every thread packs the operand it shares (A~ for column slices): M*K copies per thread, small
// next to the M*N*K/threads FMAs. Below ~1 MFLOP the product stays on one thread.
//
// Declines: float64, and every call on a CPU with neither AVX-512F nor AVX2 + FMA.
// Accumulation convention: out is overwritten (=).
#include "core/dispatch.h"
#include "cpu/matmul_packed.h"
#include "ops/kernel_signatures.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {

namespace {

bool matmul_packed_omp(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b) {
  const packed::MicroKernel* micro = packed::avx512_micro_kernel();
  if (micro == nullptr) micro = packed::avx2_micro_kernel();
  if (micro == nullptr) return false;
#ifdef _OPENMP
  const int threads = omp_get_max_threads();
#else
  const int threads = 1;
#endif
  return packed::matmul_packed(*micro, a, b, out, trans_a, trans_b, threads);
}

}  // namespace

void register_matmul_packed_omp_cpu() {
  register_kernel(keys::matmul, DeviceType::cpu, "packed_omp", Priority::portable + 5,
                  "packed_avx512 (else packed_avx2) with products or slices of C across OpenMP threads",
                  matmul_packed_omp);
}

}  // namespace minidl
