// tests/test_augment.cpp — the augmentation of training images (nn/augment.h): each transform does what
// its formula says on small hand-made images, is the identity at zero strength, keeps shape and range;
// the random choices are a pure function of (seed, epoch, sample); and AugmentedDataset batches depend
// neither on the batch a sample is in nor on the thread count.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "nn/augment.h"

using namespace minidl;

namespace {

// A [3, H, W] image with distinct values in [0.1, 0.9]: v(c, y, x) = 0.1 + 0.8 * ((c * H + y) * W + x) / (3 H W - 1).
std::vector<float> ramp_image(int H, int W) {
  const int n = 3 * H * W;
  std::vector<float> img(n);
  for (int i = 0; i < n; ++i) img[i] = 0.1f + 0.8f * static_cast<float>(i) / static_cast<float>(n - 1);
  return img;
}

float at(const std::vector<float>& img, int H, int W, int c, int y, int x) {
  return img[(static_cast<size_t>(c) * H + y) * W + x];
}

bool same_params(const AugmentParams& p, const AugmentParams& q) {
  return p.angle == q.angle && p.shear == q.shear && p.scale_x == q.scale_x && p.scale_y == q.scale_y &&
         p.shift_x == q.shift_x && p.shift_y == q.shift_y && p.blur_sigma == q.blur_sigma &&
         p.contrast == q.contrast && p.brightness == q.brightness && p.gain[0] == q.gain[0] &&
         p.gain[2] == q.gain[2] && p.offset[1] == q.offset[1] && p.invert == q.invert &&
         p.noise_std == q.noise_std && p.noise_key == q.noise_key;
}

}  // namespace

TEST_CASE("augment: options parse lists and describe them back", "[augment]") {
  CHECK(AugmentOptions::parse("all").describe() == "all");
  CHECK(AugmentOptions().describe() == "all");
  const AugmentOptions none = AugmentOptions::parse("none");
  CHECK(!none.any());
  CHECK(none.describe() == "none");
  const AugmentOptions some = AugmentOptions::parse("invert,affine");
  CHECK(some.affine);
  CHECK(some.invert);
  CHECK(!some.blur);
  CHECK(some.describe() == "affine,invert");
  CHECK(AugmentOptions::parse(some.describe()).describe() == "affine,invert");
  CHECK_THROWS_WITH(AugmentOptions::parse("affine,rotate"), Catch::Contains("'rotate' is not a transform"));
}

TEST_CASE("augment: the choices are a pure function of (seed, epoch, sample)", "[augment]") {
  const AugmentOptions all;
  const AugmentParams p = sample_augment_params(all, 7, 3, 42);
  CHECK(same_params(p, sample_augment_params(all, 7, 3, 42)));
  CHECK(!same_params(p, sample_augment_params(all, 8, 3, 42)));
  CHECK(!same_params(p, sample_augment_params(all, 7, 4, 42)));
  CHECK(!same_params(p, sample_augment_params(all, 7, 3, 43)));
  // Turning a transform off leaves the others' choices as they were.
  AugmentOptions no_blur = all;
  no_blur.blur = false;
  const AugmentParams q = sample_augment_params(no_blur, 7, 3, 42);
  CHECK(q.blur_sigma == 0);
  CHECK(q.angle == p.angle);
  CHECK(q.contrast == p.contrast);
  CHECK(q.noise_key == p.noise_key);
  // The defaults' ranges (nn/augment.h), over many samples; inversion in about a fifth of them.
  int inverted = 0, blurred = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const AugmentParams r = sample_augment_params(all, 1, 0, i);
    REQUIRE(std::fabs(r.angle) <= 4 * 3.14159265358979 / 180 + 1e-12);
    REQUIRE(std::fabs(r.shear) <= 0.15);
    REQUIRE(std::fabs(r.shift_x) <= 0.04);
    REQUIRE(std::fabs(r.shift_y) <= 0.08);
    REQUIRE(r.contrast >= 0.7);
    REQUIRE(r.contrast <= 1.3);
    REQUIRE(r.noise_std <= 0.04);
    inverted += r.invert;
    blurred += r.blur_sigma > 0;
  }
  CHECK(inverted > 300);
  CHECK(inverted < 500);
  CHECK(blurred > 400);
  CHECK(blurred < 600);
}

