// exercises/09-ctc-alpha/check.cpp — the checker of exercise 9: the alpha table of the chapter's 3-step
// example entry by entry, a repeated label (where the skip is forbidden), then the kernel "student" against
// the naive one (mixed lengths, an empty target, an impossible one, zero_infinity, float64), the float64
// gradient check through ctc_loss (the naive backward reads your table), and the bench.
#include <cmath>
#include <limits>
#include <sstream>

#include "exercises/09-ctc-alpha/ctc_alpha.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The alpha table of one sample by the naive kernel (the reference), [T, 2L+1].
std::vector<double> reference_alpha(const std::vector<double>& lp, int64_t T, int64_t C, const std::vector<int64_t>& labels,
                                    double* log_p) {
  const int64_t L = static_cast<int64_t>(labels.size()), Sp = 2 * L + 1;
  const Tensor log_probs = from_vector(lp, {T, 1, C}, DType::float64);
  const Tensor targets = from_vector(std::vector<double>(labels.begin(), labels.end()), {1, L}, DType::int64);
  const Tensor il = from_vector({static_cast<double>(T)}, {1}, DType::int64);
  const Tensor tl = from_vector({static_cast<double>(L)}, {1}, DType::int64);
  Tensor nll = empty({1}, DType::float64), table = empty({1, T, Sp}, DType::float64);
  exercise::call_kernel<CtcLossKernel>("ctc_loss", DeviceType::cpu, "naive", log_probs, targets, il, tl, int64_t{0}, false,
                                       nll, table);
  *log_p = -nll.item<double>();
  return table.to_vector<double>();
}

std::string label_text(const ExtendedLabel& ext) {
  const char* names = "-abcdefgh";
  std::string s = "l' = (";
  for (int64_t i = 0; i < ext.length; ++i) s += std::string(i ? ", " : "") + names[ext.at(i)];
  return s + ")";
}

// The student's ctc_alpha on one sample against the reference, entry by entry.
std::string check_sample(const std::vector<double>& probs, int64_t T, int64_t C, const std::vector<int64_t>& labels) {
  std::vector<double> lp(probs.size());
  for (size_t i = 0; i < probs.size(); ++i) lp[i] = std::log(probs[i]);
  double ref_log_p = 0;
  const std::vector<double> ref = reference_alpha(lp, T, C, labels, &ref_log_p);
  const ExtendedLabel ext{labels.data(), 2 * static_cast<int64_t>(labels.size()) + 1, 0};
  const int64_t Ls = ext.length;
  std::vector<double> alpha(T * Ls, kNegInf);
  const double log_p = ctc_alpha(lp, T, C, ext, alpha);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < Ls; ++s) {
      const double got = alpha[t * Ls + s], want = ref[t * Ls + s];
      if (exercise::agrees(got, want, 1e-9, 1e-9)) continue;  // -inf matches only -inf
      std::ostringstream os;
      os << label_text(ext) << ", T = " << T << " (classes: - is the blank 0, a = 1, b = 2)\n"
         << "alpha_" << t << "(" << s << ") is " << got << " (probability " << std::exp(got) << "), expected " << want
         << " (probability " << std::exp(want) << ").\n";
      if (t == 0)
        os << "At t = 0 only s = 0 (the blank) and s = 1 (the first label) can start a path: alpha_0(0) = lp_0(blank), "
              "alpha_0(1) = lp_0(l'_1), -inf elsewhere.";
      else
        os << "alpha_" << t << "(" << s << ") = lp_" << t << "(" << "-abcdefgh"[ext.at(s)] << ") + logsumexp(alpha_" << t - 1
           << "(" << s << ")" << (s >= 1 ? str_cat(", alpha_", t - 1, "(", s - 1, ")") : std::string())
           << (s >= 2 && ext.at(s) != 0 && ext.at(s) != ext.at(s - 2) ? str_cat(", alpha_", t - 1, "(", s - 2, ")")
                                                                        : std::string())
           << ")" << (s >= 2 && ext.at(s) != 0 && ext.at(s) == ext.at(s - 2)
                          ? ": no skip from s-2, the same label (a repeat needs the blank between)"
                          : s >= 2 && ext.at(s) == 0 ? ": no skip into a blank" : "");
      return os.str();
    }
  if (!exercise::agrees(log_p, ref_log_p, 1e-9, 1e-9))
    return str_cat("the table is right, but the returned log p is ", log_p, ", expected ", ref_log_p,
                   ": log p = logsumexp(alpha_{T-1}(2L), alpha_{T-1}(2L-1)), the paths ending on the last label or the "
                   "blank after it");
  return "";
}

struct Batch {
  Tensor log_probs, targets, input_lengths, target_lengths;
};

// N samples of mixed lengths: (T_n, L_n) pairs; labels in [1, C).
Batch batch(int64_t T, int64_t C, const std::vector<std::pair<int64_t, int64_t>>& lengths, DType dtype) {
  const int64_t N = static_cast<int64_t>(lengths.size());
  int64_t S = 1;
  for (const auto& l : lengths) S = std::max(S, l.second);
  Batch b;
  b.log_probs = log_softmax(testing::uniform({T, N, C}, -2, 2, dtype), -1);
  std::vector<double> tg(N * S, 0), il, tl;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < lengths[n].second; ++s) tg[n * S + s] = static_cast<double>(1 + (n * 7 + s * (s % 2 ? 1 : 3)) % (C - 1));
    il.push_back(static_cast<double>(lengths[n].first));
    tl.push_back(static_cast<double>(lengths[n].second));
  }
  b.targets = from_vector(tg, {N, S}, DType::int64);
  b.input_lengths = from_vector(il, {N}, DType::int64);
  b.target_lengths = from_vector(tl, {N}, DType::int64);
  return b;
}

