// nn/augment.cpp — the augmentation transforms and the augmented dataset (nn/augment.h).
#include "nn/augment.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/philox.h"

namespace minidl {

namespace {

constexpr double kPi = 3.14159265358979323846;

// The random numbers of one (seed, epoch, sample): Philox4x32-10 keyed by a hash of the three, counter
// 0, 1, 2, ... (the same construction as the captcha generator's; a different constant keeps the streams
// apart from it and from the loader's shuffle).
class SampleRandom {
 public:
  SampleRandom(uint64_t seed, uint64_t epoch, uint64_t sample)
      : key_(splitmix64(splitmix64(splitmix64(seed ^ 0x6175676D656E7421ull) + epoch) + sample)) {}
  // Uniform in [0, 1) with 32 random bits.
  double uniform() {
    if (used_ == 4) {
      block_ = philox4x32_10(counter_++, key_);
      used_ = 0;
    }
    return block_.v[used_++] * (1.0 / 4294967296.0);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  uint64_t key() const { return key_; }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
  Philox4 block_{};
  int used_ = 4;
};

struct Named {
  const char* name;
  bool AugmentOptions::*flag;
};
const Named kTransforms[] = {{"affine", &AugmentOptions::affine},     {"scale", &AugmentOptions::scale},
                             {"translate", &AugmentOptions::translate}, {"blur", &AugmentOptions::blur},
                             {"contrast", &AugmentOptions::contrast}, {"colour", &AugmentOptions::colour},
                             {"invert", &AugmentOptions::invert},     {"noise", &AugmentOptions::noise}};

// Bilinear at (x, y) of one channel plane (pixel-centre coordinates), the point clamped to the image first.
float sample_clamped(const float* plane, int height, int width, double x, double y) {
  x = std::clamp(x, 0.0, width - 1.0);
  y = std::clamp(y, 0.0, height - 1.0);
  const int x0 = static_cast<int>(x), y0 = static_cast<int>(y);
  const int x1 = std::min(x0 + 1, width - 1), y1 = std::min(y0 + 1, height - 1);
  const float wx = static_cast<float>(x - x0), wy = static_cast<float>(y - y0);
  const float* r0 = plane + static_cast<size_t>(y0) * width;
  const float* r1 = plane + static_cast<size_t>(y1) * width;
  return (1 - wy) * ((1 - wx) * r0[x0] + wx * r0[x1]) + wy * ((1 - wx) * r1[x0] + wx * r1[x1]);
}

}  // namespace

// ---------------------------------------------------------------- options

AugmentOptions AugmentOptions::parse(const std::string& list) {
  AugmentOptions o;
  if (list == "all") return o;
  for (const Named& t : kTransforms) o.*t.flag = false;
  if (list == "none") return o;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    bool known = false;
    for (const Named& t : kTransforms)
      if (item == t.name) {
        o.*t.flag = true;
        known = true;
      }
    std::string names;
    for (const Named& t : kTransforms) names += str_cat(names.empty() ? "" : ", ", t.name);
    MINIDL_CHECK(known, "augmentation: '", item, "' is not a transform; give all, none, or a list of: ", names);
  }
  return o;
}

std::string AugmentOptions::describe() const {
  std::string out;
  bool all = true;
  for (const Named& t : kTransforms) {
    if (this->*t.flag) out += str_cat(out.empty() ? "" : ",", t.name);
    all = all && this->*t.flag;
  }
  return all ? "all" : out.empty() ? "none" : out;
}

bool AugmentOptions::any() const {
  for (const Named& t : kTransforms)
    if (this->*t.flag) return true;
  return false;
}

// ---------------------------------------------------------------- random choices

// Every draw is made whether or not its transform is on, in a fixed order, so turning one transform off
// leaves the others' choices as they were. s = strength scales each range (and each probability).
AugmentParams sample_augment_params(const AugmentOptions& o, uint64_t seed, uint64_t epoch, uint64_t sample) {
  MINIDL_CHECK(o.strength >= 0, "augmentation: strength must be >= 0, got ", o.strength);
  const double s = o.strength;
  SampleRandom rng(seed, epoch, sample);
  AugmentParams p;
  const double angle = rng.uniform(-4.0, 4.0) * s * kPi / 180.0, shear = rng.uniform(-0.15, 0.15) * s;
  const double zoom = 1 + rng.uniform(-0.10, 0.10) * s, aspect = 1 + rng.uniform(-0.05, 0.05) * s;
  const double shift_x = rng.uniform(-0.04, 0.04) * s, shift_y = rng.uniform(-0.08, 0.08) * s;  // of W, H
  const bool blur = rng.uniform() < 0.25 * s;
  const double sigma = rng.uniform(0.3, 1.0) * s;
  const double contrast = 1 + rng.uniform(-0.3, 0.3) * s, brightness = rng.uniform(-0.1, 0.1) * s;
  double gain[3], offset[3];
  for (int k = 0; k < 3; ++k) {
    gain[k] = 1 + rng.uniform(-0.1, 0.1) * s;
    offset[k] = rng.uniform(-0.05, 0.05) * s;
  }
  const bool invert = rng.uniform() < 0.2 * s;
  const double noise_std = rng.uniform(0.0, 0.04) * s;

  if (o.affine) {
    p.angle = angle;
    p.shear = shear;
  }
  if (o.scale) {
    p.scale_x = zoom * aspect;
    p.scale_y = zoom / aspect;
  }
  if (o.translate) {
    p.shift_x = shift_x;  // a fraction here; augment_image multiplies by the size
    p.shift_y = shift_y;
  }
  if (o.blur && blur) p.blur_sigma = sigma;
  if (o.contrast) {
    p.contrast = contrast;
    p.brightness = brightness;
  }
  if (o.colour)
    for (int k = 0; k < 3; ++k) {
      p.gain[k] = gain[k];
      p.offset[k] = offset[k];
    }
  p.invert = o.invert && invert;
  if (o.noise) {
    p.noise_std = noise_std;
    p.noise_key = splitmix64(rng.key());
  }
  return p;
}

// ---------------------------------------------------------------- the transforms

// Forward, a point q relative to the centre c = ((W - 1) / 2, (H - 1) / 2) goes to
//   p' = D S R q + c + t,   R = [cos -sin; sin cos] (angle),  S = [1 shear; 0 1],  D = diag(sx, sy),
// t = (shift_x W, shift_y H). The warp needs the output -> input direction:
//   p = M (p' - c - t) + c,   M = R^-1 S^-1 D^-1 = [cos sin; -sin cos] [1 -shear; 0 1] diag(1/sx, 1/sy).
Affine inverse_geometry(const AugmentParams& p, int width, int height) {
  const double cs = std::cos(p.angle), sn = std::sin(p.angle);
  // S^-1 D^-1 = [1/sx  -shear/sy; 0  1/sy]
  const double u00 = 1 / p.scale_x, u01 = -p.shear / p.scale_y, u11 = 1 / p.scale_y;
  Affine m;
  m.a = cs * u00;
  m.b = cs * u01 + sn * u11;
  m.d = -sn * u00;
  m.e = -sn * u01 + cs * u11;
  const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
  const double tx = cx + p.shift_x * width, ty = cy + p.shift_y * height;
  m.c = cx - (m.a * tx + m.b * ty);
  m.f = cy - (m.d * tx + m.e * ty);
  return m;
}

// out(x, y) = bilinear(in, m(x, y)), the sampled point clamped to [0, W - 1] x [0, H - 1] (the edge
// pixels extend outwards: a background colour rather than black or white bars).
void warp_affine(const float* in, float* out, int channels, int height, int width, const Affine& m) {
  const size_t plane = static_cast<size_t>(height) * width;
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        out[c * plane + static_cast<size_t>(y) * width + x] =
            sample_clamped(in + c * plane, height, width, m.a * x + m.b * y + m.c, m.d * x + m.e * y + m.f);
}

// G(k) = exp(-k^2 / (2 sigma^2)) / sum_j exp(-j^2 / (2 sigma^2)) for |k| <= r = ceil(3 sigma); the image
// is convolved with G along rows, then along columns (the 2-D Gaussian is separable), indices clamped.
void gaussian_blur(float* pixels, int channels, int height, int width, double sigma) {
  if (sigma <= 0) return;
  const int r = static_cast<int>(std::ceil(3 * sigma));
  std::vector<float> weights(2 * r + 1);
  double total = 0;
  for (int k = -r; k <= r; ++k) total += std::exp(-k * k / (2 * sigma * sigma));
  for (int k = -r; k <= r; ++k) weights[k + r] = static_cast<float>(std::exp(-k * k / (2 * sigma * sigma)) / total);
  std::vector<float> line(std::max(width, height));
  for (int c = 0; c < channels; ++c) {
    float* plane = pixels + static_cast<size_t>(c) * height * width;
    for (int y = 0; y < height; ++y) {
      float* row = plane + static_cast<size_t>(y) * width;
      for (int x = 0; x < width; ++x) {
        float sum = 0;
        for (int k = -r; k <= r; ++k) sum += weights[k + r] * row[std::clamp(x + k, 0, width - 1)];
        line[x] = sum;
      }
      std::copy(line.begin(), line.begin() + width, row);
    }
    for (int x = 0; x < width; ++x) {
      for (int y = 0; y < height; ++y) {
        float sum = 0;
        for (int k = -r; k <= r; ++k) sum += weights[k + r] * plane[std::clamp(y + k, 0, height - 1) * width + x];
        line[y] = sum;
      }
      for (int y = 0; y < height; ++y) plane[static_cast<size_t>(y) * width + x] = line[y];
    }
  }
}

// v -> (v - mean) contrast + mean + brightness; mean over every value of the image. Contrast stretches or
// flattens the ink-to-background difference around the average grey; brightness shifts everything.
void adjust_contrast(float* pixels, int channels, int height, int width, double contrast, double brightness) {
  const size_t n = static_cast<size_t>(channels) * height * width;
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += pixels[i];
  mean /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) pixels[i] = static_cast<float>((pixels[i] - mean) * contrast + mean + brightness);
}

