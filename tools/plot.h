// tools/plot.h — `minidl plot`: the training curves of one or more --metrics files, as one SVG.
//
//   minidl plot METRICS.jsonl... -o curves.svg [--x epoch|step] [--y loss,accuracy] [--label NAME]...
//
// One panel per --y name, x the epoch or the optimizer step, a colour per run (file) and a line style per
// variant. A --y name draws the key of that name and its train_, test_ and val_ variants, so
//   --y loss      draws train_loss and test_loss (mnist), loss and val_loss (captcha);
//   --y accuracy  draws train_accuracy and test_accuracy (mnist), val_accuracy (captcha, whole captchas);
// any other key is drawn by its exact name (--y images_per_second, --y lr, --y val_char_accuracy).
// Training curves are solid, held-out ones (test_, val_) dashed. Runs may have different lengths: the x
// axis covers the longest.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "tools/metrics_log.h"

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

// The legend's default name of a run: the file name without its folder and its .jsonl / .json extension.
std::string run_label(const std::string& path);

// The SVG document. Throws an Error naming the file and the keys it holds when a run has no x value, or
// when no run has anything to draw for a --y name.
std::string plot_svg(const std::vector<PlotRun>& runs, const PlotOptions& options);

// `minidl plot`: reads `files` (labels[i] names file i; the rest get run_label, with the folder's name in
// front when two files have the same name), prints the warnings of skipped lines to `messages`, writes
// the SVG to `out_path`. Throws an Error on failure.
void plot_files(const std::vector<std::string>& files, const std::vector<std::string>& labels,
                const std::string& out_path, const PlotOptions& options, std::FILE* messages);

}  // namespace minidl
