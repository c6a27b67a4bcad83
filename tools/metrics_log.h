// tools/metrics_log.h — reading the --metrics files of `mnist train` and `captcha train` (JSON Lines, one
// object per epoch; nn/metrics.h writes them) for `minidl plot` and `minidl compare`.
//
// Keys written today (examples/mnist/train.cpp, examples/captcha/train.cpp):
//   both     epoch, step, images, seconds, seconds_since_start, train_seconds, images_per_second, lr, device,
//            batch_size
//   mnist    train_loss, train_accuracy, test_loss, test_accuracy
//   captcha  loss (training), val_loss, val_accuracy (whole captcha), val_char_accuracy, rnn, gru
//   per-step (--metrics-every N, examples/training_loop.h): epoch (a fraction), step, every_steps,
//            train_loss (mnist) or loss (captcha), lr, seconds_since_start
// The reader takes any JSON object per line: numbers are kept as numbers, strings as strings, other
// values (null for a non-finite number, booleans, arrays, objects) are left out. Blank lines are
// skipped; a line that is not a JSON object (a run killed in the middle of a write) is skipped with a
// warning naming FILE:LINE. A file with no record holding a number is an error.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace minidl {

struct MetricsRecord {
  int line = 0;  // 1-based line in the file
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;

  bool has(const std::string& key) const { return numbers.count(key) > 0; }
  // The value of `key`, or `fallback` when the record has no number under it.
  double get(const std::string& key, double fallback = 0) const;
  // The string under `key`, or "".
  std::string text(const std::string& key) const;
};

struct MetricsLog {
  std::string path;
  std::vector<MetricsRecord> records;
  std::vector<std::string> warnings;  // "FILE:LINE: ... (skipped)"

  // Every numeric key of any record, sorted: for messages that list what a file holds.
  std::vector<std::string> numeric_keys() const;
};

// Parses `text` (the contents of a file called `name`, for messages). Throws an Error when no line holds
// a record with a number.
MetricsLog parse_metrics_log(const std::string& text, const std::string& name);
// Reads and parses the file; throws an Error naming it when it cannot be read, when it is not a regular
// file (a folder, a FIFO, a device: nn/files.h), or when it is larger than kMaxPlottedLogBytes.
MetricsLog read_metrics_log(const std::string& path);
// A log gets one line of a few hundred bytes per epoch: a gigabyte is millions of epochs.
constexpr uint64_t kMaxPlottedLogBytes = uint64_t(1) << 30;

}  // namespace minidl
