// exercises/08-sgd-momentum/check.cpp — the checker of exercise 8: the SGD kernel "student" against the naive
// one over three steps (the first step initialises the momentum buffer) for each combination of options,
// then a small regression trained with SGD (nn/optim.h) on each kernel, loss by loss, and the bench.
#include <cmath>
#include <sstream>

#include "core/random.h"
#include "exercises/08-sgd-momentum/sgd_momentum.h"
#include "exercises/common/exercise.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

std::vector<Tensor> copies(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

// Three steps of kernel "student" and of "naive" from the same state; params and buffers compared after each.
std::string check_steps(SgdParams h) {
  manual_seed(8);
  const std::vector<Tensor> start = {testing::uniform({3, 4}, -1, 1, DType::float32),
                                     testing::uniform({5}, -1, 1, DType::float32)};
  std::vector<Tensor> p_ref = copies(start), p_got = copies(start);
  // The buffers start as NaN: before the first step their contents mean nothing (first_step sets b = g'
  // without reading b), so a kernel that reads them on the first step gets NaN, whatever the options.
  std::vector<Tensor> b_ref = {full({3, 4}, NAN), full({5}, NAN)}, b_got = {full({3, 4}, NAN), full({5}, NAN)};
  for (int step = 1; step <= 3; ++step) {
    const std::vector<Tensor> g = {testing::uniform({3, 4}, -1, 1, DType::float32),
                                   testing::uniform({5}, -1, 1, DType::float32)};
    h.first_step = step == 1;
    const std::vector<Tensor> before = copies(p_got);
    exercise::call_kernel<SgdStepKernel>("sgd_step", DeviceType::cpu, "naive", p_ref, g, b_ref, h);
    exercise::call_kernel<SgdStepKernel>("sgd_step", DeviceType::cpu, kStudent, p_got, g, b_got, h);
    for (size_t k = 0; k < start.size(); ++k) {
      const std::string where =
          str_cat("after step ", step, h.momentum > 0 && h.first_step ? " (first_step: the buffer starts as g')" : "",
                  ", parameter ", k, " ", shape_str(start[k].shape()), ": ");
      std::string diff = testing::compare(p_got[k], p_ref[k], 1e-5, 1e-6);
      if (!diff.empty() && testing::compare(p_got[k], before[k], 0, 0).empty())
        return where + "the parameter did not change: is p[i] updated (p[i] -= lr * d)?";
      const std::string nan_hint =
          h.first_step ? "NaN: on the first step the buffer holds NaN (nothing yet), so a kernel that reads b then "
                         "(momentum * b + ...) gets NaN; with first_step, b = g'.\n"
                       : "";
      auto has_nan = [](const Tensor& t) {
        for (double v : t.to_vector<double>())
          if (std::isnan(v)) return true;
        return false;
      };
      if (!diff.empty()) return where + "the parameter differs\n" + diff + (has_nan(p_got[k]) ? nan_hint : "");
      if (h.momentum > 0) {
        diff = testing::compare(b_got[k], b_ref[k], 1e-5, 1e-6);
        if (!diff.empty()) return where + "the momentum buffer differs\n" + diff + (has_nan(b_got[k]) ? nan_hint : "");
      }
    }
  }
  return "";
}

SgdParams params(double momentum, double dampening, double weight_decay, bool nesterov) {
  SgdParams h;
  h.lr = 0.1;
  h.momentum = momentum;
  h.dampening = dampening;
  h.weight_decay = weight_decay;
  h.nesterov = nesterov;
  return h;
}

// Trains y = x . w_true + 0.5 with a Linear(4, 1) and SGD (momentum 0.9, Nesterov, weight decay) on kernel
// `name`; returns the loss of each step.
std::vector<double> train(const std::string& name) {
  exercise::Selected s("sgd_step", DeviceType::cpu, name);
  manual_seed(1);
  Linear model(4, 1);
  const Tensor x = testing::uniform({64, 4}, -1, 1, DType::float32);
  const Tensor w_true = from_vector({1.5, -2, 0.5, 3}, {4, 1});
  const Tensor y = add_scalar(matmul(x, w_true), 0.5);
  SgdOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  o.nesterov = true;
  o.weight_decay = 1e-3;
  SGD optimizer(model.parameters(), o);
  std::vector<double> losses;
  for (int step = 0; step < 40; ++step) {
    const Tensor diff = sub(model(x), y);
    const Tensor loss = mean(mul(diff, diff));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  if (last_kernel("sgd_step", DeviceType::cpu) != name)
    throw Error(str_cat("the update was served by \"", last_kernel("sgd_step", DeviceType::cpu), "\", not \"", name, "\""));
  return losses;
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {8, "the SGD update with momentum", "exercises/08-sgd-momentum/sgd_momentum.cpp"});
  register_student_sgd();

  c.section("the kernel \"student\" against the naive update, three steps each (lr 0.1)");
  c.check("registered for key \"sgd_step\" on the CPU",
          [] { return exercise::registered("sgd_step", DeviceType::cpu, "register_student_sgd()"); });
  c.check("plain SGD: p -= lr * g (momentum 0)", [] { return check_steps(params(0, 0, 0, false)); });
  c.check("weight decay 0.01, no momentum: g' = g + 0.01 p", [] { return check_steps(params(0, 0, 0.01, false)); });
  c.check("momentum 0.9: b = g' on the first step, then b = 0.9 b + g'", [] { return check_steps(params(0.9, 0, 0, false)); });
  c.check("momentum 0.9, dampening 0.5: b = 0.9 b + 0.5 g' (after the first step)",
          [] { return check_steps(params(0.9, 0.5, 0, false)); });
  c.check("Nesterov, momentum 0.9: d = g' + 0.9 b", [] { return check_steps(params(0.9, 0, 0, true)); });
  c.check("everything: momentum 0.8, dampening 0.1, weight decay 0.05, Nesterov",
          [] { return check_steps(params(0.8, 0.1, 0.05, true)); });

  c.section("training: a linear regression, 40 steps of SGD (momentum 0.9, Nesterov, weight decay 1e-3)");
  c.check("the losses on your kernel follow those on the naive kernel", [&] {
    const std::vector<double> ref = train("naive"), got = train(kStudent);
    for (size_t i = 0; i < ref.size(); ++i)
      if (!exercise::agrees(got[i], ref[i], 1e-4, 1e-4))
        return str_cat("step ", i + 1, ": loss ", got[i], " on your kernel, ", ref[i], " on naive");
    c.note(str_cat("loss: step 1 ", ref.front(), ", step 40 ", ref.back()));
    return std::string();
  });

  c.bench({"sgd_step"}, {kStudent, "naive", "fused_omp"}, {"sgd_step:1048576", "sgd_step:16777216"});
  return c.finish();
}
