// tests/test_ctc.cpp — CTC loss against a brute-force sum over every alignment path, its gradient by finite
// differences, the edge cases (repeats, tight and impossible targets, zero_infinity, batches of mixed
// lengths), argument errors, every registered kernel against the naive one, and greedy decoding.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/random.h"
#include "nn/ctc_decode.h"
#include "tests/skips.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// log_softmax over the last dim written with elementwise ops, so that these tests (and gradcheck through
// it) do not depend on the fused softmax op.
Tensor log_softmax_by_ops(const Tensor& x) { return sub(x, log(sum(exp(x), {-1}, /*keepdim=*/true))); }

Tensor int64_tensor(const std::vector<double>& values, const Shape& shape) {
  return from_vector(values, shape, DType::int64);
}

// -log p(target | lp) by enumerating all C^T paths of one sample: a path's probability is
// prod_t exp(lp[t][path_t]); the path counts when collapsing it (merge repeats, drop blanks) gives target.
double brute_force_nll(const std::vector<double>& lp, int64_t T, int64_t C, const std::vector<int64_t>& target,
                       int64_t blank) {
  int64_t paths = 1;
  for (int64_t t = 0; t < T; ++t) paths *= C;
  double p = 0;
  std::vector<int64_t> path(T);
  for (int64_t code = 0; code < paths; ++code) {
    int64_t rest = code;
    double log_prob = 0;
    for (int64_t t = 0; t < T; ++t) {
      path[t] = rest % C;
      rest /= C;
      log_prob += lp[t * C + path[t]];
    }
    std::vector<int64_t> collapsed;
    for (int64_t t = 0; t < T; ++t)
      if (path[t] != blank && (t == 0 || path[t] != path[t - 1])) collapsed.push_back(path[t]);
    if (collapsed == target) p += std::exp(log_prob);
  }
  return -std::log(p);
}

// Sample n of a [T, N, C] tensor as a flat [T][C] vector of its first T_n steps.
std::vector<double> sample_log_probs(const Tensor& log_probs, int64_t n, int64_t Tn) {
  const int64_t N = log_probs.size(1), C = log_probs.size(2);
  const std::vector<double> all = log_probs.to_vector<double>();
  std::vector<double> out(Tn * C);
  for (int64_t t = 0; t < Tn; ++t)
    for (int64_t k = 0; k < C; ++k) out[t * C + k] = all[(t * N + n) * C + k];
  return out;
}

// One sample's loss through the op (batch of one), as a double.
double single_loss(const Tensor& log_probs, const std::vector<int64_t>& target, int64_t Tn, int64_t blank = 0,
                   bool zero_infinity = false) {
  std::vector<double> tg(target.begin(), target.end());
  const int64_t S = static_cast<int64_t>(target.size());
  return ctc_loss(log_probs, int64_tensor(tg, {1, S}), int64_tensor({double(Tn)}, {1}),
                  int64_tensor({double(S)}, {1}), blank, zero_infinity)
      .item<double>();
}

}  // namespace

TEST_CASE("ctc_loss equals the brute-force sum over alignments", "[ctc]") {
  manual_seed(7);
  struct Case {
    int64_t T, C;
    std::vector<int64_t> target;
    int64_t blank;
  };
  const std::vector<Case> cases = {
      {4, 3, {1, 2}, 0},     {5, 3, {1, 1}, 0},    {5, 4, {3, 1, 2}, 0}, {4, 4, {2, 2, 3}, 0},
      {5, 3, {1}, 0},        {4, 3, {}, 0},        {5, 4, {1, 2, 1}, 0}, {4, 4, {0, 1}, 3},
      {3, 3, {1, 1}, 0},     {5, 4, {2, 3, 2, 3}, 0}, {1, 3, {2}, 0},
  };
  for (DType dtype : {DType::float64, DType::float32}) {
    for (const Case& c : cases) {
      INFO("T " << c.T << " C " << c.C << " target length " << c.target.size() << " blank " << c.blank << " dtype "
                << dtype_name(dtype));
      const Tensor log_probs = log_softmax_by_ops(uniform({c.T, 1, c.C}, -2, 2)).to(dtype);
      const double expected = brute_force_nll(sample_log_probs(log_probs, 0, c.T), c.T, c.C, c.target, c.blank);
      const double got = single_loss(log_probs, c.target, c.T, c.blank);
      const double length = std::max<double>(1, static_cast<double>(c.target.size()));
      const double tol = dtype == DType::float64 ? 1e-12 : 1e-5;
      CHECK(std::isfinite(got));
      CHECK(got == Approx(expected / length).epsilon(tol).margin(tol));
    }
  }
}