std::string check_kernel(const Batch& b, bool zero_infinity) {
  const int64_t T = b.log_probs.size(0), N = b.log_probs.size(1), Sp = 2 * b.targets.size(1) + 1;
  const DType dt = b.log_probs.dtype();
  Tensor nll_ref = empty({N}, dt), alpha_ref = empty({N, T, Sp}, dt);
  Tensor nll = full({N}, -777, dt), alpha = full({N, T, Sp}, -777, dt);
  exercise::call_kernel<CtcLossKernel>("ctc_loss", DeviceType::cpu, "naive", b.log_probs, b.targets, b.input_lengths,
                                       b.target_lengths, int64_t{0}, zero_infinity, nll_ref, alpha_ref);
  if (!exercise::call_kernel<CtcLossKernel>("ctc_loss", DeviceType::cpu, kStudent, b.log_probs, b.targets, b.input_lengths,
                                            b.target_lengths, int64_t{0}, zero_infinity, nll, alpha))
    return "your kernel declined the call";
  const double tol = dt == DType::float32 ? 1e-5 : 1e-10;
  std::string diff = testing::compare(nll, nll_ref, tol, tol);
  if (!diff.empty()) return "the losses -log p differ (one per sample):\n" + diff;
  diff = testing::compare(alpha, alpha_ref, tol, tol);
  if (!diff.empty()) return "the alpha tables differ ([sample, t, s]):\n" + diff;
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {9, "the CTC alpha recursion", "exercises/09-ctc-alpha/ctc_alpha.cpp"});
  register_student_ctc();

  // The chapter's example: T = 3 steps, classes (blank, a, b), target "ab" (docs/course/09-sequences.md).
  const std::vector<double> example = {0.5, 0.4, 0.1,   // t = 0: P(-), P(a), P(b)
                                       0.4, 0.3, 0.3,   // t = 1
                                       0.5, 0.1, 0.4};  // t = 2
  c.section("9a  ctc_alpha on one sample, entry by entry (the chapter's example first)");
  c.check("the chapter's example: target \"ab\", T = 3 (p = 0.28: the paths ab-, a-b, -ab, aab, abb)",
          [&] { return check_sample(example, 3, 3, {1, 2}); });
  c.check("a repeated label: target \"aa\", T = 3 (only a-a aligns it: no skip between equal labels)",
          [&] { return check_sample(example, 3, 3, {1, 1}); });
  c.check("the empty target: T = 3, L = 0 (the one all-blank path)", [&] { return check_sample(example, 3, 3, {}); });
  c.check("target \"ab\", T = 1 (too short: p = 0, log p = -inf)", [&] {
    return check_sample({0.5, 0.4, 0.1}, 1, 3, {1, 2});
  });
  c.check("target \"aba\", T = 6, C = 3", [&] {
    std::vector<double> p;
    for (int t = 0; t < 6; ++t) p.insert(p.end(), {0.2 + 0.1 * (t % 3), 0.5 - 0.1 * (t % 3), 0.3});
    return check_sample(p, 6, 3, {1, 2, 1});
  });

  c.section("9b  the kernel \"student\" against the naive kernel");
  c.check("registered for key \"ctc_loss\" on the CPU",
          [] { return exercise::registered("ctc_loss", DeviceType::cpu, "register_student_ctc()"); });
  c.check("float32, 4 samples of lengths T_n < T and L_n (one empty target)", [] {
    return check_kernel(batch(12, 6, {{12, 4}, {9, 3}, {12, 0}, {5, 2}}, DType::float32), false);
  });
  c.check("float64, an impossible target (L = 4 in T = 3: loss +inf)", [] {
    return check_kernel(batch(8, 5, {{8, 3}, {3, 4}}, DType::float64), false);
  });
  c.check("the same with zero_infinity (its loss 0)", [] {
    return check_kernel(batch(8, 5, {{8, 3}, {3, 4}}, DType::float64), true);
  });

  c.section("9c  the gradient check through ctc_loss (your forward; the naive backward reads your alpha table)");
  c.check("gradcheck, T = 6, 2 samples, C = 4", [] {
    exercise::Selected s("ctc_loss", DeviceType::cpu, kStudent);
    const Batch b = batch(6, 4, {{6, 2}, {5, 3}}, DType::float64);
    const std::string report = testing::gradcheck(
        [&](const std::vector<Tensor>& in) { return ctc_loss(in[0], b.targets, b.input_lengths, b.target_lengths); },
        {testing::uniform({6, 2, 4}, -3, -0.5).requires_grad_()});
    if (last_kernel("ctc_loss", DeviceType::cpu) != kStudent)
      return str_cat("the forward was served by \"", last_kernel("ctc_loss", DeviceType::cpu), "\", not your kernel");
    return report;
  });

  c.bench({"ctc_loss"}, {kStudent, "naive"}, {"ctc_loss:12x128x37,s4", "ctc_loss:200x64x96,s50"});
  return c.finish();
}
