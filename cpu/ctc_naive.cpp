// cpu/ctc_naive.cpp — reference CTC loss, forward (alpha) and backward (beta), one sample at a time in log
// space with double accumulators. The recursions and layouts are in ops/kernel_signatures.h.
// Accumulation convention: outputs are overwritten (=); the backward kernel zeroes grad_log_probs first and
// then writes the time steps each sample uses.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "cpu/strided.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)) without overflow; -inf is log(0) and is the identity.
double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = a > b ? a : b;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

// One sample's extended label l' = (blank, l_1, blank, ..., l_L, blank): position s holds the blank when s
// is even and label l_{(s+1)/2} (the 0-based labels[s / 2]) when s is odd.
struct ExtendedLabel {
  const int64_t* labels;
  int64_t length;  // 2L + 1
  int64_t blank;

  int64_t at(int64_t s) const { return s % 2 == 0 ? blank : labels[s / 2]; }
  // The transition s-2 -> s skips a blank; allowed only between two different labels (a repeated label
  // needs the blank between its copies, or the two would collapse into one).
  bool can_skip_to(int64_t s) const { return s >= 2 && at(s) != blank && at(s) != at(s - 2); }
};

template <class T>
bool ctc_loss_naive_t(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                      const Tensor& target_lengths, int64_t blank, bool zero_infinity, Tensor& nll,
                      Tensor& log_alpha) {
  const int64_t T_max = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  const int64_t S = targets.size(1), Sp = 2 * S + 1;
  const T* lp = log_probs.data<T>();
  const int64_t* tg = targets.data<int64_t>();
  const int64_t* il = input_lengths.data<int64_t>();
  const int64_t* tl = target_lengths.data<int64_t>();
  T* out = nll.data<T>();
  T* table = log_alpha.data<T>();
  for (int64_t i = 0; i < N * T_max * Sp; ++i) table[i] = static_cast<T>(kNegInf);

  for (int64_t n = 0; n < N; ++n) {
    const ExtendedLabel ext{tg + n * S, 2 * tl[n] + 1, blank};
    const int64_t Tn = il[n], Ls = ext.length;
    auto lp_at = [&](int64_t t, int64_t k) { return static_cast<double>(lp[(t * N + n) * C + k]); };
    T* alpha_n = table + n * T_max * Sp;

    double log_p = Ls == 1 ? 0.0 : kNegInf;  // T_n = 0: only the empty target has an (empty) alignment
    if (Tn > 0) {
      std::vector<double> alpha(Tn * Ls, kNegInf);
      alpha[0] = lp_at(0, blank);
      if (Ls > 1) alpha[1] = lp_at(0, ext.at(1));
      for (int64_t t = 1; t < Tn; ++t) {
        for (int64_t s = 0; s < Ls; ++s) {
          double sum = alpha[(t - 1) * Ls + s];
          if (s >= 1) sum = log_add(sum, alpha[(t - 1) * Ls + s - 1]);
          if (ext.can_skip_to(s)) sum = log_add(sum, alpha[(t - 1) * Ls + s - 2]);
          alpha[t * Ls + s] = sum == kNegInf ? kNegInf : sum + lp_at(t, ext.at(s));
        }
      }
      log_p = alpha[(Tn - 1) * Ls + Ls - 1];
      if (Ls > 1) log_p = log_add(log_p, alpha[(Tn - 1) * Ls + Ls - 2]);
      for (int64_t t = 0; t < Tn; ++t)
        for (int64_t s = 0; s < Ls; ++s) alpha_n[t * Sp + s] = static_cast<T>(alpha[t * Ls + s]);
    }
    const bool impossible = log_p == kNegInf;
    out[n] = static_cast<T>(impossible && zero_infinity ? 0.0 : -log_p);
  }
  return true;
}