TEST_CASE("ctc_loss: repeated labels need a blank between them", "[ctc]") {
  manual_seed(11);
  // "AA" (class 1 twice) collapses from A-A only: T = 2 has no alignment, T = 3 has exactly one.
  const Tensor lp2 = log_softmax_by_ops(uniform({2, 1, 3}, -1, 1));
  CHECK(std::isinf(single_loss(lp2, {1, 1}, 2)));
  CHECK(std::isfinite(single_loss(lp2, {1, 2}, 2)));  // "AB" fits in two steps

  const Tensor lp3 = log_softmax_by_ops(uniform({3, 1, 3}, -1, 1));
  const std::vector<double> v = lp3.to_vector<double>();
  const double only_path = -(v[0 * 3 + 1] + v[1 * 3 + 0] + v[2 * 3 + 1]);  // A, blank, A
  CHECK(single_loss(lp3, {1, 1}, 3) == Approx(only_path / 2).epsilon(1e-12));
}

TEST_CASE("ctc_loss: a target as long as the input allows has exactly one alignment", "[ctc]") {
  manual_seed(12);
  // Distinct neighbours: T = L, the path is the target itself.
  const Tensor a = log_softmax_by_ops(uniform({4, 1, 5}, -2, 2));
  const std::vector<double> va = a.to_vector<double>();
  const std::vector<int64_t> target = {3, 1, 4, 2};
  double nll = 0;
  for (int64_t t = 0; t < 4; ++t) nll -= va[t * 5 + target[t]];
  CHECK(single_loss(a, target, 4) == Approx(nll / 4).epsilon(1e-12));
  CHECK(std::isinf(single_loss(a, {3, 1, 4, 2}, 3)));  // one step fewer: impossible

  // One repeat: "ABBA" needs T = 5 (A B - B A).
  const Tensor b = log_softmax_by_ops(uniform({5, 1, 3}, -2, 2));
  const std::vector<double> vb = b.to_vector<double>();
  const std::vector<int64_t> path = {1, 2, 0, 2, 1};
  double nll_b = 0;
  for (int64_t t = 0; t < 5; ++t) nll_b -= vb[t * 3 + path[t]];
  CHECK(single_loss(b, {1, 2, 2, 1}, 5) == Approx(nll_b / 4).epsilon(1e-12));
  CHECK(std::isinf(single_loss(b, {1, 2, 2, 1}, 4)));
}

TEST_CASE("ctc_loss gradient: finite differences through log_softmax and on raw log-probabilities", "[ctc][grad]") {
  manual_seed(3);
  const int64_t T = 6, N = 3, C = 4, S = 3;
  const Tensor targets = int64_tensor({1, 2, 2, 3, 0, 0, 1, 3, 1}, {N, S});
  const Tensor input_lengths = int64_tensor({6, 4, 5}, {N});
  const Tensor target_lengths = int64_tensor({3, 1, 3}, {N});
  auto loss_of_logits = [&](const std::vector<Tensor>& in) {
    return ctc_loss(log_softmax_by_ops(in[0]), targets, input_lengths, target_lengths);
  };
  Tensor logits = uniform({T, N, C}, -2, 2).requires_grad_();
  CHECK(gradcheck(loss_of_logits, {logits}) == "");

  // The gradient is with respect to log_probs themselves, so it must also hold for unnormalised inputs.
  auto loss_of_log_probs = [&](const std::vector<Tensor>& in) {
    return ctc_loss(in[0], targets, input_lengths, target_lengths);
  };
  Tensor raw = uniform({T, N, C}, -3, 0).requires_grad_();
  CHECK(gradcheck(loss_of_log_probs, {raw}) == "");

  // Time steps past a sample's input length get no gradient.
  raw.zero_grad();
  ctc_loss(raw, targets, input_lengths, target_lengths).backward();
  const std::vector<double> g = raw.grad().to_vector<double>();
  for (int64_t t = 4; t < T; ++t)
    for (int64_t k = 0; k < C; ++k) CHECK(g[(t * N + 1) * C + k] == 0.0);
}

