// exercises/10-fused-elementwise/sigmoid_backward.h — what exercise 10's file (sigmoid_backward.cpp)
// defines, for the checker (check.cpp). Chapter: docs/course/10-performance.md.
#pragma once

namespace minidl {

// Registers the exercise's fused kernel as "student" for the new key "sigmoid_backward" on the CPU.
void register_student_sigmoid_backward();

}  // namespace minidl