template <class T>
bool ctc_loss_backward_naive_t(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                               const Tensor& target_lengths, const Tensor& log_alpha, const Tensor& grad_nll,
                               int64_t blank, bool zero_infinity, Tensor& grad_log_probs) {
  const int64_t T_max = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  const int64_t S = targets.size(1), Sp = 2 * S + 1;
  const T* lp = log_probs.data<T>();
  const int64_t* tg = targets.data<int64_t>();
  const int64_t* il = input_lengths.data<int64_t>();
  const int64_t* tl = target_lengths.data<int64_t>();
  const T* table = log_alpha.data<T>();
  const T* g = grad_nll.data<T>();
  T* grad = grad_log_probs.data<T>();
  for (int64_t i = 0; i < T_max * N * C; ++i) grad[i] = T(0);

  for (int64_t n = 0; n < N; ++n) {
    const ExtendedLabel ext{tg + n * S, 2 * tl[n] + 1, blank};
    const int64_t Tn = il[n], Ls = ext.length;
    if (Tn == 0) continue;  // no time step depends on log_probs
    auto lp_at = [&](int64_t t, int64_t k) { return static_cast<double>(lp[(t * N + n) * C + k]); };
    auto alpha_at = [&](int64_t t, int64_t s) { return static_cast<double>(table[(n * T_max + t) * Sp + s]); };
    auto grad_at = [&](int64_t t, int64_t k) -> T& { return grad[(t * N + n) * C + k]; };

    double log_p = alpha_at(Tn - 1, Ls - 1);
    if (Ls > 1) log_p = log_add(log_p, alpha_at(Tn - 1, Ls - 2));
    if (log_p == kNegInf) {
      // An impossible target: the loss is +inf, so its gradient is undefined (NaN) unless zero_infinity.
      if (!zero_infinity)
        for (int64_t t = 0; t < Tn; ++t)
          for (int64_t k = 0; k < C; ++k) grad_at(t, k) = std::numeric_limits<T>::quiet_NaN();
      continue;
    }

    std::vector<double> beta(Tn * Ls, kNegInf);
    beta[(Tn - 1) * Ls + Ls - 1] = lp_at(Tn - 1, ext.at(Ls - 1));
    if (Ls > 1) beta[(Tn - 1) * Ls + Ls - 2] = lp_at(Tn - 1, ext.at(Ls - 2));
    for (int64_t t = Tn - 2; t >= 0; --t) {
      for (int64_t s = 0; s < Ls; ++s) {
        double sum = beta[(t + 1) * Ls + s];
        if (s + 1 < Ls) sum = log_add(sum, beta[(t + 1) * Ls + s + 1]);
        if (s + 2 < Ls && ext.can_skip_to(s + 2)) sum = log_add(sum, beta[(t + 1) * Ls + s + 2]);
        beta[t * Ls + s] = sum == kNegInf ? kNegInf : sum + lp_at(t, ext.at(s));
      }
    }

    // log_gamma[k] = log sum_{s : l'_s = k} exp(alpha_t(s) + beta_t(s) - lp_t(k)): the log of the summed
    // probability of the alignments that emit class k at time t, divided by lp_t(k) once more (d/dlp of
    // exp(lp) * rest = exp(lp) * rest).
    std::vector<double> log_gamma(C);
    for (int64_t t = 0; t < Tn; ++t) {
      std::fill(log_gamma.begin(), log_gamma.end(), kNegInf);
      for (int64_t s = 0; s < Ls; ++s) {
        const double a = alpha_at(t, s), b = beta[t * Ls + s];
        if (a == kNegInf || b == kNegInf) continue;
        const int64_t k = ext.at(s);
        log_gamma[k] = log_add(log_gamma[k], a + b - lp_at(t, k));
      }
      for (int64_t k = 0; k < C; ++k)
        grad_at(t, k) = static_cast<T>(-static_cast<double>(g[n]) * std::exp(log_gamma[k] - log_p));
    }
  }
  return true;
}

bool ctc_loss_naive(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths, int64_t blank, bool zero_infinity, Tensor& nll, Tensor& log_alpha) {
  return MINIDL_FLOAT_TYPES(log_probs.dtype(), {
    ctc_loss_naive_t<T>(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, nll, log_alpha);
  });
}

bool ctc_loss_backward_naive(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                             const Tensor& target_lengths, const Tensor& log_alpha, const Tensor& grad_nll,
                             int64_t blank, bool zero_infinity, Tensor& grad_log_probs) {
  return MINIDL_FLOAT_TYPES(log_probs.dtype(), {
    ctc_loss_backward_naive_t<T>(log_probs, targets, input_lengths, target_lengths, log_alpha, grad_nll, blank,
                                 zero_infinity, grad_log_probs);
  });
}

}  // namespace

void register_ctc_naive_cpu() {
  register_kernel(keys::ctc_loss, DeviceType::cpu, "naive", Priority::reference,
                  "reference: alpha recursion per sample in log space, double accumulators",
                  ctc_loss_naive);
  register_kernel(keys::ctc_loss_backward, DeviceType::cpu, "naive", Priority::reference,
                  "reference: beta recursion per sample, gradient from alpha + beta",
                  ctc_loss_backward_naive);
}

}  // namespace minidl