TEST_CASE("ctc_loss: a batch of mixed lengths equals its samples computed one by one", "[ctc]") {
  manual_seed(5);
  const int64_t T = 7, N = 4, C = 5, S = 4;
  const std::vector<std::vector<int64_t>> labels = {{1, 2, 3, 4}, {2}, {3, 3}, {}};
  const std::vector<int64_t> in_len = {7, 3, 5, 2};
  std::vector<double> padded(N * S, 0), t_len, i_len;
  for (int64_t n = 0; n < N; ++n) {
    for (size_t s = 0; s < labels[n].size(); ++s) padded[n * S + s] = static_cast<double>(labels[n][s]);
    t_len.push_back(static_cast<double>(labels[n].size()));
    i_len.push_back(static_cast<double>(in_len[n]));
  }
  for (DType dtype : {DType::float64, DType::float32}) {
    INFO("dtype " << dtype_name(dtype));
    const double tol = dtype == DType::float64 ? 1e-12 : 1e-5;
    Tensor lp = log_softmax_by_ops(uniform({T, N, C}, -2, 2)).to(dtype).requires_grad_();
    Tensor loss = ctc_loss(lp, int64_tensor(padded, {N, S}), int64_tensor(i_len, {N}), int64_tensor(t_len, {N}));
    loss.backward();
    const Tensor batch_grad = lp.grad();
    double mean = 0;
    for (int64_t n = 0; n < N; ++n) {
      INFO("sample " << n);
      // The same sample alone, with its sequence cut to its own input length.
      Tensor one = lp.detach().slice(1, n, n + 1).slice(0, 0, in_len[n]).contiguous().requires_grad_();
      const double single = single_loss(one, labels[n], in_len[n]);
      mean += single / N;
      std::vector<double> tg(labels[n].begin(), labels[n].end());
      const int64_t L = static_cast<int64_t>(labels[n].size());
      ctc_loss(one, int64_tensor(tg, {1, L}), int64_tensor({double(in_len[n])}, {1}), int64_tensor({double(L)}, {1}))
          .backward();
      // d(batch mean)/d(sample) = d(single)/d(sample) / N; zero after the input length.
      Tensor expected = zeros({T, 1, C}, dtype);
      copy_(expected.slice(0, 0, in_len[n]), one.grad());
      CHECK(compare(batch_grad.slice(1, n, n + 1), mul_scalar(expected, 1.0 / N), tol, tol) == "");
    }
    CHECK(loss.item<double>() == Approx(mean).epsilon(tol));
  }
}

TEST_CASE("ctc_loss: impossible alignments give inf, or 0 with zero_infinity", "[ctc]") {
  manual_seed(9);
  const int64_t T = 3, N = 2, C = 4;
  // Sample 0 wants 4 labels in 3 steps (impossible); sample 1 is fine.
  const Tensor targets = int64_tensor({1, 2, 3, 1, 1, 2, 0, 0}, {N, 4});
  const Tensor input_lengths = int64_tensor({3, 3}, {N});
  const Tensor target_lengths = int64_tensor({4, 2}, {N});
  Tensor lp = log_softmax_by_ops(uniform({T, N, C}, -1, 1)).requires_grad_();

  const Tensor inf_loss = ctc_loss(lp, targets, input_lengths, target_lengths);
  CHECK(std::isinf(inf_loss.item<double>()));
  CHECK(inf_loss.item<double>() > 0);
  inf_loss.backward();
  const std::vector<double> g_inf = lp.grad().to_vector<double>();
  CHECK(std::isnan(g_inf[0 * N * C + 0]));  // sample 0: undefined gradient without zero_infinity

  lp.zero_grad();
  const Tensor loss = ctc_loss(lp, targets, input_lengths, target_lengths, 0, /*zero_infinity=*/true);
  const double sample1 = single_loss(lp.detach().slice(1, 1, 2).contiguous(), {1, 2}, 3);
  CHECK(loss.item<double>() == Approx(sample1 / 2).epsilon(1e-12));  // (0 + sample 1) / N
  loss.backward();
  const std::vector<double> g = lp.grad().to_vector<double>();
  bool sample1_has_gradient = false;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < C; ++k) {
      CHECK(g[(t * N + 0) * C + k] == 0.0);
      sample1_has_gradient |= g[(t * N + 1) * C + k] != 0.0;
    }
  CHECK(sample1_has_gradient);
  // Sample 1's gradient is not disturbed by its impossible neighbour.
  CHECK(g_inf[(0 * N + 1) * C + 1] == Approx(g[(0 * N + 1) * C + 1]).epsilon(1e-12));
}

