// exercises/09-ctc-alpha/ctc_alpha.cpp — EXERCISE 9, no scaffolding: the CTC alpha recursion.
// Read first: docs/course/09-sequences.md. Check your work: `make exercise N=9`.
//
// Contract:
//   ctc_alpha(lp, T, C, ext, alpha) fills alpha[t * Ls + s] (Ls = ext.length = 2L + 1) with the CTC forward
//   variables in log space, -inf for log 0, as docs/course/09-sequences.md and ops/kernel_signatures.h define
//   them, and returns log p(l | x). lp[t * C + k] is the log-probability of class k at step t; ext.at(s) is
//   l'_s of the extended label (blank, l_1, blank, ..., l_L, blank); T >= 1, L >= 0. Every entry of alpha is
//   -inf on entry; entries no path reaches stay so.
#include "exercises/09-ctc-alpha/ctc_alpha.h"

#include <cmath>
#include <limits>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
}  // namespace

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = a > b ? a : b;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

double ctc_alpha(const std::vector<double>& lp, int64_t T, int64_t C, const ExtendedLabel& ext,
                 std::vector<double>& alpha) {
  const int64_t Ls = ext.length;
  (void)lp;
  (void)T;
  (void)C;
  (void)Ls;
  (void)alpha;
  return kNegInf;
}

namespace {

// Key "ctc_loss": per sample n, the recursion over its first input_lengths[n] steps; nll[n] = -log p (0 for
// an impossible target with zero_infinity); log_alpha [N, T, 2S+1] = the table, -inf where unused.
template <class T>
bool ctc_loss_student_t(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                        const Tensor& target_lengths, int64_t blank, bool zero_infinity, Tensor& nll,
                        Tensor& log_alpha) {
  const int64_t T_max = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  const int64_t S = targets.size(1), Sp = 2 * S + 1;
  const T* lp = log_probs.data<T>();
  T* table = log_alpha.data<T>();
  for (int64_t i = 0; i < N * T_max * Sp; ++i) table[i] = static_cast<T>(kNegInf);
  for (int64_t n = 0; n < N; ++n) {
    const ExtendedLabel ext{targets.data<int64_t>() + n * S, 2 * target_lengths.data<int64_t>()[n] + 1, blank};
    const int64_t Tn = input_lengths.data<int64_t>()[n], Ls = ext.length;
    double log_p = Ls == 1 ? 0.0 : kNegInf;  // Tn = 0: only the empty target has an (empty) alignment
    if (Tn > 0) {
      std::vector<double> sample(Tn * C), alpha(Tn * Ls, kNegInf);
      for (int64_t t = 0; t < Tn; ++t)
        for (int64_t k = 0; k < C; ++k) sample[t * C + k] = static_cast<double>(lp[(t * N + n) * C + k]);
      log_p = ctc_alpha(sample, Tn, C, ext, alpha);
      for (int64_t t = 0; t < Tn; ++t)
        for (int64_t s = 0; s < Ls; ++s) table[(n * T_max + t) * Sp + s] = static_cast<T>(alpha[t * Ls + s]);
    }
    nll.data<T>()[n] = static_cast<T>(log_p == kNegInf && zero_infinity ? 0.0 : -log_p);
  }
  return true;
}

bool ctc_loss_student(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                      const Tensor& target_lengths, int64_t blank, bool zero_infinity, Tensor& nll, Tensor& log_alpha) {
  return MINIDL_FLOAT_TYPES(log_probs.dtype(), {
    ctc_loss_student_t<T>(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, nll, log_alpha);
  });
}

}  // namespace

// Priority -10: serves only when selected (the checker selects it). The backward stage keeps its own kernel
// (naive), which reads this forward's table: a wrong table gives a wrong gradient too.
void register_student_ctc() {
  register_kernel(keys::ctc_loss, DeviceType::cpu, "student", Priority::reference - 10,
                  "exercise 9: the alpha recursion per sample, in double", ctc_loss_student);
}

}  // namespace minidl
