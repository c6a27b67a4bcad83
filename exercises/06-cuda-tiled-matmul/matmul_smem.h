// exercises/06-cuda-tiled-matmul/matmul_smem.h — what exercise 6's file (matmul_smem.cu) defines, for the
// checker (check.cpp). Chapter: docs/course/06-gemm-ladder.md.
#pragma once

namespace minidl {

// Registers the exercise's GPU matmul as "student" for key "matmul" on cuda.
void register_student_cuda_matmul();

}  // namespace minidl
