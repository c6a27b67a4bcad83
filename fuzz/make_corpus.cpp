// fuzz/make_corpus.cpp — writes the seed inputs of the fuzz targets: fuzz_make_corpus DIR writes
// DIR/<target>/<name>, a few small valid (and some nearly valid) files of each format, made by minidl's
// own writers so they follow the formats as the code does (the bench's specs from its own tables). The
// committed seeds under fuzz/corpus/ were written by it (`make fuzz-corpus` rewrites them).
#include <stb_image_write.h>
#include <stb_truetype.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
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

// ---- fonts: a few glyphs of DejaVu Sans re-packed into a minimal TrueType file (a whole font is 750 KB:
// slow to mutate, and more than a seed needs), in the variants stb_truetype reads differently.
void put16(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, v >> 16);
  put16(b, v & 0xffff);
}
uint32_t get16(const uint8_t* p) { return static_cast<uint32_t>(p[0] << 8 | p[1]); }

struct SubsetOptions {
  int cmap_format = 4;     // 4 (segments) or 12 (groups)
  int loca_format = 0;     // 0 (short offsets) or 1 (long)
  bool composite = false;  // add a composite glyph (the first two glyphs side by side) for 'Z'
};

// The glyphs of `chars` (simple glyphs only) of the font `source`, glyph 0 empty, with the tables
// stb_truetype reads: cmap, glyf, head, hhea, hmtx, loca, maxp.
std::vector<uint8_t> truetype_subset(const std::vector<uint8_t>& source, const std::string& chars,
                                     const SubsetOptions& o) {
  stbtt_fontinfo info;
  if (!stbtt_InitFont(&info, source.data(), stbtt_GetFontOffsetForIndex(source.data(), 0))) return {};
  auto source_glyph = [&](int g) {
    const uint8_t* loca = source.data() + info.loca;
    auto at = [&](int i) {
      return info.indexToLocFormat == 0 ? 2 * get16(loca + 2 * i)
                                        : get16(loca + 4 * i) << 16 | get16(loca + 4 * i + 2);
    };
    return std::vector<uint8_t>(source.begin() + info.glyf + at(g), source.begin() + info.glyf + at(g + 1));
  };
  std::vector<std::vector<uint8_t>> glyphs = {{}};  // glyph 0: empty
  std::vector<std::pair<int, int>> metrics = {{0, 0}};
  std::map<uint32_t, uint32_t> cmap;  // code point -> glyph
  for (char c : chars) {
    const int g = stbtt_FindGlyphIndex(&info, static_cast<unsigned char>(c));
    std::vector<uint8_t> glyph = source_glyph(g);
    if (g == 0 || glyph.size() < 10 || static_cast<int16_t>(get16(glyph.data())) < 0) continue;
    int advance = 0, lsb = 0;
    stbtt_GetGlyphHMetrics(&info, g, &advance, &lsb);
    cmap[static_cast<unsigned char>(c)] = static_cast<uint32_t>(glyphs.size());
    glyphs.push_back(glyph);
    metrics.emplace_back(advance, lsb);
  }
  if (o.composite && glyphs.size() >= 3) {
    std::vector<uint8_t> g;
    put16(g, 0xffff);  // numberOfContours -1: composite
    for (int i = 0; i < 4; ++i) g.insert(g.end(), glyphs[1].begin() + 2 + 2 * i, glyphs[1].begin() + 4 + 2 * i);
    put16(g, 2 | 1 | 32);  // x/y offsets, as words; more components follow
    put16(g, 1);
    put16(g, 0), put16(g, 0);
    put16(g, 2 | 1 | 8);  // x/y offsets, as words, with a scale
    put16(g, 2);
    put16(g, 600), put16(g, 0);
    put16(g, 0x2000);  // scale 0.5 (2.14 fixed point)
    cmap['Z'] = static_cast<uint32_t>(glyphs.size());
    glyphs.push_back(g);
    metrics.emplace_back(metrics[1]);
  }
  const uint32_t count = static_cast<uint32_t>(glyphs.size());
  std::map<std::string, std::vector<uint8_t>> tables;

  std::vector<uint8_t>& glyf = tables["glyf"];
  std::vector<uint8_t>& loca = tables["loca"];
  for (const std::vector<uint8_t>& g : glyphs) {
    o.loca_format == 0 ? put16(loca, static_cast<uint32_t>(glyf.size() / 2)) : put32(loca, static_cast<uint32_t>(glyf.size()));
    glyf.insert(glyf.end(), g.begin(), g.end());
    while (glyf.size() % 4) glyf.push_back(0);
  }
  o.loca_format == 0 ? put16(loca, static_cast<uint32_t>(glyf.size() / 2)) : put32(loca, static_cast<uint32_t>(glyf.size()));

  tables["head"].assign(source.begin() + info.head, source.begin() + info.head + 54);
  tables["head"][50] = 0;
  tables["head"][51] = static_cast<uint8_t>(o.loca_format);
  tables["head"][8] = tables["head"][9] = tables["head"][10] = tables["head"][11] = 0;  // checkSumAdjustment
  tables["hhea"].assign(source.begin() + info.hhea, source.begin() + info.hhea + 36);
  tables["hhea"][34] = static_cast<uint8_t>(count >> 8);
  tables["hhea"][35] = static_cast<uint8_t>(count);
  put32(tables["maxp"], 0x00005000);  // version 0.5: the glyph count only
  put16(tables["maxp"], count);
  for (const auto& [advance, lsb] : metrics) {
    put16(tables["hmtx"], static_cast<uint32_t>(advance));
    put16(tables["hmtx"], static_cast<uint16_t>(lsb));
  }

  std::vector<uint8_t>& cm = tables["cmap"];
  put16(cm, 0);  // version
  put16(cm, 1);  // one subtable: Windows, Unicode BMP (format 4) or full (format 12)
  put16(cm, 3);
  put16(cm, o.cmap_format == 4 ? 1 : 10);
  put32(cm, 12);
  if (o.cmap_format == 4) {  // one segment per character (idDelta maps it), then the closing 0xffff
    const uint32_t segments = static_cast<uint32_t>(cmap.size()) + 1;
    uint32_t power = 1, log2 = 0;
    while (power * 2 <= segments) power *= 2, ++log2;
    put16(cm, 4);
    put16(cm, 16 + 8 * segments);
    put16(cm, 0);
    put16(cm, 2 * segments);
    put16(cm, 2 * power);
    put16(cm, log2);
    put16(cm, 2 * segments - 2 * power);
    for (const auto& [c, g] : cmap) put16(cm, c);  // endCode
    put16(cm, 0xffff);
    put16(cm, 0);                                  // reservedPad
    for (const auto& [c, g] : cmap) put16(cm, c);  // startCode
    put16(cm, 0xffff);
    for (const auto& [c, g] : cmap) put16(cm, (g - c) & 0xffff);  // idDelta
    put16(cm, 1);
    for (size_t i = 0; i < segments; ++i) put16(cm, 0);  // idRangeOffset
  } else {
    put16(cm, 12);
    put16(cm, 0);
    put32(cm, 16 + 12 * static_cast<uint32_t>(cmap.size()));
    put32(cm, 0);
    put32(cm, static_cast<uint32_t>(cmap.size()));
    for (const auto& [c, g] : cmap) put32(cm, c), put32(cm, c), put32(cm, g);
  }

  // The file: the header and table directory (sorted by tag), then the tables, each 4-byte aligned.
  std::vector<uint8_t> out;
  const uint32_t n = static_cast<uint32_t>(tables.size());
  put32(out, 0x00010000);
  put16(out, n);
  uint32_t power = 1, log2 = 0;  // searchRange, entrySelector, rangeShift: the binary search's hints
  while (power * 2 <= n) power *= 2, ++log2;
  put16(out, 16 * power), put16(out, log2), put16(out, 16 * (n - power));
  uint32_t offset = 12 + 16 * n;
  for (const auto& [tag, data] : tables) {
    out.insert(out.end(), tag.begin(), tag.end());
    uint32_t sum = 0;
    for (size_t i = 0; i < data.size(); i += 4)
      for (size_t k = 0; k < 4; ++k) sum += (i + k < data.size() ? data[i + k] : 0u) << (24 - 8 * k);
    put32(out, sum);
    put32(out, offset);
    put32(out, static_cast<uint32_t>(data.size()));
    offset += (static_cast<uint32_t>(data.size()) + 3) & ~3u;
  }
  for (const auto& [tag, data] : tables) {
    out.insert(out.end(), data.begin(), data.end());
    while (out.size() % 4) out.push_back(0);
  }
  return out;
}

