#include "nn/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace minidl {

namespace {
constexpr double kLiveRefreshSeconds = 0.1;
constexpr int kBarWidth = 20;
}  // namespace

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

Progress::Progress(std::string title, int64_t total_steps, Mode mode, std::FILE* out, double interval_seconds)
    : title_(std::move(title)),
      total_(total_steps),
      live_(mode == Mode::live || (mode == Mode::automatic && ::isatty(::fileno(out)))),
      out_(out),
      interval_(interval_seconds),
      start_(std::chrono::steady_clock::now()),
      last_print_(live_ ? -1e30 : 0.0) {  // live: draw at once; plain: the first line after an interval
  MINIDL_CHECK(total_steps >= 0, "progress: total_steps must not be negative, got ", total_steps);
}

void Progress::resumed_at(int64_t step, int64_t samples) {
  first_step_ = step;
  first_samples_ = samples;
  while (next_quarter_ <= 3 && step * 4 >= next_quarter_ * total_) ++next_quarter_;
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool Progress::due(int64_t step) const {
  if (total_ == 0) return false;  // an empty loop: nothing to report
  const double now = elapsed_seconds();
  if (live_) return step == total_ || now - last_print_ >= kLiveRefreshSeconds;
  if (step >= total_) return false;  // the summary line covers the end
  if (next_quarter_ <= 3 && step * 4 >= next_quarter_ * total_) return true;
  return now - last_print_ >= interval_;
}

void Progress::set_run_remaining(std::function<double(double eta, double step_seconds)> run_remaining) {
  run_remaining_ = std::move(run_remaining);
}

double Progress::step_seconds(int64_t step) const {
  return step > first_step_ ? elapsed_seconds() / static_cast<double>(step - first_step_) : 0;
}

double Progress::eta_seconds(int64_t step) const { return step_seconds(step) * static_cast<double>(total_ - step); }

std::string Progress::status_text(int64_t step, int64_t samples, double loss, double accuracy) const {
  const double t = elapsed_seconds();
  const double rate = t > 0 ? (samples - first_samples_) / t : 0;
  const double eta = eta_seconds(step);
  const std::string eta_shown =
      run_remaining_ ? "ETA epoch " + format_duration(eta) + ", run ~" +
                           format_duration(run_remaining_(eta, step_seconds(step)))
                     : "ETA " + format_duration(eta);
  char buf[200];
  std::snprintf(buf, sizeof buf, "%lld/%lld  loss %.4f  acc %.2f%%  %.0f img/s  %s",
                static_cast<long long>(step), static_cast<long long>(total_), loss, 100 * accuracy, rate,
                eta_shown.c_str());
  return buf;
}

void Progress::update(int64_t step, int64_t samples, double loss, double accuracy) {
  if (!due(step)) return;
  last_print_ = elapsed_seconds();
  if (live_) {
    const int filled = static_cast<int>(kBarWidth * step / total_);
    const std::string line = title_ + " [" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] " +
                             status_text(step, samples, loss, accuracy);
    std::fprintf(out_, "\r%s%s", line.c_str(),
                 line.size() < last_width_ ? std::string(last_width_ - line.size(), ' ').c_str() : "");
    last_width_ = line.size();
  } else {
    while (next_quarter_ <= 3 && step * 4 >= next_quarter_ * total_) ++next_quarter_;
    std::fprintf(out_, "%s  %3d%%  %s\n", title_.c_str(), static_cast<int>(100 * step / total_),
                 status_text(step, samples, loss, accuracy).c_str());
  }
  std::fflush(out_);
}

void Progress::clear() {
  if (live_ && last_width_ > 0) {
    std::fprintf(out_, "\r%s\r", std::string(last_width_, ' ').c_str());
    std::fflush(out_);
  }
  last_width_ = 0;
}

void Progress::finish(const std::string& summary) {
  clear();
  std::fprintf(out_, "%s\n", summary.c_str());
  std::fflush(out_);
}

}  // namespace minidl