TEST_CASE("ctc_loss: argument errors name the problem", "[ctc]") {
  const Tensor lp = log_softmax_by_ops(uniform({4, 2, 3}, -1, 1));
  const Tensor targets = int64_tensor({1, 2, 2, 1}, {2, 2});
  const Tensor il = int64_tensor({4, 4}, {2}), tl = int64_tensor({2, 2}, {2});
  CHECK_NOTHROW(ctc_loss(lp, targets, il, tl));
  CHECK_THROWS_WITH(ctc_loss(lp, int64_tensor({1, 0, 2, 1}, {2, 2}), il, tl), Catch::Contains("is the blank"));
  CHECK_THROWS_WITH(ctc_loss(lp, int64_tensor({1, 3, 2, 1}, {2, 2}), il, tl),
                    Catch::Contains("targets[0, 1] = 3 is not a class"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, int64_tensor({5, 4}, {2}), tl),
                    Catch::Contains("input_lengths[0] = 5 is outside"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, il, int64_tensor({2, 3}, {2}), 0),
                    Catch::Contains("target_lengths[1] = 3 is outside"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets.to(DType::float32), il, tl), Catch::Contains("targets must be int64"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, il.to(DType::int32), tl), Catch::Contains("input_lengths must be int64"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, il, tl, 3), Catch::Contains("blank 3 is not a class"));
  CHECK_THROWS_WITH(ctc_loss(lp.reshape({8, 3}), targets, il, tl), Catch::Contains("[T, N, C]"));
  CHECK_THROWS_WITH(ctc_loss(lp, int64_tensor({1, 2, 2}, {3, 1}), il, tl), Catch::Contains("3 rows for a batch of 2"));
}

TEST_CASE("ctc_loss: every kernel matches the naive reference", "[ctc]") {
  manual_seed(21);
  const int64_t T = 9, N = 5, C = 6, S = 4;
  const Tensor targets = int64_tensor({1, 2, 3, 4, 5, 5, 0, 0, 2, 0, 0, 0, 1, 2, 1, 2, 3, 3, 3, 0}, {N, S});
  const Tensor il = int64_tensor({9, 6, 3, 8, 7}, {N}), tl = int64_tensor({4, 2, 1, 4, 3}, {N});
  const Tensor lp = log_softmax_by_ops(uniform({T, N, C}, -3, 3, DType::float32));
  Tensor ref_loss, ref_grad;
  {
    SelectionReset reset;
    select_kernel("ctc_loss", DeviceType::cpu, "naive");
    Tensor x = lp.detach().clone().requires_grad_();
    ref_loss = ctc_loss(x, targets, il, tl);
    ref_loss.backward();
    ref_grad = x.grad();
  }
  for_each_kernel("ctc_loss", [&](Device d, const std::string& name) {
    Tensor x = lp.to(d).detach().requires_grad_();
    Tensor loss = ctc_loss(x, targets.to(d), il.to(d), tl.to(d));
    CHECK(last_kernel("ctc_loss", d.type) == name);
    loss.backward();
    CHECK(last_kernel("ctc_loss.backward", d.type) == name);
    CHECK(compare(loss, ref_loss, 1e-5, 1e-5) == "");
    CHECK(compare(x.grad(), ref_grad, 1e-4, 1e-6) == "");
  });
}

TEST_CASE("greedy CTC decoding merges repeats and drops blanks", "[ctc][decode]") {
  // Best path per time step for two samples ('-' = blank 0, A = 1, B = 2):
  //   sample 0: - A A - - A - B B   -> A A B
  //   sample 1: B B B - A - - - -   -> B A (its length is 5, so the tail is ignored anyway)
  const std::vector<std::vector<int64_t>> best = {{0, 1, 1, 0, 0, 1, 0, 2, 2}, {2, 2, 2, 0, 1, 2, 2, 2, 2}};
  const int64_t T = 9, N = 2, C = 3;
  std::vector<double> values(T * N * C, -5.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t) values[(t * N + n) * C + best[n][t]] = -0.1;
  const Tensor log_probs = from_vector(values, {T, N, C});
  const Tensor lengths = int64_tensor({9, 5}, {N});

  const auto classes = ctc_greedy_decode(log_probs, lengths);
  REQUIRE(classes.size() == 2);
  CHECK(classes[0] == std::vector<int64_t>{1, 1, 2});
  CHECK(classes[1] == std::vector<int64_t>{2, 1});
  CHECK(ctc_greedy_decode(log_probs)[1] == std::vector<int64_t>{2, 1, 2});  // full length: the B tail counts
  CHECK(ctc_greedy_decode_text(log_probs, "XY", lengths) == std::vector<std::string>{"XXY", "YX"});
  CHECK_THROWS_WITH(ctc_classes_to_text({3}, "XY"), Catch::Contains("class 3"));

  CHECK(sequence_accuracy({"AB12", "CD34", "EF"}, {"AB12", "CD35", "EF"}) == Approx(2.0 / 3));
  // Positions: AB12/AB12 4 of 4, CD34/CD35 3 of 4, E/EF 1 of 2  -> 8 of 10.
  CHECK(character_accuracy({"AB12", "CD34", "E"}, {"AB12", "CD35", "EF"}) == Approx(0.8));
  CHECK_THROWS(sequence_accuracy({"A"}, {}));
}