TEST_CASE("augment: strength 0 is the identity, any strength keeps shape and range", "[augment]") {
  const int H = 12, W = 20;
  AugmentOptions zero;
  zero.strength = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    std::vector<float> img = ramp_image(H, W), scratch(img.size());
    augment_image(sample_augment_params(zero, 5, 1, i), img.data(), 3, H, W, scratch.data());
    REQUIRE(img == ramp_image(H, W));
  }
  AugmentOptions strong;
  strong.strength = 3;
  bool changed = false;
  for (uint64_t i = 0; i < 20; ++i) {
    std::vector<float> img = ramp_image(H, W), scratch(img.size());
    augment_image(sample_augment_params(strong, 5, 1, i), img.data(), 3, H, W, scratch.data());
    REQUIRE(img.size() == static_cast<size_t>(3 * H * W));
    for (float v : img) REQUIRE((v >= 0.0f && v <= 1.0f));
    changed = changed || img != ramp_image(H, W);
  }
  CHECK(changed);
}

TEST_CASE("augment: inversion maps v to 1 - v", "[augment]") {
  std::vector<float> img = ramp_image(4, 5);
  const std::vector<float> before = img;
  invert_image(img.data(), 3, 4, 5);
  for (size_t i = 0; i < img.size(); ++i) REQUIRE(img[i] == 1.0f - before[i]);
}

TEST_CASE("augment: translation moves a known pixel, the geometry's identity leaves the image", "[augment]") {
  const int H = 10, W = 16;
  std::vector<float> img(3 * H * W, 0.0f), out(img.size());
  for (int c = 0; c < 3; ++c) img[(static_cast<size_t>(c) * H + 4) * W + 5] = 1.0f;  // a white pixel at (x 5, y 4)
  AugmentParams p;
  p.shift_x = 3.0 / W;   // 3 pixels right
  p.shift_y = -2.0 / H;  // 2 pixels up
  warp_affine(img.data(), out.data(), 3, H, W, inverse_geometry(p, W, H));
  for (int c = 0; c < 3; ++c) {
    CHECK(at(out, H, W, c, 2, 8) == Approx(1.0f).margin(1e-6));
    CHECK(at(out, H, W, c, 4, 5) == Approx(0.0f).margin(1e-6));
  }
  CHECK(std::accumulate(out.begin(), out.end(), 0.0) == Approx(3.0).margin(1e-5));

  const std::vector<float> ramp = ramp_image(H, W);
  warp_affine(ramp.data(), out.data(), 3, H, W, inverse_geometry(AugmentParams(), W, H));
  for (size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == Approx(ramp[i]).margin(1e-6));
}

TEST_CASE("augment: scale, rotation and shear map points as their matrices say", "[augment]") {
  const int H = 21, W = 41;  // centre (20, 10)
  AugmentParams zoom;
  zoom.scale_x = zoom.scale_y = 2;
  Affine m = inverse_geometry(zoom, W, H);  // output (24, 12) comes from input (22, 11): twice as far from the centre
  CHECK(m.a * 24 + m.b * 12 + m.c == Approx(22));
  CHECK(m.d * 24 + m.e * 12 + m.f == Approx(11));
  AugmentParams turn;
  turn.angle = 3.14159265358979323846 / 2;  // a quarter turn: input (21, 10) (one right of the centre) goes to (20, 11)
  m = inverse_geometry(turn, W, H);
  CHECK(m.a * 20 + m.b * 11 + m.c == Approx(21));
  CHECK(m.d * 20 + m.e * 11 + m.f == Approx(10).margin(1e-9));
  AugmentParams shear;
  shear.shear = 0.5;  // x += 0.5 (y - cy): input (20, 14) goes to (22, 14)
  m = inverse_geometry(shear, W, H);
  CHECK(m.a * 22 + m.b * 14 + m.c == Approx(20));
  CHECK(m.d * 22 + m.e * 14 + m.f == Approx(14));
}

