// nn/ctc_decode.h — turning CTC outputs back into label sequences, and scoring them.
//
// Greedy (best-path) decoding: take the most likely class at each time step, merge runs of the same
// class, then drop blanks:  "-AA--A-BB" -> "AAB" ('-' = blank). It is not the most likely *label*
// sequence (that sums over alignments: beam search), but for well-trained models the two agree almost
// always, and it is what the captcha_break recipe uses.
//
// Class numbering (shared with examples/data/captcha_data.h): class 0 is the blank, class k >= 1 is charset[k - 1].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace minidl {

// log_probs [T, N, C] (any device, float); input_lengths [N] int64 or undefined (all T). Returns, for each
// sample, its decoded classes (never the blank).
std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& log_probs, const Tensor& input_lengths = Tensor(),
                                                    int64_t blank = 0);
// Classes 1..C-1 -> characters of charset (class k is charset[k - 1]). Throws on a class outside it.
std::string ctc_classes_to_text(const std::vector<int64_t>& classes, const std::string& charset);
// Greedy decoding with blank 0 straight to strings.
std::vector<std::string> ctc_greedy_decode_text(const Tensor& log_probs, const std::string& charset,
                                                const Tensor& input_lengths = Tensor());

// How sure the model is of one sample's greedy reading.
//   text_probability: p(text | log_probs), the full CTC sum over every alignment that collapses to the
//     decoded text (the CTC forward pass, ops ctc_loss): the probability the model gives to the text itself.
//   best_path_probability: the probability of the one best path (the product over time steps of the chosen
//     classes' probabilities), at most text_probability.
//   character_probability[i]: for the i-th decoded character, the highest probability its class has at
//     a time step of the run of steps that emitted it; the smallest of these is the weakest character.
struct CtcConfidence {
  std::vector<int64_t> classes;  // the greedy reading, as ctc_greedy_decode
  double text_probability = 0, best_path_probability = 0;
  std::vector<double> character_probability;
  // The index of the least sure character, -1 for an empty reading.
  int64_t weakest() const;
};
// log_probs [T, 1, C] of one sample (any device), blank 0.
CtcConfidence ctc_greedy_confidence(const Tensor& log_probs);

// Fraction of predictions equal to their truth as whole strings (0 for empty lists).
double sequence_accuracy(const std::vector<std::string>& predicted, const std::vector<std::string>& truth);
// Character accuracy, position by position: sum_i #{j : pred_i[j] == truth_i[j]} / sum_i max(|pred_i|, |truth_i|)
// (a missing or extra character counts as one wrong position). 1 when every string is empty.
double character_accuracy(const std::vector<std::string>& predicted, const std::vector<std::string>& truth);

}  // namespace minidl
