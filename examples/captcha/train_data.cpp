// examples/captcha/train_data.cpp — `captcha train`'s data (examples/captcha/train.h): the batches of
// every epoch, what is validated after it, and the fingerprints --resume compares (examples/run_state.h).
//
// Training data: without --data, captchas rendered on the fly (examples/data/captcha_data.h GeneratedCaptchaDataset:
// the prefetch thread of the DataLoader renders each batch on --threads threads while the model trains on
// the previous one); an epoch is --epoch-size fresh captchas (captcha i of seed S, never repeated). With
// --data DIR, the labelled images of DIR (examples/data/captcha_data.h), shuffled each epoch and augmented on the fly
// (nn/augment.h: small affine warps, scale, translation, blur, contrast, colour, inversion, noise; sample i
// of epoch e gets the variant (seed, e, i), so runs and --resume stay exact): --augment LIST chooses the
// transforms, --augment-strength scales them, --no-augment turns them off. Validation images never are.
// Validation after every epoch: --val-data DIR, with --data or with generated training data (how well a
// model trained on generated captchas reads a site's real ones); else, for generated training data,
// --val-count captchas of seed S + 1 (fixed for the run, disjoint from training); else every k-th image
// of --data, held out.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "examples/captcha/common.h"
#include "examples/captcha/train.h"
#include "examples/data/captcha_data.h"
#include "nn/augment.h"
#include "nn/data.h"

using namespace minidl;