// A host copy of t with +-inf and NaN replaced by distinct finite sentinels, so compare() can match them.
Tensor with_sentinels(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  for (double& e : v) {
    if (std::isnan(e)) e = 7.77e30;
    else if (std::isinf(e)) e = e > 0 ? 1e30 : -1e30;
  }
  return from_vector(v, t.shape(), DType::float64);
}

// The relative tolerance of a float32 CTC gradient computed in float32 log space ("alpha_beta") against
// the naive kernel, which accumulates in double (its own error is negligible here). Error analysis:
// alpha_t(s) and beta_t(s) are running sums of T_n log-probabilities, so their magnitude grows to about
// |log p| (hundreds for T = 250). Every step rounds the running value to float32, an absolute error of
// u |log p| (u = 2^-24 ~ 6e-8: 3e-5 at |log p| = 500, also the error of the saved alpha table itself),
// and the T steps add up, roughly like a random walk, to sqrt(T) u |log p|. The gradient is
// exp(alpha + beta - lp - log p): an absolute error d in that exponent is a relative error d in the
// gradient, whatever its size. Three recursion-carried terms, and a factor for the tails:
//   rtol = max(1e-4, 4 sqrt(T) u |log p|max)
// Short sequences keep 1e-4 (captcha-like: T = 12, |log p| up to ~70 gives 6e-5); the long case below
// (T = 250, |log p| up to ~700) gets about 2.5e-3, where sqrt(T) u |log p| alone is 6e-4 and the H200
// saw relative errors up to ~5e-4 under the flat 1e-4. |log p|max is the largest finite reference loss
// (nll_ref as with_sentinels gives it: +inf is 1e30).
double float32_ctc_grad_rtol(int64_t T, const Tensor& nll_ref) {
  double log_p_max = 0;
  for (double v : nll_ref.to_vector<double>())
    if (v < 1e29) log_p_max = std::max(log_p_max, std::fabs(v));
  const double u = std::ldexp(1.0, -24);
  return std::max(1e-4, 4 * std::sqrt(static_cast<double>(T)) * u * log_p_max);
}

