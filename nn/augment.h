// nn/augment.h — on-the-fly augmentation of captcha images, for training on a folder of labelled images.
//
// A few thousand labelled captchas of one site are quickly learnt by heart: the training loss goes to
// ~0 while the validation accuracy stalls. Each time a training image is used it is changed a little, in
// ways that keep its label: the network sees a new variant every epoch. The transforms, in the order they
// are applied (the math is above each function in nn/augment.cpp):
//
//   affine     rotation (±4°) and horizontal shear (±0.15) about the centre      one bilinear resample
//   scale      zoom 0.9..1.1 and aspect 0.95..1.05 about the centre               for affine, scale and
//   translate  shift up to ±4% of the width and ±8% of the height                 translate together
//   blur       Gaussian blur, sigma 0.3..1.0 px, in a quarter of the images
//   contrast   v -> (v - mean) c + mean + b, c in 0.7..1.3, b in ±0.1
//   colour     per channel v -> v g + o, g in 0.9..1.1, o in ±0.05
//   invert     v -> 1 - v, in a fifth of the images
//   noise      Gaussian pixel noise, standard deviation uniform in 0..0.04
// then every value is clamped to [0, 1]. The ranges are the defaults (strength 1); AugmentOptions::strength
// scales every range and probability (0: every transform is the identity). Geometry moves pixels in
// from outside the image: those take the value of the nearest edge pixel (clamp to edge).
//
// Images are float [3, H, W] (CHW) with values in [0, 1], as examples/data/captcha_data.h makes them. Randomness:
// the variant of sample i in epoch e is a pure function of (seed, e, i) (Philox, core/philox.h), drawn
// independently of the global random stream, of the batch it is in, of threads and of processes. So a run
// is reproducible, a --resume'd run sees the very variants the uninterrupted run would have seen, and a
// --distributed job augments exactly as one process does.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/data.h"

namespace minidl {

// Which transforms are on, and how strong. Default: all of them, at strength 1.
struct AugmentOptions {
  bool affine = true, scale = true, translate = true, blur = true, contrast = true, colour = true, invert = true,
       noise = true;
  double strength = 1.0;  // scales every range and probability; 0 = identity, >= 0

  // "all", "none", or a comma-separated list of transform names (affine,scale,translate,blur,contrast,
  // colour,invert,noise). Throws an Error naming the choices for anything else.
  static AugmentOptions parse(const std::string& list);
  // The enabled transforms as a list parse() reads back ("none" when none is on).
  std::string describe() const;
  bool any() const;
};

// The random choices for one image: what the transforms will do. Identity by default.
struct AugmentParams {
  double angle = 0;                 // radians, counter-clockwise
  double shear = 0;                 // x += shear * (y - centre)
  double scale_x = 1, scale_y = 1;  // about the centre
  double shift_x = 0, shift_y = 0;  // pixels
  double blur_sigma = 0;            // pixels; 0 = no blur
  double contrast = 1, brightness = 0;
  double gain[3] = {1, 1, 1}, offset[3] = {0, 0, 0};
  bool invert = false;
  double noise_std = 0;
  uint64_t noise_key = 0;           // Philox key of the noise values
};

// The choices for sample `sample` of epoch `epoch` of a run with `seed`.
AugmentParams sample_augment_params(const AugmentOptions& options, uint64_t seed, uint64_t epoch, uint64_t sample);

// ---- the transforms, one function each, on one image `pixels` [C, H, W] (values in [0, 1]).
// A 2x3 affine map (x', y') = (a x + b y + c, d x + e y + f) in pixel-centre coordinates.
struct Affine {
  double a = 1, b = 0, c = 0, d = 0, e = 1, f = 0;
};
// The map from output to input coordinates for the geometric part of `p` on a W x H image: the inverse of
// translate o scale o shear o rotate, all about the image centre.
Affine inverse_geometry(const AugmentParams& p, int width, int height);
// out(x, y) = in(m(x, y)) for every channel, bilinear, clamped to the edge. `in` and `out` must differ.
void warp_affine(const float* in, float* out, int channels, int height, int width, const Affine& m);
// In place: separable Gaussian blur with standard deviation sigma (pixels), edges clamped.
void gaussian_blur(float* pixels, int channels, int height, int width, double sigma);
// In place: v -> (v - mean) contrast + mean + brightness, mean over the whole image.
void adjust_contrast(float* pixels, int channels, int height, int width, double contrast, double brightness);
// In place: channel k's v -> v gain[k] + offset[k] (channels must be 3).
void jitter_colour(float* pixels, int channels, int height, int width, const double gain[3], const double offset[3]);
// In place: v -> 1 - v.
void invert_image(float* pixels, int channels, int height, int width);
// In place: v -> v + std * n, n standard normal, value i drawn as philox_normal(key, i).
void add_gaussian_noise(float* pixels, int channels, int height, int width, double std, uint64_t key);
// In place: v -> min(max(v, 0), 1).
void clamp_unit(float* pixels, int64_t count);

// All of `p` on one image, in the order of the header comment; `scratch` holds channels * height * width
// floats (the warp's output before it is copied back).
void augment_image(const AugmentParams& p, float* pixels, int channels, int height, int width, float* scratch);

// A dataset whose inputs [N, C, H, W] float32 are augmented as they are read: sample i of epoch `epoch`
// gets sample_augment_params(options, seed, epoch, i). Targets pass through. Batches are augmented on
// `threads` threads (0: one per hardware thread); the result does not depend on the thread count.
class AugmentedDataset : public Dataset {
 public:
  AugmentedDataset(std::shared_ptr<const Dataset> base, AugmentOptions options, uint64_t seed, int64_t epoch,
                   int threads = 0);
  int64_t size() const override { return base_->size(); }
  Batch get_batch(const std::vector<int64_t>& indices) const override;

 private:
  std::shared_ptr<const Dataset> base_;
  AugmentOptions options_;
  uint64_t seed_;
  int64_t epoch_;
  int threads_;
};

}  // namespace minidl
