// tools/plot.h — `minidl plot`: the training curves of one or more --metrics files, as one SVG or PNG.
//
//   minidl plot METRICS.jsonl... -o curves.svg|curves.png [--x epoch|step|time] [--y loss,accuracy]
//               [--label NAME]...
//
// One panel per --y name, x the epoch, the optimizer step or the time since the run started (--x time, the
// records' seconds_since_start: the natural axis for a CPU against a GPU), a colour per run (file) and a
// line style per variant. A --y name draws the key of that name and its train_, test_ and val_ variants, so
//   --y loss      draws train_loss and test_loss (mnist), loss and val_loss (captcha);
//   --y accuracy  draws train_accuracy and test_accuracy (mnist), val_accuracy (captcha, whole captchas);
// any other key is drawn by its exact name (--y images_per_second, --y lr, --y val_char_accuracy).
// Training curves are solid, held-out ones (test_, val_) dashed. Runs may have different lengths: the x
// axis covers the longest.
//
// Axes carry units (axis_unit): accuracy in percent, as the programs print it; images/s; time in seconds,
// or minutes past 10 minutes. A log written with --metrics-every N holds per-step records (they have
// "every_steps"): a key they hold (the training loss, lr) is drawn from them, a curve point every N steps;
// the rest (held-out loss and accuracy, images/s) from the per-epoch records. A series with exactly the
// points of an earlier one (two identical runs) hides under it: its legend entry says "same as ...".
// -o FILE.png draws the same chart into a PNG (cairo, tools/plot_canvas.h); any other name gets SVG.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "tools/metrics_log.h"
#include "tools/plot_canvas.h"

namespace minidl {

struct PlotRun {
  std::string label;  // in the legend
  MetricsLog log;
};

struct PlotOptions {
  std::string x = "epoch";
  std::vector<std::string> y = {"loss", "accuracy"};
  std::string title;  // default: "<y names> against <x>"
};

// The keys of `log` that the --y name `name` draws: `name`, train_`name`, test_`name`, val_`name`, those
// that some record holds, in that order.
std::vector<std::string> keys_for(const std::string& name, const MetricsLog& log);

// An axis's label and the factor its values are shown with: accuracy -> "accuracy (%)" x 100,
// images_per_second -> "images/s", lr -> "learning rate", seconds_since_start -> "time (s)", or
// "time (min)" x 1/60 when `largest` (the largest value drawn) is over 600 s; epoch, step, loss as they are.
struct AxisUnit {
  std::string label;
  double scale = 1;
};
AxisUnit axis_unit(const std::string& name, double largest);

// The metrics key that the --x name `x` reads: "time" is "seconds_since_start"; others are themselves.
std::string x_key(const std::string& x);

// The legend's default name of a run: the file name without its folder and its .jsonl / .json extension.
std::string run_label(const std::string& path);

// The chart, laid out once (tools/plot_canvas.h), and as an SVG document. Throws an Error naming the file and the keys it holds when a run has no x value, or
// when no run has anything to draw for a --y name.
Canvas plot_canvas(const std::vector<PlotRun>& runs, const PlotOptions& options);
std::string plot_svg(const std::vector<PlotRun>& runs, const PlotOptions& options);

// Writes the chart to `path`: PNG when it ends in .png (any case), SVG otherwise. Throws an Error naming
// `what` ("plot", "compare") when it cannot (a PNG in a build without cairo included).
void write_plot(const std::vector<PlotRun>& runs, const PlotOptions& options, const std::string& path,
                const std::string& what);

// `minidl plot`: reads `files` (labels[i] names file i; the rest get run_label, with the folder's name in
// front when two files have the same name), prints the warnings of skipped lines to `messages`, writes
// the chart to `out_path` (write_plot). Throws an Error on failure.
void plot_files(const std::vector<std::string>& files, const std::vector<std::string>& labels,
                const std::string& out_path, const PlotOptions& options, std::FILE* messages);

}  // namespace minidl
