// exercises/06b-cuda-register-blocked/matmul_register_blocked.h — what exercise 6b's file
// (matmul_register_blocked.cu) defines, for the checker (check.cpp). Chapter: docs/course/06-gemm-ladder.md.
#pragma once

namespace minidl {

// Registers the exercise's register-blocked GPU matmul as "student" for key "matmul" on cuda.
void register_student_register_blocked_matmul();

}  // namespace minidl
