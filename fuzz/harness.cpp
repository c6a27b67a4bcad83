// fuzz/harness.cpp — one input per reader (fuzz/harness.h).
#include "fuzz/harness.h"

#include <stb_image_write.h>
#include <stb_truetype.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "examples/captcha/model_config.h"
#include "examples/mnist/model.h"
#include "examples/run_state.h"
#include "examples/data/captcha_data.h"
#include "examples/data/captcha_gen.h"
#include "nn/checkpoint.h"
#include "examples/data/font_file.h"
#include "nn/idx.h"
#include "nn/image.h"
#include "nn/image_csv.h"
#include "nn/optim.h"
#include "ops/ops.h"

namespace minidl::fuzz {

namespace fs = std::filesystem;

namespace {

// Images up to 1024 x 1024 (nn/image.h decode_image): the full limit, 2^25 pixels, costs a second or more
// per input under AddressSanitizer, and nothing in the decoders depends on the limit's value.
constexpr int64_t kFuzzMaxPixels = int64_t(1) << 20;

// Runs `f`; its minidl::Error becomes the returned message. Every other exception escapes, and the
// fuzzer reports it as a crash.
template <class F>
std::string refused(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The file a checkpoint's writer would have made of these bytes: the header's size and the CRC-32 fixed.
void fix_size_and_crc(std::vector<uint8_t>& b) {
  static const char magic[8] = {'M', 'I', 'N', 'I', 'D', 'L', 'C', 'K'};
  if (b.size() < 28 || std::memcmp(b.data(), magic, 8) != 0) return;
  put_le(b.data() + 16, b.size(), 8);
  put_le(b.data() + b.size() - 4, crc32_z(0L, b.data(), b.size() - 4), 4);
}

void load_as_its_metadata_says(const Checkpoint& ck) {
  auto kind = ck.metadata.find("model");
  if (ck.metadata.count("epoch")) {  // a resumable save: its position as --resume reads it (no settings to compare)
    const bool captcha_file = kind != ck.metadata.end() && kind->second == captcha::kModelName;
    examples::resume_position("input", ck.metadata, {}, captcha_file ? 2 : 3);
  }
  if (kind == ck.metadata.end()) return;
  if (kind->second == captcha::kModelName) {
    captcha::SavedModel saved;
    std::shared_ptr<captcha::CaptchaModel> model = captcha::model_from_checkpoint(ck, "input", saved);
    auto optimizer = ck.metadata.find("optimizer");
    if (optimizer != ck.metadata.end() && optimizer->second == "Adam") {
      Adam adam(model->parameters(), AdamOptions{});
      load_checkpoint(ck, "input", *model, &adam);
    }
    const captcha::ModelConfig& c = saved.config;
    if (int64_t(c.width) * c.height <= 4096) {
      NoGradGuard no_grad;
      (*model)(zeros({1, 3, c.height, c.width}));
    }
  } else if (kind->second == mnist::kModelName) {
    static const std::shared_ptr<Sequential> model = mnist::make_model();  // 1.2M parameters: built once
    mnist::load_model_from(ck, "input", *model);
  } else if (kind->second == mnist::kFastModelName) {
    static const std::shared_ptr<Sequential> model = mnist::make_fast_model();
    mnist::load_model_from(ck, "input", *model, mnist::kFastModelName);
  }
}

// A folder under the system temp folder for this process, removed at exit.
const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("minidl_fuzz_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d / "fixed");
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(fs::temp_directory_path() / ("minidl_fuzz_" + std::to_string(::getpid())), ignored);
    });
    return d;
  }();
  return dir;
}

const std::vector<uint8_t>& small_png() {
  static const std::vector<uint8_t> bytes = [] {
    Image img;
    img.width = 6;
    img.height = 4;
    img.channels = 3;
    for (int i = 0; i < 6 * 4 * 3; ++i) img.pixels.push_back(static_cast<uint8_t>(i * 11));
    const fs::path p = scratch() / "small.png";
    save_png(p.string(), img);
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }();
  return bytes;
}

void write_file(const fs::path& p, const uint8_t* data, size_t size) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// The folder of modes 0 and 1: fixed images, written once.
fs::path fixed_folder() {
  static const fs::path dir = [] {
    const fs::path d = scratch() / "fixed";
    write_file(d / "A1_0.png", small_png().data(), small_png().size());
    std::vector<uint8_t> rgb(6 * 4 * 3, 128);
    stbi_write_jpg((d / "B2.jpg").string().c_str(), 6, 4, 3, rgb.data(), 90);
    const std::string junk = "not an image";
    write_file(d / "bad.png", reinterpret_cast<const uint8_t*>(junk.data()), junk.size());
    write_file(d / "notes.txt", reinterpret_cast<const uint8_t*>(junk.data()), junk.size());
    return d;
  }();
  return dir;
}