TEST_CASE("cuda: ctc_loss kernels against the CPU naive reference", "[cuda][ctc]") {
  if (!minidl::testing::have_gpu()) return;
  manual_seed(23);
  const Device gpu = Device::cuda(0);
  struct Case {
    const char* what;
    int64_t T, N, C, S;
    bool zero_infinity;
  };
  // Random targets and lengths per case (some too long for their input: impossible); sample 0 has an
  // empty target and sample 1 no input steps. The long case has 2S+1 = 201 > 128 positions, so threads
  // take several positions each.
  const std::vector<Case> cases = {{"captcha-like", 12, 128, 37, 4, false},
                                   {"mixed lengths with impossible samples", 6, 9, 5, 5, false},
                                   {"the same with zero_infinity", 6, 9, 5, 5, true},
                                   {"long labels", 250, 3, 8, 100, false}};
  for (const Case& c : cases) {
    for (DType dtype : {DType::float32, DType::float64}) {
      INFO(c.what << ", " << dtype_name(dtype));
      const std::vector<double> u = rand({c.N, c.S + 2}).to_vector<double>();
      std::vector<double> labels(c.N * c.S), t_len(c.N), i_len(c.N);
      for (int64_t n = 0; n < c.N; ++n) {
        t_len[n] = n == 0 ? 0 : std::floor(u[n * (c.S + 2)] * (c.S + 1));
        i_len[n] = n == 1 ? 0 : c.T - std::floor(u[n * (c.S + 2) + 1] * c.T / 3);
        for (int64_t s = 0; s < c.S; ++s)
          labels[n * c.S + s] = s < t_len[n] ? 1 + std::floor(u[n * (c.S + 2) + 2 + s] * (c.C - 1)) : 0;
      }
      const Tensor targets = int64_tensor(labels, {c.N, c.S});
      const Tensor il = int64_tensor(i_len, {c.N}), tl = int64_tensor(t_len, {c.N});
      const Tensor lp = log_softmax_by_ops(uniform({c.T, c.N, c.C}, -3, 3)).to(dtype);
      const Tensor grad_nll = uniform({c.N}, 0.5, 1.5).to(dtype);
      // The kernels themselves, per sample: nll [N], the alpha table, and the gradient.
      std::vector<Tensor> got[2];
      for (int k = 0; k < 2; ++k) {
        const Device d = k == 0 ? Device::cpu() : gpu;
        SelectionReset reset;
        select_kernel("ctc_loss", DeviceType::cpu, "naive");
        const Tensor x = lp.to(d), tg = targets.to(d), i = il.to(d), t = tl.to(d);
        Tensor nll = empty({c.N}, x.options()), alpha = empty({c.N, c.T, 2 * c.S + 1}, x.options());
        Tensor grad = empty(x.shape(), x.options());
        dispatch<CtcLossKernel>("ctc_loss", d, x, tg, i, t, int64_t(0), c.zero_infinity, nll, alpha);
        dispatch<CtcLossBackwardKernel>("ctc_loss.backward", d, x, tg, i, t, alpha, grad_nll.to(d), int64_t(0),
                                        c.zero_infinity, grad);
        got[k] = {with_sentinels(nll), with_sentinels(alpha), with_sentinels(grad)};
      }
      CHECK(last_kernel("ctc_loss", DeviceType::cpu) == "naive");
      CHECK(last_kernel("ctc_loss", DeviceType::cuda) == "alpha_beta");
      CHECK(last_kernel("ctc_loss.backward", DeviceType::cuda) == "alpha_beta");
      const double tol = dtype == DType::float64 ? 1e-10 : 1e-4;
      const double grad_rtol = dtype == DType::float64 ? tol : float32_ctc_grad_rtol(c.T, got[0][0]);
      CHECK(compare(got[1][0], got[0][0], tol, tol) == "");
      CHECK(compare(got[1][1], got[0][1], tol, tol) == "");
      CHECK(compare(got[1][2], got[0][2], grad_rtol, tol * 1e-2) == "");
    }
  }
}

// True when there is a GPU and the build registered cuDNN's CTC; otherwise says why the test is skipped.
bool cudnn_ctc_testable() {
  if (!minidl::testing::have_gpu()) return false;
  const std::vector<std::string> names = kernels_for("ctc_loss", DeviceType::cuda);
  if (std::find(names.begin(), names.end(), "cudnn") == names.end()) {
    minidl::testing::skip_test("cudnn ctc_loss: this build has no cuDNN");
    return false;
  }
  return true;
}

