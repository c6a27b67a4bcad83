// core/kernel_auto.h — the table behind the `auto` kernel selection: which kernel won the timing of each
// (key, device, call shape), and its file (MINIDL_AUTO_FILE).
//
// Under `auto` (--kernel conv2d=auto, MINIDL_KERNELS='*=auto', select_kernel(op, device, "auto")), the
// dispatcher times every kernel that accepts the first call of a shape and keeps the fastest
// (core/dispatch.h, auto_kernel). Which kernel is fastest depends on the shape: a GEMM through im2col
// wins on a large convolution and loses to a direct loop on a small one. This table holds the winners,
// by name, so a kernel registered or removed later never leaves a dangling choice: any registration
// change of a (key, device) forgets that key's choices there, and a name the list no longer has is timed
// again.
//
// The file, one choice per line, "key device shape kernel" (the shape has no spaces, core/call_shape.h):
//
//     # minidl auto choices: key device shape kernel
//     conv2d cpu 64x1x28x28,32x1x5x5,64x32x24x24,s1p0 im2col_blas
//
// is read at the first `auto` call (a malformed line is an Error naming the file and the line; a missing
// file is an empty table) and written at exit, with the choices read and the choices made; it is written
// to a temporary file first and renamed, so several processes of a data-parallel job leave one whole file.
//
// What `auto` never times, so those keys keep the usual order (kernel_auto_may_time): a timing calls
// each kernel several times on the same arguments, which is only harmless for a kernel that overwrites
// its outputs from inputs it does not change.
//   - sgd_step, adam_step: update parameters and moments in place; each call is one more step;
//   - batch_norm.running_stats: updates the running statistics in place; each call is one more blend;
//   - dropout_mask: a random op (each call of the op draws new numbers; the kernel gets them as a counter);
//   - gru_sequence.backward, lstm_sequence.backward: may consume the forward's reserve (cuDNN's backward
//     overwrites it), so a second call would read something else;
//   - ctc_loss, ctc_loss.backward: a pair through log_alpha (cuDNN's forward leaves NaN there that only its
//     own backward ignores), and cuDNN's is right only on normalised rows, which nothing checks: it
//     serves only when selected by name (cuda/ctc_cudnn.cu).
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace minidl {

// Whether `auto` may time calls of `key` (the list above).
bool kernel_auto_may_time(const std::string& key);

class AutoTable {
 public:
  struct Choice {
    std::string key, device, shape;  // device: "cpu", "cuda:0"
    std::string kernel;
  };
  // The winner of (key, device, shape); "" when there is none.
  std::string find(const std::string& key, const std::string& device, const std::string& shape) const;
  // Records a winner; when one is recorded already (another thread timed the same shape), keeps it.
  // Returns the winner now in the table.
  std::string record(const std::string& key, const std::string& device, const std::string& shape,
                     const std::string& kernel);
  // Forgets the choices of `key` on every device of type `device_type` ("cpu", "cuda"): its kernels changed.
  void forget(const std::string& key, const std::string& device_type);
  void clear();
  std::vector<Choice> choices() const;

  // Adds the choices of the file at `path` (none when there is no such file). Throws an Error naming the
  // file and line for a malformed line.
  void load(const std::string& path);
  // Writes every choice to `path` (through a temporary file renamed over it). Throws an Error when it cannot.
  void save(const std::string& path) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, std::string> winners_;  // (key, device, shape)
};

// One kernel's entry in that line: its time in seconds, and a note: "" (timed), "declined" (no time),
// "not timed (reference)" (no time), "after its warm-up" (the warm-up's time; core/dispatch.h kAutoCutoff).
struct AutoResult {
  std::string kernel;
  double seconds = 0;
  std::string note;
};
// The line `auto` prints for a timed choice: "[minidl auto] conv2d cpu 64x1x28x28,... -> im2col_blas
// (im2col_blas 1.52 ms, direct 40.1 ms after its warm-up, test_decline declined, naive not timed
// (reference))". `winner` may be "" (every kernel declined).
std::string auto_choice_line(const std::string& key, const std::string& device, const std::string& shape,
                             const std::string& winner, const std::vector<AutoResult>& times);

}  // namespace minidl