bool usable_file_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

std::string idx_input(const uint8_t* data, size_t size) {
  return refused([&] { read_idx_bytes(data, size, "input"); });
}

std::string image_input(const uint8_t* data, size_t size) {
  return refused([&] {
    const Image img = decode_image(data, size, "input", size % 2 ? 1 : 3, kFuzzMaxPixels);
    std::vector<float> chw(3 * 8 * 4);
    image_to_chw(img, 8, 4, chw.data());
  });
}

std::string checkpoint_input(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  refused([&] { parse_checkpoint(bytes, "input"); });
  fix_size_and_crc(bytes);
  return refused([&] { load_as_its_metadata_says(parse_checkpoint(bytes, "input")); });
}

std::string image_csv_input(const uint8_t* data, size_t size) {
  const int mode = size > 0 ? data[0] : 0;
  const fs::path file = scratch() / "images.csv";
  write_file(file, data + (size > 0), size - (size > 0));
  ImageCsvOptions options;
  options.pixels = 4;
  options.classes = 10;
  options.labels = mode & 1 ? CsvLabels::optional : CsvLabels::required;
  options.limit = mode & 2 ? 1 : 0;
  return refused([&] {
    const ImageCsv csv = read_image_csv(file.string(), options);
    const bool labels_ok =
        csv.labelled ? csv.labels.size() == static_cast<size_t>(csv.rows) &&
                           std::all_of(csv.labels.begin(), csv.labels.end(), [](int64_t l) { return l >= 0 && l < 10; })
                     : csv.labels.empty();
    if (csv.pixels != 4 || csv.images.size() != static_cast<size_t>(csv.rows) * 4 || !labels_ok ||
        (options.limit > 0 && csv.rows > options.limit) || (!csv.labelled && options.labels == CsvLabels::required))
      throw std::logic_error("read_image_csv accepted a file and returned inconsistent rows");
  });
}

std::string captcha_folder_input(const uint8_t* data, size_t size) {
  const int mode = size > 0 ? data[0] % 3 : 0;
  const std::string rest(reinterpret_cast<const char*>(data) + (size > 0), size - (size > 0));
  CaptchaFolderOptions options;
  options.width = 8;
  options.height = 4;
  options.threads = 1;
  fs::path folder;
  if (mode == 0 || mode == 1) {
    folder = fixed_folder();
    write_file(folder / "labels.csv", reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
    if (mode == 1) {
      options.charset = "AB12";
      options.length = 2;
    }
  } else {
    folder = scratch() / "named";
    fs::remove_all(folder);
    fs::create_directories(folder);
    size_t start = 0;
    for (int count = 0; start <= rest.size() && count < 16; ++count) {
      const size_t end = std::min(rest.find('\n', start), rest.size());
      const std::string name = rest.substr(start, end - start);
      start = end + 1;
      if (!usable_file_name(name)) continue;
      const std::string ext = fs::path(name).extension().string();
      const bool image = ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
      const uint8_t one = 'x';
      if (image)
        write_file(folder / name, small_png().data(), small_png().size());
      else
        write_file(folder / name, &one, 1);
    }
  }
  return refused([&] {
    const CaptchaDataset d = load_captcha_folder(folder.string(), options);
    encode_ctc_targets(d.labels, d.charset);
  });
}

std::string font_input(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  std::string characters;
  for (char c = '!'; c <= '~'; ++c) characters += c;
  return refused([&] {
    const std::vector<Image> glyphs = draw_font_glyphs(bytes, "input", characters, 24);
    // The checker replays stb_truetype's character lookup with every read checked; both must agree, or
    // the checks guard another path than the one stb takes.
    stbtt_fontinfo info;
    if (stbtt_InitFont(&info, bytes.data(), stbtt_GetFontOffsetForIndex(bytes.data(), 0)) == 0)
      throw std::logic_error("check_truetype_font accepted a font stbtt_InitFont refuses");
    for (size_t i = 0; i < characters.size(); ++i) {
      const int stb = stbtt_FindGlyphIndex(&info, static_cast<unsigned char>(characters[i]));
      if (static_cast<uint32_t>(stb) != truetype_glyph_index(bytes.data(), bytes.size(),
                                                            static_cast<unsigned char>(characters[i])))
        throw std::logic_error("truetype_glyph_index and stbtt_FindGlyphIndex disagree");
      if ((stb == 0) != (glyphs[i].width == 0))
        throw std::logic_error("draw_font_glyphs drew a character the font lacks, or skipped one it has");
    }
  });
}

}  // namespace minidl::fuzz