TEST_CASE("cuda: the cudnn ctc_loss kernels against the CPU naive reference", "[cuda][ctc]") {
  if (!cudnn_ctc_testable()) return;
  manual_seed(29);
  const Device gpu = Device::cuda(0);
  struct Case {
    const char* what;
    int64_t T, N, C, S;
    bool degenerate;  // sample 0 an empty target, sample 1 no input steps, some targets impossible
    bool zero_infinity;
  };
  // The first two are what cuDNN itself computes (every target possible: L + repeats <= T_n, which
  // T - T/3 >= 2S - 1 guarantees). The degenerate ones go through the kernel's own stand-ins.
  const std::vector<Case> cases = {{"captcha-like", 12, 128, 37, 4, false, false},
                                   {"mixed lengths", 24, 16, 7, 8, false, false},
                                   {"empty, impossible and T_n = 0 samples", 6, 9, 5, 5, true, false},
                                   {"the same with zero_infinity", 6, 9, 5, 5, true, true}};
  for (const Case& c : cases) {
    INFO(c.what);
    const std::vector<double> u = rand({c.N, c.S + 2}).to_vector<double>();
    std::vector<double> labels(c.N * c.S), t_len(c.N), i_len(c.N);
    for (int64_t n = 0; n < c.N; ++n) {
      const double* un = &u[n * (c.S + 2)];
      t_len[n] = c.degenerate ? (n == 0 ? 0 : std::floor(un[0] * (c.S + 1))) : 1 + std::floor(un[0] * c.S);
      i_len[n] = c.degenerate && n == 1 ? 0 : c.T - std::floor(un[1] * c.T / 3);
      for (int64_t s = 0; s < c.S; ++s)
        labels[n * c.S + s] = s < t_len[n] ? 1 + std::floor(un[2 + s] * (c.C - 1)) : 0;
    }
    const Tensor targets = int64_tensor(labels, {c.N, c.S});
    const Tensor il = int64_tensor(i_len, {c.N}), tl = int64_tensor(t_len, {c.N});
    // Normalized rows, as the cudnn kernel requires: a log_softmax of random logits.
    const Tensor lp = log_softmax_by_ops(uniform({c.T, c.N, c.C}, -3, 3)).to(DType::float32);
    const Tensor grad_nll = uniform({c.N}, 0.5, 1.5).to(DType::float32);
    std::vector<Tensor> got[2];  // nll, alpha, grad: [0] naive on the CPU, [1] cudnn on the GPU
    for (int k = 0; k < 2; ++k) {
      const Device d = k == 0 ? Device::cpu() : gpu;
      SelectionReset reset;
      select_kernel("ctc_loss", DeviceType::cpu, "naive");
      select_kernel("ctc_loss", DeviceType::cuda, "cudnn");
      const Tensor x = lp.to(d), tg = targets.to(d), i = il.to(d), t = tl.to(d);
      Tensor nll = empty({c.N}, x.options()), alpha = empty({c.N, c.T, 2 * c.S + 1}, x.options());
      Tensor grad = empty(x.shape(), x.options());
      dispatch<CtcLossKernel>("ctc_loss", d, x, tg, i, t, int64_t(0), c.zero_infinity, nll, alpha);
      dispatch<CtcLossBackwardKernel>("ctc_loss.backward", d, x, tg, i, t, alpha, grad_nll.to(d), int64_t(0),
                                      c.zero_infinity, grad);
      got[k] = {with_sentinels(nll), alpha.to(Device::cpu()), with_sentinels(grad)};
    }
    CHECK(last_kernel("ctc_loss", DeviceType::cuda) == "cudnn");
    CHECK(last_kernel("ctc_loss.backward", DeviceType::cuda) == "cudnn");
    // cuDNN computes in float32; the loss matches like alpha_beta's. The gradient is cuDNN's p - gamma
    // minus p = exp(lp), a difference of numbers up to 1: its error is absolute, a few float32 roundings
    // of 1, hence atol 1e-5 rather than alpha_beta's 1e-6.
    CHECK(compare(got[1][0], got[0][0], 1e-4, 1e-4) == "");
    CHECK(compare(got[1][2], got[0][2], 1e-4, 1e-5) == "");
    // The documented non-table: NaN everywhere.
    bool all_nan = true;
    for (double v : got[1][1].to_vector<double>()) all_nan = all_nan && std::isnan(v);
    CHECK(all_nan);
  }
}

TEST_CASE("cuda: ctc_loss through the cudnn kernels equals the CPU op (mean loss and gradient)", "[cuda][ctc]") {
  if (!cudnn_ctc_testable()) return;
  manual_seed(31);
  const Device gpu = Device::cuda(0);
  const int64_t T = 12, N = 128, C = 37, S = 4;
  const std::vector<double> u = rand({N, S + 1}).to_vector<double>();
  std::vector<double> labels(N * S), t_len(N, S), i_len(N, T);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) labels[n * S + s] = 1 + std::floor(u[n * (S + 1) + s] * (C - 1));
  const Tensor targets = int64_tensor(labels, {N, S}), il = int64_tensor(i_len, {N}), tl = int64_tensor(t_len, {N});
  const Tensor logits = uniform({T, N, C}, -3, 3, DType::float32);
  Tensor ref_grad, ref_loss;
  {
    Tensor x = logits.detach().clone().requires_grad_();
    ref_loss = ctc_loss(log_softmax_by_ops(x), targets, il, tl);
    ref_loss.backward();
    ref_grad = x.grad();
  }
  SelectionReset reset;
  select_kernel("ctc_loss", DeviceType::cuda, "cudnn");
  Tensor x = logits.to(gpu).detach().requires_grad_();
  Tensor loss = ctc_loss(log_softmax_by_ops(x), targets.to(gpu), il.to(gpu), tl.to(gpu));
  loss.backward();
  CHECK(last_kernel("ctc_loss", DeviceType::cuda) == "cudnn");
  CHECK(last_kernel("ctc_loss.backward", DeviceType::cuda) == "cudnn");
  CHECK(compare(loss, ref_loss, 1e-5, 1e-5) == "");
  CHECK(compare(x.grad(), ref_grad, 1e-4, 1e-6) == "");
}

