// exercises/09-ctc-alpha/ctc_alpha.h — what exercise 9's file (ctc_alpha.cpp) defines, for the checker
// (check.cpp). Chapter: docs/course/09-sequences.md.
#pragma once
#include <cstdint>
#include <vector>

namespace minidl {

// One sample's extended label l' = (blank, l_1, blank, l_2, ..., l_L, blank), of length 2L + 1: position s
// holds the blank when s is even and the label labels[s / 2] when s is odd.
struct ExtendedLabel {
  const int64_t* labels;
  int64_t length;  // 2L + 1
  int64_t blank;
  int64_t at(int64_t s) const { return s % 2 == 0 ? blank : labels[s / 2]; }
};

// The CTC forward recursion for one sample of T >= 1 time steps: lp is its log-probabilities [T, C]
// (row-major), alpha is [T, ext.length], filled with -inf on entry. Fills alpha[t * ext.length + s] =
// alpha_t(s) and returns log p(l | x).
double ctc_alpha(const std::vector<double>& lp, int64_t T, int64_t C, const ExtendedLabel& ext,
                 std::vector<double>& alpha);

// log(exp(a) + exp(b)), exact for -inf (log 0).
double log_add(double a, double b);

// Registers the exercise's CTC forward kernel as "student" for key "ctc_loss" on the CPU.
void register_student_ctc();

}  // namespace minidl
