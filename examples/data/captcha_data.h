// examples/data/captcha_data.h — a folder of labelled captcha images as tensors, captchas rendered on demand as a
// Dataset, and labels as CTC targets.
//
// Folder layout (what `captcha gen` writes, and what most captcha datasets look like):
//   DIR/A3F9_17.png, DIR/K2M8.jpg, ...   the label is the file name up to the first '_' or the extension
//   DIR/labels.csv (optional)            lines "file,label" (an optional "file,label" header line); when
//                                        present it lists the images and their labels, and names in the
//                                        folder are not parsed
// Images are PNG, JPEG or BMP of any size, converted to RGB and resized (bilinear) to the model input.
// Files with other extensions, folders and other non-files are skipped (and, with labels.csv, images it
// does not list): listed in CaptchaDataset::skipped and summed up in its warnings, each for what it is
// ("ABCD_994.png is a directory", "... is a broken symbolic link (to 'x.png')", "... is a FIFO (named
// pipe)", "2 files without an image extension (...): notes.txt, x.csv"). Dot-files are ignored.
// When the charset (or the length) is not given, it is inferred from the labels, so a mislabelled file
// widens it silently; the warnings then say so, with the rarest characters (and the label lengths) and
// the files they come from, for the caller to show.
//
// Tensor layout and classes: images [N, 3, H, W] float32 with value = pixel / 255 in [0, 1]; class 0 is
// the CTC blank and class k >= 1 is charset[k - 1] (the convention of nn/ctc_decode.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "examples/data/captcha_gen.h"
#include "nn/data.h"
#include "nn/image.h"

namespace minidl {

struct CaptchaFolderOptions {
  int width = 192, height = 64;  // model input size
  std::string charset;           // empty: inferred from the labels (their sorted distinct characters)
  int length = 0;                // > 0: every label must have exactly this many characters
  int threads = 0;               // image decoding threads; 0: one per hardware thread
};

struct CaptchaDataset {
  Tensor images;                     // [N, 3, H, W] float32 in [0, 1]
  std::vector<std::string> labels;   // N labels
  std::vector<std::string> files;    // N paths, in the order of the images
  std::string charset;               // the given or inferred charset
  std::vector<std::string> skipped;  // entries of the folder that were not read (see above), sorted
  std::vector<std::string> warnings;  // one line each, for the caller to show: skipped files, inferred charset/length
};

// Reads every image of `folder` (sorted by name) or those listed in its labels.csv (in file order).
// Throws minidl::Error naming the file for: a missing or undecodable image, an empty label, a label
// character outside the given charset (or not printable ASCII), a label of the wrong length; for a
// missing or image-less folder; and for a given charset with a repeated or unprintable character.
CaptchaDataset load_captcha_folder(const std::string& folder, const CaptchaFolderOptions& options = {});

// "A3F9_17.png" -> "A3F9", "K2M8.jpg" -> "K2M8" (path components are dropped first).
std::string label_from_file_name(const std::string& file_name);
// The sorted distinct characters of the labels.
std::string infer_charset(const std::vector<std::string>& labels);

// Labels as CTC targets: targets [N, S] int64 (class of each character, padded with 0 after the label's
// end), lengths [N] int64, on the CPU; S = the longest label (at least 1). Throws naming a character not
// in charset.
struct CtcTargets {
  Tensor targets;
  Tensor lengths;
};
CtcTargets encode_ctc_targets(const std::vector<std::string>& labels, const std::string& charset);

// An image (any size, 1 or 3 channels) resized to width x height and written to out as [3, H, W] floats,
// pixel / 255 (gray is replicated to the three channels). Used for folders and for generated captchas.
void image_to_chw(const Image& img, int width, int height, float* out);
// Images as one [N, 3, H, W] float32 tensor (each resized to width x height).
Tensor images_to_tensor(const std::vector<Image>& images, int width, int height);

// ---- captchas rendered on demand, for training without files
// Sample i is captcha (seed, first_index + i) of examples/data/captcha_gen.h: its image as [3, H, W] floats (pixel /
// 255, as image_to_chw) and its classes padded with 0 to options.max_length. A batch is
// Batch{inputs [B, 3, H, W] float32, targets [B, max_length] int64}; the padding is the blank (class 0,
// never a label), so ctc_target_lengths() recovers the lengths. get_batch renders on `threads` threads
// (0: one per hardware thread); every sample is a pure function of (seed, index), so batches do not
// depend on the thread count. Rendering runs at about 4,000 captchas/s per core (docs/results/captcha.md).
class GeneratedCaptchaDataset : public Dataset {
 public:
  GeneratedCaptchaDataset(CaptchaOptions options, uint64_t seed, int64_t count, int threads = 0,
                          uint64_t first_index = 0);
  int64_t size() const override { return count_; }
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  // The text of sample i.
  std::string text(int64_t i) const;
  const CaptchaOptions& options() const { return options_; }

 private:
  CaptchaOptions options_;
  uint64_t seed_, first_index_;
  int64_t count_;
  int threads_;
};

// Padded targets [N, S] int64 (0 after each label) -> the label lengths [N] int64 (non-zero entries per row).
Tensor ctc_target_lengths(const Tensor& padded_targets);
// Padded targets [N, S] int64 -> the N label strings (class k >= 1 is charset[k - 1]).
std::vector<std::string> ctc_targets_to_text(const Tensor& padded_targets, const std::string& charset);

}  // namespace minidl
