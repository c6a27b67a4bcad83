// exercises/05-cuda-kernels/cuda_kernels.h — what exercise 5's file (cuda_kernels.cu) defines, for the
// checker (check.cpp). Chapter: docs/course/05-cuda-kernels.md.
#pragma once

namespace minidl {

// Registers the exercise's two GPU kernels as "student": key "relu" and key "sum" on cuda.
void register_student_cuda_kernels();

}  // namespace minidl
