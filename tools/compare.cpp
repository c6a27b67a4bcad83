// tools/compare.cpp — `minidl compare` (tools/compare.h): the two runs, then the table and the curves.
#include "tools/compare.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/backend.h"
#include "core/error.h"
#include "tools/bench/machine.h"
#include "tools/child_process.h"
#include "tools/plot.h"
#include "tools/svg.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {

namespace {

// ---------------------------------------------------------------- numbers in the table
std::string printf_text(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// 104700 -> "104,700"
std::string thousands(double v) {
  std::string digits = std::to_string(std::llround(v));
  std::string out;
  const size_t first = digits[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string seconds_text(double s) { return printf_text(s < 10 ? "%.2f" : s < 100 ? "%.1f" : "%.0f", s); }

// "1.7 s", "42 s", "12 min", "1.5 h": for estimates.
std::string duration_text(double s) {
  if (s < 10) return printf_text("%.1f s", s);
  if (s < 120) return printf_text("%.0f s", s);
  if (s < 7200) return printf_text("%.0f min", s / 60);
  return printf_text("%.1f h", s / 3600);
}

std::string loss_text(double v) { return v < 0 ? "-" : printf_text("%.4f", v); }
std::string percent_text(double v) { return v < 0 ? "-" : printf_text("%.2f%%", 100 * v); }

// ---------------------------------------------------------------- the runs
// A command line as a shell would take it back: arguments with other characters in single quotes.
std::string shell_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789_./:=,+-@%") == std::string::npos;
    std::string quoted = "'";
    for (char ch : a) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    line += (line.empty() ? "" : " ") + (plain ? a : quoted + "'");
  }
  return line;
}

std::string executable_dir() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  MINIDL_CHECK(!error, "compare: cannot find this program's folder (/proc/self/exe: ", error.message(),
               "); the training programs are looked for there");
  return self.parent_path().string();
}

// Flags compare sets itself; given after `--` they would contradict it.
void check_extra_flags(const CompareOptions& o) {
  MINIDL_CHECK(o.extra.empty() || o.extra[0].rfind("-", 0) == 0, "compare: unexpected '", o.extra[0],
               "' (flags for the training programs go after --: minidl compare -- --batch 128)");
  std::vector<std::pair<std::string, std::string>> owned = {
      {"--device", "it runs cuda, then cpu"},
      {"--metrics", "it writes them into --out"},
      {"--seed", "use compare's own --seed"},
      {"--epochs", "use compare's own --epochs"},
      {"--data", "use compare's own --data"},
      {"--save", "the two runs would share the file"},
      {"--resume", "the two runs would share the file"},
      {"--stop-after-epochs", "a stopped run has no final numbers to compare"}};
  if (o.cpu_limit > 0) owned.push_back({o.example == "mnist" ? "--limit" : "--epoch-size", "use --cpu-limit alone"});
  for (const std::string& flag : o.extra)
    for (const auto& [own, why] : owned)
      MINIDL_CHECK(flag != own && flag.rfind(own + "=", 0) != 0, "compare: ", own,
                   " is set by compare itself and cannot follow `--` (", why, ")");
}

// The command of one side: identical flags but --device, --metrics and the CPU limit.
std::vector<std::string> side_command(const CompareOptions& o, const std::string& program, bool gpu,
                                      const std::string& metrics) {
  std::vector<std::string> argv = {program, "train", "--device", gpu ? "cuda" : "cpu", "--seed",
                                   std::to_string(o.seed), "--metrics", metrics};
  if (!o.data.empty()) argv.insert(argv.end(), {"--data", o.data});
  if (o.epochs > 0) argv.insert(argv.end(), {"--epochs", std::to_string(o.epochs)});
  if (!gpu && o.cpu_limit > 0)
    argv.insert(argv.end(), {o.example == "mnist" ? "--limit" : "--epoch-size", std::to_string(o.cpu_limit)});
  argv.insert(argv.end(), o.extra.begin(), o.extra.end());
  return argv;
}

int cpu_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace

// ---------------------------------------------------------------- summaries
RunSummary summarize_run(const MetricsLog& log) {
  RunSummary s;
  const MetricsRecord* last = nullptr;
  double later_images = 0, later_seconds = 0;
  for (const MetricsRecord& r : log.records) {
    if (!r.has("train_seconds")) continue;
    const double train_seconds = r.get("train_seconds");
    // "images" is written since minidl compare exists; older files have the rate only.
    const double images = r.has("images") ? r.get("images") : r.get("images_per_second") * train_seconds;
    ++s.epochs;
    s.images += images;
    s.train_seconds += train_seconds;
    s.seconds += r.get("seconds", train_seconds);
    if (s.epochs > 1) later_images += images, later_seconds += train_seconds;
    if (!r.text("device").empty()) s.device = r.text("device");
    last = &r;
  }
  MINIDL_CHECK(last != nullptr, log.path, ": no epoch record with train_seconds (written by `mnist train` and "
               "`captcha train` with --metrics)");
  s.images_per_second = s.train_seconds > 0 ? s.images / s.train_seconds : 0;
  if (s.epochs > 1 && later_seconds > 0) s.images_per_second_after_first = later_images / later_seconds;
  s.train_loss = last->get("train_loss", last->get("loss", -1));
  s.train_accuracy = last->get("train_accuracy", -1);
  const std::string prefix = last->has("test_loss") || last->has("test_accuracy") ? "test" : "val";
  s.heldout = prefix == "test" ? "test" : "validation";
  s.heldout_loss = last->get(prefix + "_loss", -1);
  s.heldout_accuracy = last->get(prefix + "_accuracy", -1);
  return s;
}

// ---------------------------------------------------------------- the table
std::string comparison_table(const Comparison& c) {
  const bool limit_given = c.cpu_limit > 0, limited = c.cpu_limited();
  const std::string star = limited ? " *" : "";
  std::ostringstream t;
  t << "## minidl compare: " << c.example << ", the same model and seed on "
    << (c.has_gpu ? "the GPU and the CPU" : "the CPU only (no GPU)") << "\n\n";
  auto row = [&](const std::string& name, const std::string& gpu, const std::string& cpu) {
    t << "|" << (name.empty() ? " " : " " + name + " ") << "| " << (c.has_gpu ? gpu + " | " : "") << cpu << " |\n";
  };
  row("", c.gpu_name, c.cpu_name);
  t << "|---|" << (c.has_gpu ? "---:|" : "") << "---:|\n";
  row("epochs", std::to_string(c.gpu.epochs), std::to_string(c.cpu.epochs));
  row("training images per epoch", thousands(c.gpu.images_per_epoch()),
      thousands(c.cpu.images_per_epoch()) + (limited ? " (--cpu-limit)" : ""));
  row("seconds per epoch, training", seconds_text(c.gpu.train_seconds / std::max(1, c.gpu.epochs)),
      seconds_text(c.cpu.train_seconds / std::max(1, c.cpu.epochs)));
  row("seconds per epoch, with " + c.cpu.heldout, seconds_text(c.gpu.seconds / std::max(1, c.gpu.epochs)),
      seconds_text(c.cpu.seconds / std::max(1, c.cpu.epochs)));
  row("**images/s, training**", "**" + thousands(c.gpu.images_per_second) + "**",
      "**" + thousands(c.cpu.images_per_second) + "**");
  const bool after_first = c.cpu.images_per_second_after_first > 0 &&
                           (!c.has_gpu || c.gpu.images_per_second_after_first > 0);
  if (after_first)
    row("images/s, epochs after the first", thousands(c.gpu.images_per_second_after_first),
        thousands(c.cpu.images_per_second_after_first));
  row("final training loss", loss_text(c.gpu.train_loss), loss_text(c.cpu.train_loss) + star);
  if (c.cpu.train_accuracy >= 0)
    row("final training accuracy", percent_text(c.gpu.train_accuracy), percent_text(c.cpu.train_accuracy) + star);
  row("final " + c.cpu.heldout + " loss", loss_text(c.gpu.heldout_loss), loss_text(c.cpu.heldout_loss) + star);
  row("final " + c.cpu.heldout + " accuracy", percent_text(c.gpu.heldout_accuracy),
      percent_text(c.cpu.heldout_accuracy) + star);
  t << "\n";

  if (c.has_gpu) {
    t << "**Speed-up per image: " << printf_text("%.1fx", c.gpu.images_per_second / c.cpu.images_per_second)
      << "** (training images/s, GPU / CPU";
    if (after_first)
      t << "; " << printf_text("%.1fx", c.gpu.images_per_second_after_first / c.cpu.images_per_second_after_first)
        << " over the epochs after the first, which leave out the GPU's warm-up";
    t << ").\n";
    if (limited)
      t << "At the CPU's rate, the GPU run's " << thousands(c.gpu.images) << " training images would take about "
        << duration_text(c.gpu.images / c.cpu.images_per_second) << " on the CPU; the GPU took "
        << duration_text(c.gpu.train_seconds) << ".\n";
  } else {
    t << "No GPU run: " << c.no_gpu_reason << ". The speed-up needs one: run `minidl compare` from a CUDA build on "
      << "a machine with an NVIDIA GPU.\n";
  }
  if (limited)
    t << "\n\\* The CPU run was limited to " << thousands(c.cpu.images_per_epoch())
      << " training images per epoch (--cpu-limit " << c.cpu_limit
      << "): its loss and accuracy come from less training and are not comparable with "
      << (c.has_gpu ? "the GPU run's" : "a full run's") << ". The speed-up is per image, from images/s, and "
      << "stays comparable.\n";
  else if (limit_given)
    t << "\n--cpu-limit " << c.cpu_limit << " did not limit the CPU run: its epochs had as many training images as "
      << "the GPU run's.\n";
  t << "\nCommands:\n\n";
  if (c.has_gpu) t << "    " << c.gpu_command << "\n";
  t << "    " << c.cpu_command << "\n";
  return t.str();
}

// ---------------------------------------------------------------- the command
void check_compare_options(const CompareOptions& o) {
  MINIDL_CHECK(o.example == "mnist" || o.example == "captcha", "compare: --example must be mnist or captcha, got '",
               o.example, "'");
  MINIDL_CHECK(o.epochs >= 0, "compare: --epochs must be at least 1");
  MINIDL_CHECK(o.cpu_limit >= 0, "compare: --cpu-limit must be at least 1 (0: no limit)");
  MINIDL_CHECK(!(o.example == "captcha" && o.cpu_limit > 0 && !o.data.empty()),
               "compare: --cpu-limit sets captcha's --epoch-size, which only generated captchas have; with --data "
               "the CPU trains on the whole folder (leave out --cpu-limit, or --data)");
  check_extra_flags(o);
}

int run_compare(const CompareOptions& o, std::FILE* out) {
  check_compare_options(o);
  const std::string dir = o.program_dir.empty() ? executable_dir() : o.program_dir;
  const std::string program = dir + "/" + o.example;
  MINIDL_CHECK(::access(program.c_str(), X_OK) == 0, "compare: '", program, "' is missing (", std::strerror(errno),
               "): compare runs the training programs built next to minidl; build them with `make`");

  std::error_code error;
  std::filesystem::create_directories(o.out, error);
  MINIDL_CHECK(!error && std::filesystem::is_directory(o.out), "compare: cannot make the folder --out '", o.out,
               "'", error ? ": " + error.message() : "");
  for (const char* name : {"gpu.jsonl", "gpu.log", "cpu.jsonl", "cpu.log", "table.md", "curves.svg"})
    std::filesystem::remove(o.out + "/" + name, error);  // a stale file from an earlier run would mislead

  Comparison c;
  c.example = o.example;
  c.cpu_limit = o.cpu_limit;
  c.no_gpu_reason = why_no_gpu();
  c.has_gpu = c.no_gpu_reason.empty();
  const std::string cpu_model = bench::cpu_model_name();
  c.cpu_name = str_cat("CPU, ", cpu_threads(), " threads", cpu_model.empty() ? "" : " (" + cpu_model + ")");
  if (c.has_gpu) {
    c.gpu_name = "GPU cuda:0 (" + backend_for(DeviceType::cuda).spec(0).name + ")";
    std::fprintf(out, "compare: %s is usable: it trains first (its result comes early, and a GPU problem shows "
                      "before the long CPU run), then the CPU\n", c.gpu_name.c_str());
  } else {
    std::fprintf(out, "compare: no GPU run (%s): running the CPU side only\n", c.no_gpu_reason.c_str());
  }
  std::fflush(out);

  struct Side {
    const char* name;  // "gpu", "cpu"
    bool gpu;
  };
  std::vector<Side> sides;
  if (c.has_gpu) sides.push_back({"gpu", true});
  sides.push_back({"cpu", false});
  for (const Side& side : sides) {
    const std::string metrics = o.out + "/" + side.name + ".jsonl", log = o.out + "/" + side.name + ".log";
    const std::vector<std::string> argv = side_command(o, program, side.gpu, metrics);
    (side.gpu ? c.gpu_command : c.cpu_command) = shell_line(argv);
    const std::string prefix = str_cat("[", side.name, "] ");
    const ChildStatus status = run_child(argv, prefix, out, log, [&](int pid) {
      std::fprintf(out, "compare: %spid %d: %s\n", prefix.c_str(), pid, shell_line(argv).c_str());
      std::fflush(out);
    });
    if (status.interrupted_by != 0) {
      std::fprintf(out, "compare: interrupted (%s); the %s run %s, nothing more runs; what was written is in %s\n",
                   strsignal(status.interrupted_by), side.name, status.describe().c_str(), o.out.c_str());
      return 128 + status.interrupted_by;
    }
    if (!status.ok()) {
      std::fprintf(out, "compare: the %s run failed (%s); its output is in %s\n", side.name,
                   status.describe().c_str(), log.c_str());
      return 1;
    }
    (side.gpu ? c.gpu : c.cpu) = summarize_run(read_metrics_log(metrics));
  }

  const std::string table = comparison_table(c);
  std::fprintf(out, "\n%s\n", table.c_str());
  std::ofstream table_file(o.out + "/table.md");
  table_file << table;
  table_file.close();
  MINIDL_CHECK(table_file.good(), "compare: cannot write ", o.out, "/table.md");

  std::vector<PlotRun> runs;
  if (c.has_gpu) runs.push_back({"GPU (" + c.gpu.device + ")", read_metrics_log(o.out + "/gpu.jsonl")});
  runs.push_back({c.cpu_limited() ? str_cat("CPU (--cpu-limit ", o.cpu_limit, ")") : "CPU",
                  read_metrics_log(o.out + "/cpu.jsonl")});
  // Against time since each run started: where the GPU's curve ends, the CPU's has barely begun.
  PlotOptions plot;
  plot.x = "time";
  plot.title = str_cat("minidl compare: ", o.example, c.has_gpu ? " on the GPU and the CPU" : " on the CPU",
                       ", loss and accuracy against time");
  svg::write_file(o.out + "/curves.svg", plot_svg(runs, plot), "compare");
  std::fprintf(out, "compare: wrote %s/table.md, %s/curves.svg, the runs' metrics (%s.jsonl) and output (%s.log)\n",
               o.out.c_str(), o.out.c_str(), c.has_gpu ? "gpu, cpu" : "cpu", c.has_gpu ? "gpu, cpu" : "cpu");
  return 0;
}

}  // namespace minidl