TEST_CASE("augment: blur, contrast, colour and noise follow their formulas", "[augment]") {
  // Blur keeps a constant image and the sum of an impulse far from the edges; spreads it symmetrically.
  const int H = 15, W = 15;
  std::vector<float> flat(3 * H * W, 0.4f);
  gaussian_blur(flat.data(), 3, H, W, 1.0);
  for (float v : flat) REQUIRE(v == Approx(0.4f).epsilon(1e-5));
  std::vector<float> dot(3 * H * W, 0.0f);
  dot[7 * W + 7] = 1.0f;  // channel 0, (7, 7)
  gaussian_blur(dot.data(), 3, H, W, 1.0);
  CHECK(std::accumulate(dot.begin(), dot.end(), 0.0) == Approx(1.0).epsilon(1e-5));
  const double g1 = std::exp(-0.5), norm = 1 + 2 * (std::exp(-0.5) + std::exp(-2.0) + std::exp(-4.5));
  CHECK(dot[7 * W + 7] == Approx(1 / (norm * norm)).epsilon(1e-5));
  CHECK(dot[7 * W + 8] == Approx(g1 / (norm * norm)).epsilon(1e-5));
  CHECK(dot[6 * W + 7] == Approx(dot[7 * W + 6]).epsilon(1e-6));

  // Contrast 2 around the mean 0.5, brightness 0.1: 0.3 -> 0.2, 0.7 -> 1.0.
  std::vector<float> two = {0.3f, 0.7f, 0.3f, 0.7f, 0.3f, 0.7f};
  adjust_contrast(two.data(), 3, 1, 2, 2.0, 0.1);
  CHECK(two[0] == Approx(0.2f));
  CHECK(two[1] == Approx(1.0f));

  // Colour: channel k -> v gain[k] + offset[k].
  std::vector<float> px = {0.5f, 0.5f, 0.5f};
  const double gain[3] = {1.0, 0.5, 2.0}, offset[3] = {0.1, 0.0, -0.2};
  jitter_colour(px.data(), 3, 1, 1, gain, offset);
  CHECK(px[0] == Approx(0.6f));
  CHECK(px[1] == Approx(0.25f));
  CHECK(px[2] == Approx(0.8f));

  // Noise: the same key, the same values; mean ~0, standard deviation ~std.
  std::vector<float> a(3 * 40 * 40, 0.5f), b = a;
  add_gaussian_noise(a.data(), 3, 40, 40, 0.1, 99);
  add_gaussian_noise(b.data(), 3, 40, 40, 0.1, 99);
  CHECK(a == b);
  double sum = 0, sq = 0;
  for (float v : a) {
    sum += v - 0.5;
    sq += (v - 0.5) * (v - 0.5);
  }
  const double n = static_cast<double>(a.size()), mean = sum / n;
  CHECK(std::fabs(mean) < 0.01);
  CHECK(std::sqrt(sq / n - mean * mean) == Approx(0.1).epsilon(0.05));

  std::vector<float> wild = {-0.5f, 0.25f, 1.5f};
  clamp_unit(wild.data(), 3);
  CHECK(wild == std::vector<float>{0.0f, 0.25f, 1.0f});
}

TEST_CASE("augment: a sample's variant depends on (seed, epoch, index), not on its batch or the threads",
          "[augment]") {
  const int N = 6, H = 8, W = 12;
  std::vector<double> pixels;
  for (int n = 0; n < N; ++n)
    for (float v : ramp_image(H, W)) pixels.push_back(static_cast<float>(v * (0.5 + 0.1 * n)));  // float32 exactly
  std::vector<double> labels(N);
  std::iota(labels.begin(), labels.end(), 1.0);
  auto base = std::make_shared<TensorDataset>(from_vector(pixels, {N, 3, H, W}),
                                              from_vector(labels, {N}, TensorOptions(DType::int64, Device::cpu())));
  const AugmentedDataset one_thread(base, AugmentOptions(), 3, 2, 1), four_threads(base, AugmentOptions(), 3, 2, 4);
  const Batch all = one_thread.get_batch({0, 1, 2, 3, 4, 5});
  const Batch some = four_threads.get_batch({4, 1});
  const std::vector<float> x = all.inputs.to_vector<float>(), y = some.inputs.to_vector<float>();
  const size_t image = 3 * H * W;
  for (size_t i = 0; i < image; ++i) {
    REQUIRE(y[i] == x[4 * image + i]);
    REQUIRE(y[image + i] == x[1 * image + i]);
  }
  CHECK(some.targets.to_vector<int64_t>() == std::vector<int64_t>{5, 2});
  // Another epoch, other variants; the base images are untouched.
  const AugmentedDataset next_epoch(base, AugmentOptions(), 3, 3, 1);
  CHECK(next_epoch.get_batch({0}).inputs.to_vector<float>() != std::vector<float>(x.begin(), x.begin() + image));
  CHECK(base->get_batch({0}).inputs.to_vector<double>() == std::vector<double>(pixels.begin(), pixels.begin() + image));
}
