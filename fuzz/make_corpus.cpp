// fuzz/make_corpus.cpp — writes the seed inputs of the fuzz targets: fuzz_make_corpus DIR writes
// DIR/<target>/<name>, a few small valid (and some nearly valid) files of each format, made by minidl's
// own writers so they follow the formats as the code does (the bench's specs from its own tables). The committed seeds under fuzz/corpus/ were
// written by it (`make fuzz-corpus` rewrites them).
#include <stb_image_write.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/random.h"
#include "examples/captcha/model_config.h"
#include "examples/run_state.h"
#include "nn/checkpoint.h"
#include "nn/image.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tools/bench/case.h"

using namespace minidl;
namespace fs = std::filesystem;

namespace {

fs::path out_dir;

void write(const std::string& target, const std::string& name, const std::vector<uint8_t>& bytes) {
  fs::create_directories(out_dir / target);
  std::ofstream out(out_dir / target / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_text(const std::string& target, const std::string& name, const std::string& text) {
  write(target, name, std::vector<uint8_t>(text.begin(), text.end()));
}

std::vector<uint8_t> read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& bytes) {
  const fs::path tmp = out_dir / "tmp.gz";
  gzFile gz = gzopen(tmp.string().c_str(), "wb");
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
  std::vector<uint8_t> out = read(tmp);
  fs::remove(tmp);
  return out;
}

std::vector<uint8_t> idx(const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> b = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  size_t n = 1;
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(d >> shift));
    n *= d;
  }
  for (size_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i * 29));
  return b;
}

void idx_seeds() {
  write("idx", "images_2x3x3", idx({2, 3, 3}));
  write("idx", "labels_5", idx({5}));
  write("idx", "images_2x3x3.gz", gzip(idx({2, 3, 3})));
  // Two gzip members back to back, the data split across them; and one member too many.
  const std::vector<uint8_t> data = idx({2, 2, 2});
  std::vector<uint8_t> two = gzip(std::vector<uint8_t>(data.begin(), data.begin() + 10));
  const std::vector<uint8_t> second = gzip(std::vector<uint8_t>(data.begin() + 10, data.end()));
  two.insert(two.end(), second.begin(), second.end());
  write("idx", "two_members.gz", two);
  std::vector<uint8_t> extra = gzip(data);
  const std::vector<uint8_t> more = gzip({9, 9, 9, 9});
  extra.insert(extra.end(), more.begin(), more.end());
  write("idx", "extra_member.gz", extra);
}

Image pattern(int w, int h, int channels) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  for (int i = 0; i < w * h * channels; ++i) img.pixels.push_back(static_cast<uint8_t>(i * 37 % 251));
  return img;
}

void image_seeds() {
  const fs::path tmp = out_dir / "tmp.img";
  save_png(tmp.string(), pattern(4, 3, 3));
  write("image", "rgb_4x3.png", read(tmp));
  save_png(tmp.string(), pattern(5, 2, 1));
  write("image", "gray_5x2.png", read(tmp));
  const Image rgb = pattern(9, 7, 3);
  stbi_write_jpg(tmp.string().c_str(), 9, 7, 3, rgb.pixels.data(), 80);
  write("image", "rgb_9x7.jpg", read(tmp));
  stbi_write_bmp(tmp.string().c_str(), 3, 2, 3, pattern(3, 2, 3).pixels.data());
  write("image", "rgb_3x2.bmp", read(tmp));
  fs::remove(tmp);
}

// A captcha model as small as the configuration allows, with a GRU or an LSTM, saved as `captcha train`
// saves (with Adam state after one step when `with_adam`; with the keys of a resumable save, in the
// middle of an epoch, when `resumable`).
std::vector<uint8_t> captcha_checkpoint(bool with_adam, captcha::RnnKind rnn = captcha::RnnKind::gru,
                                        bool resumable = false) {
  manual_seed(1);
  captcha::ModelConfig c;
  c.width = 4;
  c.height = 2;
  c.channels = {1};
  c.convs_per_block = 1;
  c.gru_hidden = 1;
  c.gru_layers = 1;
  c.rnn = rnn;
  c.classes = 3;
  captcha::CaptchaModel model(c);
  Adam adam(model.parameters(), AdamOptions{});
  if (with_adam) {
    for (const Tensor& p : model.parameters()) p.set_grad(ones(p.shape()));
    adam.step();
  }
  const fs::path tmp = out_dir / "tmp.ckpt";
  std::map<std::string, std::string> meta = captcha::model_metadata(c, "ab", "1-2");
  meta["seed"] = "1";
  if (resumable) {
    examples::RunPosition at;
    at.epoch = 1;
    at.epoch_step = 2;
    at.step = 5;
    at.epoch_sums = {0.75, 3};  // captcha train's two sums
    meta = examples::resumable_metadata(meta, 1, at);
  }
  save_checkpoint(tmp.string(), model, with_adam ? &adam : nullptr, meta);
  std::vector<uint8_t> bytes = read(tmp);
  fs::remove(tmp);
  return bytes;
}