// Channel k: v -> v gain[k] + offset[k]: a colour cast (white balance and tint).
void jitter_colour(float* pixels, int channels, int height, int width, const double gain[3], const double offset[3]) {
  MINIDL_CHECK(channels == 3, "jitter_colour: needs 3 channels, got ", channels);
  const size_t plane = static_cast<size_t>(height) * width;
  for (int k = 0; k < 3; ++k)
    for (size_t i = 0; i < plane; ++i) pixels[k * plane + i] = static_cast<float>(pixels[k * plane + i] * gain[k] + offset[k]);
}

// v -> 1 - v: dark ink on a light background becomes light ink on a dark one.
void invert_image(float* pixels, int channels, int height, int width) {
  const size_t n = static_cast<size_t>(channels) * height * width;
  for (size_t i = 0; i < n; ++i) pixels[i] = 1.0f - pixels[i];
}

// v_i -> v_i + std n_i, n_i = philox_normal(key, i) (standard normal, Box-Muller; core/philox.h), each
// value of each channel its own.
void add_gaussian_noise(float* pixels, int channels, int height, int width, double std, uint64_t key) {
  if (std <= 0) return;
  const size_t n = static_cast<size_t>(channels) * height * width;
  for (size_t i = 0; i < n; ++i) pixels[i] = static_cast<float>(pixels[i] + std * philox_normal(key, i));
}

