// exercises/04-tiled-matmul/matmul_tiled.h — what exercise 4's file (matmul_tiled.cpp) defines, for the
// checker (check.cpp). Chapter: docs/course/04-cpu-kernels.md.
#pragma once

namespace minidl {

// Registers the exercise's matmul kernel as "student" for key "matmul" on the CPU.
void register_student_matmul();

}  // namespace minidl
