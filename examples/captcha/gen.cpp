// examples/captcha/gen.cpp — `captcha gen`: write labelled captcha PNGs, <LABEL>_<INDEX>.png.
//
//   captcha gen --out DIR --count N [--seed S] [--charset S] [--length N|A-B] [--width W --height H]
//               [--font FILE]... [--style classic|lined] [--threads T] [--dry-run]
// Image INDEX of seed S is always the same (examples/data/captcha_gen.h). --dry-run renders without writing, to
// measure the generator. --style lined draws another site's look (examples/data/captcha_gen.h): a set to try
// training on labelled folders with (docs/captcha.md, "Training on your own captchas"). --out may not be
// a --font file (nn/files.h: refused with exit status 2).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <tuple>

#include "core/error.h"
#include "examples/captcha/common.h"
#include "examples/flags.h"
#include "examples/data/captcha_gen.h"
#include "nn/files.h"
#include "nn/image.h"

using namespace minidl;

namespace captcha {

namespace {

// Runs body(i) for i in [0, count) on `threads` threads; calls progress(done) about twice a second from the
// calling thread. The first exception stops the work and is rethrown.
template <class Body, class Progress>
void parallel_for_with_progress(int64_t count, int threads, Body body, Progress progress) {
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int64_t i = next++; i < count && !failed; i = next++) {
        try {
          body(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
        ++done;
      }
    });
  while (done < count && !failed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    progress(done.load());
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

struct GenArgs {
  std::string out;
  int64_t count = 0;
  uint64_t seed = 1;
  std::string charset = CaptchaOptions().charset;
  std::string length = "4";
  int width = 192, height = 64;
  std::vector<std::string> fonts;
  std::string style = "classic";
  int threads = 0;  // 0: one per hardware thread
  bool dry_run = false;
};

int run_gen(const GenArgs& a) {
  CaptchaOptions options;
  options.charset = a.charset;
  std::tie(options.min_length, options.max_length) = parse_length_range(a.length);
  options.width = a.width;
  options.height = a.height;
  options.fonts = a.fonts;
  options.style = parse_captcha_style(a.style);
  check_captcha_options(options);
  // Labels become file names, read back up to the first '_' (examples/data/captcha_data.h).
  for (char c : std::string("_/\\"))
    MINIDL_CHECK(options.charset.find(c) == std::string::npos, "gen: the charset may not contain '", c,
                 "' (labels are file names, cut at the first '_')");

  MINIDL_CHECK(a.dry_run || !a.out.empty(), "gen: --out DIR is required (or --dry-run)");
  std::vector<NamedPath> fonts;
  for (const std::string& font : a.fonts) fonts.push_back({"--font", font});
  check_outputs_are_not_inputs({{"--out", a.dry_run ? "" : a.out}}, fonts);  // nn/files.h
  if (!a.dry_run) std::filesystem::create_directories(a.out);
  const int threads = thread_count(a.threads);
  const bool show_progress = a.count >= 1000;
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double last_report = 0;
  parallel_for_with_progress(
      a.count, threads,
      [&](int64_t i) {
        const std::string text = random_captcha_text(options, a.seed, static_cast<uint64_t>(i));
        const Image img = render_captcha(text, options, a.seed, static_cast<uint64_t>(i));
        if (a.dry_run) return;
        save_png((std::filesystem::path(a.out) / (text + "_" + std::to_string(i) + ".png")).string(), img);
      },
      [&](int64_t done) {
        const double s = seconds_since_start();
        if (!show_progress || s - last_report < 0.5) return;
        last_report = s;
        std::fprintf(stderr, "\rgen: %lld / %lld (%.0f%%), %.0f images/s   ", static_cast<long long>(done),
                     static_cast<long long>(a.count), 100.0 * done / a.count, done / s);
      });
  const double s = seconds_since_start();
  if (show_progress) std::fprintf(stderr, "\n");
  std::printf("gen: %s %lld captchas%s%s in %.2f s (%.0f images/s, %d threads)\n", a.dry_run ? "rendered" : "wrote",
              static_cast<long long>(a.count), a.dry_run ? "" : " to ", a.dry_run ? "" : a.out.c_str(), s, a.count / s,
              threads);
  return 0;
}

}  // namespace

Command add_gen_command(CLI::App& parent) {
  auto a = std::make_shared<GenArgs>();
  CLI::App* cmd = parent.add_subcommand("gen", "write labelled captcha PNGs, <LABEL>_<INDEX>.png");
  cmd->add_option("--out", a->out, "output folder (created when missing)");
  cmd->add_option("--count", a->count, "number of images")->required()
      ->check(examples::number_in(examples::FlagRange::whole<int64_t>(1)));
  cmd->add_option("--seed", a->seed, "random seed; image i of a seed is always the same")->capture_default_str()
      ->check(examples::number_in(examples::FlagRange::whole<uint64_t>(0)));
  cmd->add_option("--charset", a->charset, "characters to draw from")->capture_default_str();
  cmd->add_option("--length", a->length, "characters per captcha: N or A-B")->capture_default_str();
  cmd->add_option("--width", a->width, "image width")->capture_default_str()
      ->check(examples::number_in(examples::FlagRange::whole<int>(kMinImageSide, kMaxImageSide)));
  cmd->add_option("--height", a->height, "image height")->capture_default_str()
      ->check(examples::number_in(examples::FlagRange::whole<int>(kMinImageSide, kMaxImageSide)));
  cmd->add_option("--font", a->fonts,
                  "TrueType font file (repeatable; default: DejaVu Sans Bold, see docs/captcha.md)");
  cmd->add_option("--style", a->style,
                  "classic (the default look) or lined (serif/monospace glyphs, sine warp, strike-through lines, "
                  "a third inverted; default fonts DejaVu Serif Bold and Sans Mono Bold)")
      ->capture_default_str()
      ->check(CLI::IsMember({"classic", "lined"}));
  cmd->add_option("--threads", a->threads, "worker threads (0: all hardware threads)")
      ->capture_default_str()
      ->check(examples::number_in(examples::FlagRange::whole<int>(0, kMaxThreads)));
  cmd->add_flag("--dry-run", a->dry_run, "render only, write nothing (measures the generator's throughput)");
  return {cmd, [a] { return run_gen(*a); }};
}

}  // namespace captcha