void clamp_unit(float* pixels, int64_t count) {
  for (int64_t i = 0; i < count; ++i) pixels[i] = std::min(std::max(pixels[i], 0.0f), 1.0f);
}

void augment_image(const AugmentParams& p, float* pixels, int channels, int height, int width, float* scratch) {
  const size_t n = static_cast<size_t>(channels) * height * width;
  const bool moves = p.angle != 0 || p.shear != 0 || p.scale_x != 1 || p.scale_y != 1 || p.shift_x != 0 ||
                     p.shift_y != 0;
  if (moves) {
    warp_affine(pixels, scratch, channels, height, width, inverse_geometry(p, width, height));
    std::copy(scratch, scratch + n, pixels);
  }
  gaussian_blur(pixels, channels, height, width, p.blur_sigma);
  if (p.contrast != 1 || p.brightness != 0) adjust_contrast(pixels, channels, height, width, p.contrast, p.brightness);
  if (channels == 3) jitter_colour(pixels, channels, height, width, p.gain, p.offset);
  if (p.invert) invert_image(pixels, channels, height, width);
  add_gaussian_noise(pixels, channels, height, width, p.noise_std, p.noise_key);
  clamp_unit(pixels, static_cast<int64_t>(n));
}

// ---------------------------------------------------------------- the dataset

AugmentedDataset::AugmentedDataset(std::shared_ptr<const Dataset> base, AugmentOptions options, uint64_t seed,
                                   int64_t epoch, int threads)
    : base_(std::move(base)), options_(options), seed_(seed), epoch_(epoch), threads_(threads) {
  MINIDL_CHECK(base_ != nullptr, "AugmentedDataset: no dataset");
  MINIDL_CHECK(options_.strength >= 0, "augmentation: strength must be >= 0, got ", options_.strength);
  if (threads_ <= 0) threads_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Batch AugmentedDataset::get_batch(const std::vector<int64_t>& indices) const {
  Batch batch = base_->get_batch(indices);
  const Tensor& x = batch.inputs;
  MINIDL_CHECK(x.dim() == 4 && x.dtype() == DType::float32 && x.device().is_cpu() && x.is_contiguous(),
               "AugmentedDataset: inputs must be CPU float32 [N, C, H, W] images, got ", shape_str(x.shape()), " ",
               dtype_name(x.dtype()));
  const int C = static_cast<int>(x.size(1)), H = static_cast<int>(x.size(2)), W = static_cast<int>(x.size(3));
  const int64_t B = x.size(0), image = static_cast<int64_t>(C) * H * W;
  float* pixels = batch.inputs.data<float>();
  const int threads = static_cast<int>(std::min<int64_t>(B, threads_));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<float> scratch(static_cast<size_t>(image));
      for (int64_t b = t; b < B; b += threads) {
        const AugmentParams p = sample_augment_params(options_, seed_, static_cast<uint64_t>(epoch_),
                                                      static_cast<uint64_t>(indices[b]));
        augment_image(p, pixels + b * image, C, H, W, scratch.data());
      }
    });
  for (std::thread& t : pool) t.join();
  return batch;
}

}  // namespace minidl