TEST_CASE("cuda: the cudnn ctc_loss kernels decline float64, blank != 0 and S > 255", "[cuda][ctc]") {
  if (!cudnn_ctc_testable()) return;
  manual_seed(37);
  const Device gpu = Device::cuda(0);
  SelectionReset reset;
  select_kernel("ctc_loss", DeviceType::cuda, "cudnn");
  struct Decline {
    const char* what;
    DType dtype;
    int64_t blank, S;
  };
  for (const Decline& dc : {Decline{"float64", DType::float64, 0, 4}, Decline{"blank 2", DType::float32, 2, 4},
                            Decline{"S = 300", DType::float32, 0, 300}}) {
    INFO(dc.what);
    const int64_t T = 8, N = 2, C = 5;
    std::vector<double> labels(N * dc.S, 1.0);
    labels[1] = 3;  // sample 0: (1, 3), sample 1: (1, 1); never the blank 2
    const Tensor targets = int64_tensor(labels, {N, dc.S}).to(gpu);
    const Tensor il = int64_tensor({8, 7}, {N}).to(gpu), tl = int64_tensor({2, 2}, {N}).to(gpu);
    Tensor x = log_softmax_by_ops(uniform({T, N, C}, -2, 2)).to(dc.dtype).to(gpu).requires_grad_();
    Tensor loss = ctc_loss(x, targets, il, tl, dc.blank);
    loss.backward();
    CHECK(std::isfinite(loss.item<double>()));
    for (const char* key : {"ctc_loss", "ctc_loss.backward"}) {
      INFO(key);
      CHECK(last_kernel(key, DeviceType::cuda) == "alpha_beta");
      const std::vector<std::string> declined = last_declined_kernels(key, DeviceType::cuda);
      CHECK(std::find(declined.begin(), declined.end(), "cudnn") != declined.end());
    }
  }
}

TEST_CASE("greedy CTC confidence: the text's probability (all alignments), the best path's, the weakest character",
          "[ctc][decode]") {
  // Classes: 0 blank, 1 'X', 2 'Y'. The best path is X X - Y -: "XY".
  const std::vector<std::vector<double>> p = {
      {0.1, 0.8, 0.1}, {0.3, 0.6, 0.1}, {0.6, 0.1, 0.3}, {0.2, 0.1, 0.7}, {0.5, 0.1, 0.4}};
  std::vector<double> logs;
  for (const auto& row : p)
    for (double v : row) logs.push_back(std::log(v));
  const Tensor log_probs = from_vector(logs, {5, 1, 3}, TensorOptions(DType::float64));
  const CtcConfidence c = ctc_greedy_confidence(log_probs);
  CHECK(c.classes == std::vector<int64_t>{1, 2});
  CHECK(c.best_path_probability == Approx(0.8 * 0.6 * 0.6 * 0.7 * 0.5).epsilon(1e-9));
  // p("XY"): every one of the 3^5 paths that collapses to X Y, summed by brute force.
  double brute = 0;
  for (int code = 0; code < 243; ++code) {
    double prob = 1;
    std::vector<int64_t> collapsed;
    int64_t previous = -1;
    for (int t = 0, rest = code; t < 5; ++t, rest /= 3) {
      const int k = rest % 3;
      prob *= p[t][k];
      if (k != 0 && k != previous) collapsed.push_back(k);
      previous = k;
    }
    if (collapsed == std::vector<int64_t>{1, 2}) brute += prob;
  }
  CHECK(c.text_probability == Approx(brute).epsilon(1e-9));
  CHECK(c.text_probability > c.best_path_probability);
  // Each character's best time step in its run: X 0.8 (not 0.6), Y 0.7; Y is the weakest.
  REQUIRE(c.character_probability.size() == 2);
  CHECK(c.character_probability[0] == Approx(0.8));
  CHECK(c.character_probability[1] == Approx(0.7));
  CHECK(c.weakest() == 1);
  // All blanks: an empty reading, the probability of the empty text, no weakest character.
  const Tensor blanks = from_vector({std::log(0.9), std::log(0.05), std::log(0.05), std::log(0.8), std::log(0.1),
                                     std::log(0.1)},
                                    {2, 1, 3}, TensorOptions(DType::float64));
  const CtcConfidence empty = ctc_greedy_confidence(blanks);
  CHECK(empty.classes.empty());
  CHECK(empty.weakest() == -1);
  CHECK(empty.text_probability == Approx(0.9 * 0.8).epsilon(1e-9));
  CHECK_THROWS_WITH(ctc_greedy_confidence(from_vector(logs, {5, 3}, TensorOptions(DType::float64))),
                    Catch::Contains("expected log_probs [T, 1, C]"));
}