namespace captcha {

namespace {

// The padded-target batch of a folder: images and their classes padded with 0 to the longest label.
std::shared_ptr<TensorDataset> folder_dataset(const CaptchaDataset& folder, const std::string& charset) {
  return std::make_shared<TensorDataset>(folder.images, encode_ctc_targets(folder.labels, charset).targets);
}

// The fingerprint of a folder's tensors, for --resume (examples/run_state.h).
examples::DataFingerprint fingerprint_of(const char* key, const char* flags, const TensorDataset& set) {
  return {key, flags, examples::data_fingerprint(set.inputs(), set.targets())};
}

// --val-data DIR: its labelled images, resized to the model's input, their labels written with the
// training charset (a character outside it is an error naming the file).
std::shared_ptr<TensorDataset> validation_folder(const TrainArgs& a, const std::string& charset, int threads) {
  CaptchaFolderOptions fo;
  fo.width = a.width;
  fo.height = a.height;
  fo.threads = threads;
  fo.charset = charset;
  CaptchaDataset val;
  try {
    val = load_captcha_folder(a.val_data, fo);
  } catch (const Error& e) {  // the folder reader's message, with the flag that named the folder
    throw Error(str_cat("--val-data: ", e.what()));
  }
  print_folder_warnings(val);
  return folder_dataset(val, charset);
}

}  // namespace

TrainingData generated_data(const TrainArgs& a, int threads, Shard shard, bool pin_memory) {
  CaptchaOptions options;
  options.charset = a.charset;
  std::tie(options.min_length, options.max_length) = parse_length_range(a.length);
  options.width = a.width;
  options.height = a.height;
  check_captcha_options(options);
  MINIDL_CHECK(a.epoch_size >= a.batch, "--epoch-size (", a.epoch_size, ") must hold at least one batch of ",
               a.batch);
  TrainingData d;
  d.charset = options.charset;
  d.length = a.length;
  d.max_length = options.max_length;
  d.batches_per_epoch = a.epoch_size / a.batch;
  d.description = str_cat("generated captchas (seed ", a.seed, "; an epoch is ", d.batches_per_epoch * a.batch,
                          " new ones)");
  const int64_t per_epoch = d.batches_per_epoch * a.batch;
  const uint64_t seed = a.seed;
  const int64_t batch = a.batch;
  d.loader = [options, seed, per_epoch, batch, threads, shard, pin_memory](int64_t epoch) {
    auto data = std::make_shared<GeneratedCaptchaDataset>(options, seed, per_epoch, threads,
                                                          static_cast<uint64_t>(epoch * per_epoch));
    DataLoaderOptions lo;
    lo.batch_size = batch;
    lo.drop_last = true;
    lo.shard_index = shard.index;
    lo.shard_count = shard.count;
    lo.pin_memory = pin_memory;
    return DataLoader(data, lo);
  };
  // Validation: captchas of seed + 1, or the real images of --val-data (how well a model trained on
  // generated captchas reads a site's own).
  if (a.val_data.empty()) {
    d.validation = std::make_shared<GeneratedCaptchaDataset>(options, a.seed + 1, a.val_count, threads);
    d.fingerprints.push_back({"data.val", "--val-count", str_cat("generated: seed ", a.seed + 1, ", ", a.val_count,
                                                                 " captchas")});
  } else {
    const auto val = validation_folder(a, d.charset, threads);
    d.validation = val;
    d.description += str_cat("; validation on ", val->size(), " images of ", a.val_data);
    d.fingerprints.push_back(fingerprint_of("data.val", "--val-data", *val));
  }
  return d;
}

TrainingData folder_data(const TrainArgs& a, int threads, Shard shard, bool pin_memory) {
  CaptchaFolderOptions fo;
  fo.width = a.width;
  fo.height = a.height;
  fo.threads = threads;
  if (*a.charset_flag) fo.charset = a.charset;
  if (*a.length_flag) {
    const auto [lo, hi] = parse_length_range(a.length);
    if (lo == hi) fo.length = lo;
  }
  const CaptchaDataset folder = load_captcha_folder(a.data, fo);
  print_folder_warnings(folder);
  TrainingData d;
  d.charset = folder.charset;
  size_t shortest = folder.labels[0].size(), longest = 0;
  for (const std::string& l : folder.labels) {
    shortest = std::min(shortest, l.size());
    longest = std::max(longest, l.size());
  }
  d.max_length = static_cast<int>(longest);
  d.length = shortest == longest ? std::to_string(longest) : str_cat(shortest, "-", longest);
  auto all = folder_dataset(folder, d.charset);
  const int64_t N = all->size();

  std::shared_ptr<TensorDataset> train = all;
  if (!a.val_data.empty()) {
    const auto val = validation_folder(a, d.charset, threads);  // labels in the training charset
    d.validation = val;
    d.fingerprints.push_back(fingerprint_of("data.val", "--val-data", *val));
  } else {
    // Every k-th image is held out (at most a tenth of the folder): spread over the sorted file names.
    const int64_t held = std::max<int64_t>(1, std::min<int64_t>(a.val_count, N / 10));
    MINIDL_CHECK(N >= 2, "--data has ", N, " image(s): too few to hold some out for validation (or give --val-data)");
    const int64_t k = N / held;
    std::vector<int64_t> train_idx, val_idx;
    for (int64_t i = 0; i < N; ++i) {
      const bool hold_out = i % k == k - 1 && static_cast<int64_t>(val_idx.size()) < held;
      (hold_out ? val_idx : train_idx).push_back(i);
    }
    const Batch v = all->get_batch(val_idx), t = all->get_batch(train_idx);
    const auto val = std::make_shared<TensorDataset>(v.inputs, v.targets);
    d.validation = val;
    d.fingerprints.push_back(fingerprint_of("data.val", "--data", *val));
    train = std::make_shared<TensorDataset>(t.inputs, t.targets);
  }
  d.fingerprints.insert(d.fingerprints.begin(), fingerprint_of("data.train", "--data", *train));
  const bool drop_last = train->size() > a.batch;
  d.batches_per_epoch = drop_last ? train->size() / a.batch : 1;
  d.description = str_cat(train->size(), " images of ", a.data, " (", d.validation->size(), " for validation",
                          a.val_data.empty() ? ", held out" : str_cat(" from ", a.val_data), ")");
  const uint64_t seed = a.seed;
  const int64_t batch = a.batch;
  AugmentOptions augment = AugmentOptions::parse(a.no_augment ? "none" : a.augment);
  augment.strength = a.augment_strength;
  if (augment.strength == 0) augment = AugmentOptions::parse("none");
  d.augment = augment.describe();
  if (augment.any() && augment.strength != 1) d.augment += str_cat(" at strength ", a.augment_strength);
  // Each epoch reads the folder through an AugmentedDataset of that epoch (nn/augment.h).
  d.loader = [train, seed, batch, drop_last, shard, augment, threads, pin_memory](int64_t epoch) {
    DataLoaderOptions lo;
    lo.batch_size = batch;
    lo.shuffle = true;
    lo.seed = seed;
    lo.drop_last = drop_last;
    lo.shard_index = shard.index;
    lo.shard_count = shard.count;
    lo.pin_memory = pin_memory;
    if (!augment.any()) return DataLoader(train, lo);
    return DataLoader(std::make_shared<AugmentedDataset>(train, augment, seed, epoch, threads), lo);
  };
  return d;
}

}  // namespace captcha
