// exercises/08-sgd-momentum/sgd_momentum.h — what exercise 8's file (sgd_momentum.cpp) defines, for the
// checker (check.cpp). Chapter: docs/course/08-training-mnist.md.
#pragma once

namespace minidl {

// Registers the exercise's SGD update as "student" for key "sgd_step" on the CPU.
void register_student_sgd();

}  // namespace minidl