void checkpoint_seeds() {
  write("checkpoint", "captcha_tiny", captcha_checkpoint(false));
  write("checkpoint", "captcha_tiny_adam", captcha_checkpoint(true));
  write("checkpoint", "captcha_tiny_lstm_adam", captcha_checkpoint(true, captcha::RnnKind::lstm));
  write("checkpoint", "captcha_tiny_resumable", captcha_checkpoint(true, captcha::RnnKind::gru, true));
  // The MNIST model is 4.8 MB: a file that says it is one, with a few of its tensors.
  Checkpoint mnist;
  mnist.metadata["model"] = "mnist_cnn";
  mnist.tensors.emplace_back("model/0.bias", zeros({32}));
  mnist.tensors.emplace_back("model/10.bias", zeros({10}));
  const fs::path tmp = out_dir / "tmp.ckpt";
  write_checkpoint(tmp.string(), mnist);
  write("checkpoint", "mnist_partial", read(tmp));
  Checkpoint every;  // every dtype
  every.metadata["charset"] = "abc";
  every.tensors.emplace_back("f32", ones({2, 2}));
  every.tensors.emplace_back("f64", ones({1}, DType::float64));
  every.tensors.emplace_back("i32", ones({3}, DType::int32));
  every.tensors.emplace_back("i64", ones({1}, DType::int64));
  write_checkpoint(tmp.string(), every);
  write("checkpoint", "every_dtype", read(tmp));
  fs::remove(tmp);
}

// The CSV target's first byte picks the options (fuzz/harness.h image_csv_input): 0 labels required,
// 1 optional; 2 and 3 the same with one row kept.
void image_csv_seeds() {
  const std::string labelled = "label,pixel0,pixel1,pixel2,pixel3\n7,0,128,255,3\n0,1,2,3,4\n";
  write_text("image_csv", "labelled", std::string(1, '\0') + labelled);
  write_text("image_csv", "labelled_crlf_bom_one_row",
             std::string(1, '\2') + "\xEF\xBB\xBFlabel,pixel0,pixel1,pixel2,pixel3\r\n9,9,9,9,9\r\n1,x\r\n");
  write_text("image_csv", "pixels_only", std::string(1, '\1') + "pixel0,pixel1,pixel2,pixel3\n0,0,0,0\n255,1,2,3\n\n");
  write_text("image_csv", "bad_label", std::string(1, '\0') + "label,pixel0,pixel1,pixel2,pixel3\n10,0,0,0,0\n");
}

void captcha_folder_seeds() {
  write_text("captcha_folder", "csv", std::string(1, '\0') + "file,label\nA1_0.png,A1\nB2.jpg, B2 \n");
  write_text("captcha_folder", "csv_bad_image", std::string(1, '\0') + "A1_0.png,A1\nbad.png,B1\n");
  write_text("captcha_folder", "csv_given_charset", std::string(1, '\1') + "A1_0.png,A1\nB2.jpg,B2\n");
  write_text("captcha_folder", "names", std::string(1, '\2') + "A1_0.png\nB2_1.jpg\n12AB.bmp\nnotes.txt\n");
}

// The bench's --shape values: every family's default shapes and example as KEY:SPEC (the family's first
// key), and a few that are refused (issue 23's crashers, trailing garbage).
void bench_spec_seeds() {
  int n = 0;
  for (const bench::CaseFamily& family : bench::case_families()) {
    const std::string& key = family.keys.front().key;
    write_text("bench_spec", str_cat("example_", n++), key + ":" + family.example);
    for (const bench::DefaultShape& shape : family.defaults)
      write_text("bench_spec", str_cat("default_", n++), key + ":" + shape.spec);
  }
  write_text("bench_spec", "conv_stride_0", "conv2d:2x3x7x6,4x3x3x2,s0");
  write_text("bench_spec", "gru_sequence_layers_0", "gru_sequence:4x2x3,h5,l0");
  write_text("bench_spec", "matmul_m_too_large", "matmul:4294967297x1x1");
  write_text("bench_spec", "trailing_garbage", "relu:4x4x4abc,");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
    return 2;
  }
  out_dir = argv[1];
  idx_seeds();
  image_seeds();
  checkpoint_seeds();
  captcha_folder_seeds();
  image_csv_seeds();
  bench_spec_seeds();
  std::printf("fuzz_make_corpus: wrote the seeds under %s\n", argv[1]);
  return 0;
}