// The same font as the first of a collection ('ttcf' 1.0): a 16-byte header before it, and its tables'
// offsets moved by 16 (offsets in a collection count from the start of the file).
std::vector<uint8_t> as_collection(std::vector<uint8_t> font) {
  const uint32_t n = get16(font.data() + 4);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t* p = font.data() + 12 + 16 * i + 8;
    const uint32_t offset = (get16(p) << 16 | get16(p + 2)) + 16;
    p[0] = static_cast<uint8_t>(offset >> 24), p[1] = static_cast<uint8_t>(offset >> 16);
    p[2] = static_cast<uint8_t>(offset >> 8), p[3] = static_cast<uint8_t>(offset);
  }
  std::vector<uint8_t> out = {'t', 't', 'c', 'f'};
  put32(out, 0x00010000);
  put32(out, 1);
  put32(out, 16);
  out.insert(out.end(), font.begin(), font.end());
  return out;
}

void font_seeds() {
  const char* path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  const std::vector<uint8_t> dejavu = read(path);
  if (dejavu.empty()) {
    std::fprintf(stderr, "fuzz_make_corpus: no %s (fonts-dejavu-core); the font seeds are not written\n", path);
    return;
  }
  const std::string chars = "AB12ox@";
  const std::vector<uint8_t> subset = truetype_subset(dejavu, chars, {});
  write("font", "dejavu_subset.ttf", subset);
  write("font", "dejavu_subset_cmap12_long_loca.ttf", truetype_subset(dejavu, chars, {12, 1, false}));
  write("font", "dejavu_subset_composite.ttf", truetype_subset(dejavu, chars, {4, 0, true}));
  write("font", "dejavu_subset.ttc", as_collection(subset));
  // Nearly valid: cut inside the table directory, inside the tables, and just before the end.
  for (size_t length : {size_t(40), subset.size() / 2, subset.size() - 3})
    write("font", "partial_cut_at_" + std::to_string(length) + ".ttf",
          std::vector<uint8_t>(subset.begin(), subset.begin() + static_cast<std::ptrdiff_t>(length)));
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
  font_seeds();
  std::printf("fuzz_make_corpus: wrote the seeds under %s\n", argv[1]);
  return 0;
}
