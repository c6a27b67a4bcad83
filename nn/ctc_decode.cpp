// nn/ctc_decode.cpp — greedy CTC decoding and accuracy helpers (nn/ctc_decode.h).
#include "nn/ctc_decode.h"

#include <algorithm>
#include <cmath>

#include "ops/ops.h"

namespace minidl {

std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& log_probs, const Tensor& input_lengths,
                                                    int64_t blank) {
  MINIDL_CHECK(log_probs.defined() && log_probs.dim() == 3, "ctc_greedy_decode: expected log_probs [T, N, C], got ",
               log_probs.defined() ? shape_str(log_probs.shape()) : std::string("an undefined tensor"));
  const int64_t T = log_probs.size(0), N = log_probs.size(1);
  std::vector<int64_t> lengths(N, T);
  if (input_lengths.defined()) {
    MINIDL_CHECK(input_lengths.dim() == 1 && input_lengths.size(0) == N, "ctc_greedy_decode: input_lengths ",
                 shape_str(input_lengths.shape()), " must be [", N, "]");
    lengths = input_lengths.to_vector<int64_t>();
  }
  const std::vector<int64_t> best = argmax(log_probs.detach(), 2).to_vector<int64_t>();  // [T, N]
  std::vector<std::vector<int64_t>> out(N);
  for (int64_t n = 0; n < N; ++n) {
    MINIDL_CHECK(lengths[n] >= 0 && lengths[n] <= T, "ctc_greedy_decode: input_lengths[", n, "] = ", lengths[n],
                 " is outside [0, ", T, "]");
    int64_t previous = -1;
    for (int64_t t = 0; t < lengths[n]; ++t) {
      const int64_t k = best[t * N + n];
      if (k != previous && k != blank) out[n].push_back(k);
      previous = k;
    }
  }
  return out;
}

std::string ctc_classes_to_text(const std::vector<int64_t>& classes, const std::string& charset) {
  std::string text;
  for (int64_t k : classes) {
    MINIDL_CHECK(k >= 1 && k <= static_cast<int64_t>(charset.size()), "ctc_classes_to_text: class ", k,
                 " has no character in a charset of ", charset.size(), " (class k is charset[k-1], 0 is the blank)");
    text += charset[k - 1];
  }
  return text;
}

std::vector<std::string> ctc_greedy_decode_text(const Tensor& log_probs, const std::string& charset,
                                                const Tensor& input_lengths) {
  std::vector<std::string> out;
  for (const std::vector<int64_t>& classes : ctc_greedy_decode(log_probs, input_lengths, 0))
    out.push_back(ctc_classes_to_text(classes, charset));
  return out;
}

int64_t CtcConfidence::weakest() const {
  if (character_probability.empty()) return -1;
  return std::min_element(character_probability.begin(), character_probability.end()) -
         character_probability.begin();
}

CtcConfidence ctc_greedy_confidence(const Tensor& log_probs) {
  MINIDL_CHECK(log_probs.defined() && log_probs.dim() == 3 && log_probs.size(1) == 1,
               "ctc_greedy_confidence: expected log_probs [T, 1, C], got ",
               log_probs.defined() ? shape_str(log_probs.shape()) : std::string("an undefined tensor"));
  const Tensor lp = log_probs.detach().to(Device::cpu());
  const int64_t T = lp.size(0), C = lp.size(2);
  const std::vector<double> v = lp.to_vector<double>();  // [T, C]
  CtcConfidence out;
  double best_path_log = 0;
  int64_t previous = -1;
  for (int64_t t = 0; t < T; ++t) {
    const double* row = v.data() + t * C;
    const int64_t k = std::max_element(row, row + C) - row;
    best_path_log += row[k];
    if (k != 0 && k != previous) {  // a new character starts here
      out.classes.push_back(k);
      out.character_probability.push_back(std::exp(row[k]));
    } else if (k != 0) {  // the same character's run goes on
      out.character_probability.back() = std::max(out.character_probability.back(), std::exp(row[k]));
    }
    previous = k;
  }
  out.best_path_probability = std::exp(best_path_log);
  // ctc_loss is -log p(text) / max(length, 1) for one sample: undo the division.
  const int64_t L = static_cast<int64_t>(out.classes.size());
  std::vector<double> target(std::max<int64_t>(L, 1), 1.0);  // padding (length 0): any non-blank class
  for (int64_t i = 0; i < L; ++i) target[i] = static_cast<double>(out.classes[i]);
  const TensorOptions int64_cpu(DType::int64, Device::cpu());
  const Tensor targets = from_vector(target, {1, std::max<int64_t>(L, 1)}, int64_cpu);
  const Tensor loss = ctc_loss(lp, targets, full({1}, static_cast<double>(T), int64_cpu),
                               full({1}, static_cast<double>(L), int64_cpu));
  out.text_probability = std::exp(-loss.item<double>() * static_cast<double>(std::max<int64_t>(L, 1)));
  return out;
}

double sequence_accuracy(const std::vector<std::string>& predicted, const std::vector<std::string>& truth) {
  MINIDL_CHECK(predicted.size() == truth.size(), "sequence_accuracy: ", predicted.size(), " predictions for ",
               truth.size(), " labels");
  if (truth.empty()) return 0.0;
  size_t correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) correct += predicted[i] == truth[i];
  return static_cast<double>(correct) / static_cast<double>(truth.size());
}

double character_accuracy(const std::vector<std::string>& predicted, const std::vector<std::string>& truth) {
  MINIDL_CHECK(predicted.size() == truth.size(), "character_accuracy: ", predicted.size(), " predictions for ",
               truth.size(), " labels");
  size_t correct = 0, positions = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    const std::string& p = predicted[i];
    const std::string& t = truth[i];
    positions += std::max(p.size(), t.size());
    for (size_t j = 0; j < std::min(p.size(), t.size()); ++j) correct += p[j] == t[j];
  }
  return positions == 0 ? 1.0 : static_cast<double>(correct) / static_cast<double>(positions);
}

}  // namespace minidl
