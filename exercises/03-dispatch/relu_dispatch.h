// exercises/03-dispatch/relu_dispatch.h — what exercise 3's file (relu_dispatch.cpp) defines, for the
// checker (check.cpp). Chapter: docs/course/03-dispatch.md.
#pragma once

namespace minidl {

// Registers the exercise's relu kernel as "student" for key "relu" on the CPU.
void register_student_relu();

}  // namespace minidl
