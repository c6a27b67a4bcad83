// examples/captcha/common.cpp — helpers shared by the captcha subcommands (common.h).
#include "examples/captcha/common.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/autograd.h"
#include "core/backend.h"
#include "core/numerics.h"
#include "examples/data/captcha_data.h"
#include "examples/captcha/model_config.h"
#include "nn/checkpoint.h"
#include "nn/ctc_decode.h"
#include "nn/progress.h"

using namespace minidl;

namespace captcha {

std::pair<int, int> parse_length_range(const std::string& spec) {
  const size_t dash = spec.find('-');
  try {
    size_t used = 0;
    if (dash == std::string::npos) {
      const int n = std::stoi(spec, &used);
      if (used == spec.size()) return {n, n};
    } else {
      const int lo = std::stoi(spec.substr(0, dash), &used);
      if (used == dash) {
        const std::string rest = spec.substr(dash + 1);
        const int hi = std::stoi(rest, &used);
        if (used == rest.size()) return {lo, hi};
      }
    }
  } catch (const std::exception&) {
  }
  throw Error(str_cat("--length must be N or A-B (e.g. 4 or 4-6), got '", spec, "'"));
}

std::vector<int64_t> parse_channels(const std::string& spec) {
  std::vector<int64_t> out;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MINIDL_CHECK(used == item.size() && !item.empty() && v > 0,
                 "--channels must be positive numbers separated by commas (e.g. 32,64,128), got '", spec, "'");
    out.push_back(v);
  }
  MINIDL_CHECK(!out.empty(), "--channels is empty");
  return out;
}

Device choose_device(const std::string& flag) { return minidl::choose_device(flag, "captcha"); }

int thread_count(int flag) {
  return flag > 0 ? flag : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void print_folder_warnings(const CaptchaDataset& data) {
  std::fflush(stdout);
  for (const std::string& w : data.warnings) std::fprintf(stderr, "captcha: warning: %s\n", w.c_str());
}

LoadedModel load_model(const std::string& path, Device device) {
  const Checkpoint file = read_checkpoint(path);
  SavedModel saved;
  LoadedModel out;
  out.model = model_from_checkpoint(file, path, saved);
  out.charset = saved.charset;
  out.length = saved.length;
  out.metadata = with_metadata_defaults(file.metadata);
  // A model holding NaN or infinity reads nonsense: refuse it.
  for (const auto& [name, tensor] : out.model->state_dict()) {
    const NonFinite bad = first_non_finite(tensor);
    MINIDL_CHECK(!bad.found(), "'", path, "' holds ", number_str(bad.value), " in '", name, "' at ",
                 index_str(tensor.shape(), bad.index), ": it was saved by a run that diverged; train again");
  }
  out.model->to(device);
  out.model->eval();
  return out;
}

int64_t eval_batch_size(Device device) { return device.is_cuda() ? 500 : 100; }

DataLoaderOptions eval_loader_options(Device device, int64_t batch) {
  DataLoaderOptions lo;
  lo.batch_size = batch > 0 ? batch : eval_batch_size(device);
  lo.pin_memory = device.is_cuda();
  return lo;
}

EvalResult evaluate(CaptchaModel& model, DataLoader& loader, const std::string& charset, Device device,
                    const std::string& title, int64_t max_mistakes) {
  model.eval();
  NoGradGuard no_grad;
  Progress progress(title, loader.num_batches());
  std::vector<std::string> truth, read;
  double loss_sum = 0;
  int64_t step = 0;
  for (Batch& batch : loader.epoch(0)) {
    const Tensor log_probs = model(batch.inputs.to(device));
    const int64_t T = log_probs.size(0), B = log_probs.size(1);
    const Tensor input_lengths = full({B}, static_cast<double>(T), TensorOptions(DType::int64, Device::cpu()));
    const Tensor loss = ctc_loss(log_probs, batch.targets, input_lengths, ctc_target_lengths(batch.targets), 0,
                                 /*zero_infinity=*/true);
    loss_sum += loss.item<double>() * static_cast<double>(B);
    for (std::string& s : ctc_targets_to_text(batch.targets, charset)) truth.push_back(std::move(s));
    for (std::string& s : ctc_greedy_decode_text(log_probs, charset)) read.push_back(std::move(s));
    ++step;
    if (progress.due(step))
      progress.update(step, static_cast<int64_t>(read.size()), loss_sum / static_cast<double>(read.size()),
                      sequence_accuracy(read, truth));
  }
  progress.clear();
  EvalResult r;
  r.count = static_cast<int64_t>(truth.size());
  if (r.count == 0) return r;
  r.loss = loss_sum / static_cast<double>(r.count);
  r.sequence_accuracy = sequence_accuracy(read, truth);
  r.character_accuracy = character_accuracy(read, truth);
  for (size_t i = 0; i < truth.size(); ++i) {  // the counts behind character_accuracy (nn/ctc_decode.h)
    r.characters += static_cast<int64_t>(std::max(read[i].size(), truth[i].size()));
    for (size_t j = 0; j < std::min(read[i].size(), truth[i].size()); ++j)
      r.correct_characters += read[i][j] == truth[i][j];
  }
  for (size_t i = 0; i < truth.size(); ++i) {
    if (read[i] == truth[i]) {
      ++r.correct;
    } else if (static_cast<int64_t>(r.mistakes.size()) < max_mistakes) {
      r.mistakes.emplace_back(truth[i], read[i]);
    }
  }
  return r;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * fraction);
  return buf;
}

}  // namespace captcha
