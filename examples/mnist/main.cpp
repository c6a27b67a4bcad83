// examples/mnist/main.cpp — `mnist`: train, evaluate and use a CNN on MNIST.
//
//   mnist train [--data DIR|FILE.csv] [--device auto|cpu|cuda] [--epochs N] [--batch N] [--lr X] [--limit N]
//               [--val-split F] [--schedule onecycle|cosine|step|none] [--seed N] [--metrics FILE] [--weight-decay W]
//               [--save FILE] [--save-every N] [--resume FILE [--resume-other-data]] [--stop-after-epochs N]
//               [--stop-after-steps N] [--metrics-every N] [--init-from FILE] [--save-best FILE] [--early-stop N]
//               [--kernel OP=NAME]... [--deterministic] [--distributed] [--host-data]
//               [--target-accuracy A] [--recipe default|fast] [--model mnist_cnn|mnist_cnn_bn]
//               [--cuda-graph|--no-cuda-graph] [--precision fp32|tf32|bf16]
//   mnist eval --model FILE [--data DIR|labelled.csv] [--deterministic]
//   mnist predict --model FILE IMAGE...
//   mnist predict --model FILE --csv test.csv --out submission.csv
//   mnist bench [--device auto|cpu|cuda] [--batch N] [--warmup N] [--steps N] [--json FILE] [--cuda-graph]
//               [--model mnist_cnn|mnist_cnn_bn] [--precision fp32|tf32|bf16]
//               (training-step timing on a synthetic batch: examples/mnist/bench.cpp)
//   mnist export --model FILE --safetensors OUT [--sample FILE]     (PyTorch's names: examples/mnist/exchange.cpp)
//   mnist import --safetensors IN --save FILE [--model mnist_cnn|mnist_cnn_bn]
//
// One file per subcommand: examples/mnist/train.cpp (what each train flag does), data.cpp (train's data),
// recipe.cpp (train's --recipe fast), eval.cpp, predict.cpp, bench.cpp, exchange.cpp; what they share is in common.h and
// common.cpp; the model is in model.h and one training step in train_step.h. This file holds the command
// line and dispatches.
// Errors print "mnist: <message>" and exit with status 1 (2 for bad flags and for an output that names an
// input, 3 when training diverged, 4 when --target-accuracy was not reached).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/numerics.h"
#include "dist/process.h"
#include "examples/flags.h"
#include "examples/mnist/bench.h"
#include "examples/mnist/common.h"
#include "examples/mnist/exchange.h"
#include "examples/train_guard.h"
#include "nn/files.h"
#include "nn/layers.h"

using namespace minidl;
using examples::non_empty;
using examples::number_in;
using examples::FlagRange;

int main(int argc, char** argv) {
  CLI::App app{"mnist: train a CNN on MNIST with minidl, evaluate it, and read digits from image files."};
  app.require_subcommand(1);

  mnist::TrainFlags tf;
  CLI::App* train_cmd = app.add_subcommand("train", "train the CNN; prints progress and the final test accuracy");
  train_cmd->add_option("--data", tf.data, "directory with the four MNIST files (default: the first of $MINIDL_DATA/mnist, data/mnist, ../shared/data/mnist that has them), or a CSV file in Kaggle's format (train.csv: label,pixel0,...,pixel783)");
  train_cmd->add_option("--device", tf.device, "auto, cpu or cuda[:N]")->capture_default_str();
  train_cmd->add_option("--epochs", tf.epochs, "passes over the training data")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(1)));
  train_cmd->add_option("--batch", tf.batch, "batch size")->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  train_cmd->add_option("--lr", tf.lr, "Adam learning rate (the peak of the one-cycle schedule)")
      ->capture_default_str()
      ->check(number_in(FlagRange::above(0)));
  train_cmd->add_option("--weight-decay", tf.weight_decay, "decoupled weight decay (AdamW) when > 0; 0: Adam")
      ->capture_default_str()
      ->check(number_in(FlagRange::real(0, 1)));
  train_cmd->add_option("--schedule", tf.schedule, "learning-rate schedule")
      ->capture_default_str()
      ->check(CLI::IsMember({"onecycle", "cosine", "step", "none"}));
  train_cmd->add_option("--limit", tf.limit, "train on the first N training images only (0: all)")
      ->capture_default_str()->check(number_in(FlagRange::whole<int64_t>(0)));
  train_cmd->add_option("--val-split", tf.val_split,
                        "hold out this fraction of the training images, stratified by class and chosen by --seed, "
                        "and evaluate on it after every epoch instead of the test set (default: 0.1 for a CSV "
                        "file, which has no labelled test set; 0 for the IDX files)")
      ->check(number_in(FlagRange::real(0, 1).excluding_hi()));
  train_cmd->add_option("--seed", tf.seed, "seed of initialisation, shuffling and dropout")->capture_default_str()
      ->check(number_in(FlagRange::whole<uint64_t>(0)));
  train_cmd->add_option("--metrics", tf.metrics, 
                  "write one JSON object per epoch to FILE (JSON Lines; a metrics log there is replaced, or "
                  "appended to by --resume; any other file is refused)")
      ->check(non_empty());
  train_cmd->add_option("--metrics-every", tf.metrics_every,
                  "with --metrics, also a record every N optimizer steps (the training loss over those "
                  "steps, lr, seconds_since_start): curves finer than one point per epoch for `minidl plot`")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  examples::add_run_flags(*train_cmd, tf.run);  // --save, --resume, --init-from, --save-every, --stop-after-*
  train_cmd->add_option("--save-best", tf.save_best,
                        "also save the model of the epoch with the best evaluation accuracy to FILE (ties: the "
                        "lower loss)")
      ->check(non_empty());
  train_cmd->add_option("--early-stop", tf.early_stop,
                        "stop after N epochs in a row without a new best evaluation accuracy")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  train_cmd->add_option("--kernel", tf.kernels, "select a kernel, OP=NAME (repeatable; see `minidl kernels`)");
  train_cmd->add_flag("--deterministic", tf.deterministic,
                      "on a GPU, only deterministic algorithms, chosen without timing: the same bits every run "
                      "(the CPU always is, for a given thread count)");
  examples::add_precision_flag(train_cmd, tf.precision);
  examples::add_memory_format_flag(train_cmd, tf.memory_format, examples::kMnistGpuFormats);
  train_cmd->add_flag("--host-data", tf.host_data,
                      "on a GPU, keep the images in host memory and copy each batch (default: resident on the GPU, "
                      "batches assembled there)");
  train_cmd->add_option("--target-accuracy", tf.target_accuracy,
                        "stop after the first evaluation whose accuracy reaches A (a fraction, e.g. 0.99) and "
                        "report the time since the model was created; exit 4 if no epoch reaches it")
      ->check(number_in(FlagRange::real(0, 1).excluding_lo().with_note("a fraction, e.g. 0.99")));
  train_cmd->add_option("--model", tf.model,
                        "mnist_cnn (the classic PyTorch example's CNN) or mnist_cnn_bn (smaller, with batch norm: the "
                        "fast recipe's; examples/mnist/model.h)")
      ->capture_default_str()
      ->check(CLI::IsMember({mnist::kModelName, mnist::kFastModelName}));
  train_cmd->add_option("--recipe", tf.recipe,
                        "default, or fast: a short run tuned for time to 99% (its --model, --epochs, --batch and --lr "
                        "apply "
                        "where those flags are not given; docs/results/README.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "fast"}));
  train_cmd->add_flag("--cuda-graph", tf.cuda_graph,
                      "capture forward, loss, backward and Adam as a CUDA graph after two eager steps and replay it "
                      "every step (one launch instead of hundreds; nn/graphed_step.h); the default on one GPU");
  train_cmd->add_flag("--no-cuda-graph", tf.no_cuda_graph, "on a GPU, run every step eagerly")
      ->excludes("--cuda-graph");
  train_cmd->add_flag("--distributed", tf.distributed,
                      "one rank of a data-parallel job: mpirun -np N mnist train --distributed ... (--batch is the "
                      "global batch; --device cuda: one GPU per process; docs/distributed.md)");

  std::string model_path, data, device = "auto";
  std::vector<std::string> kernels, images;
  bool deterministic = false;
  CLI::App* eval_cmd = app.add_subcommand("eval", "print the test loss and accuracy of a saved model");
  eval_cmd->add_option("--model", model_path, "checkpoint saved by `mnist train --save`")->required();
  eval_cmd->add_option("--data", data,
                       "directory with the MNIST files (default: searched as by train; its test set is scored), or a "
                       "labelled CSV file in Kaggle's format (train.csv: label,pixel0,...; every row is scored)");
  eval_cmd->add_option("--device", device, "auto, cpu or cuda[:N]")->capture_default_str();
  eval_cmd->add_option("--kernel", kernels, "select a kernel, OP=NAME (repeatable)");
  eval_cmd->add_flag("--deterministic", deterministic, "on a GPU, only deterministic algorithms");

  std::string csv, out;
  CLI::App* predict_cmd = app.add_subcommand(
      "predict", "print the digit in each image file and its probability, or write a digit for every row of a CSV file");
  predict_cmd->add_option("--model", model_path, "checkpoint saved by `mnist train --save`")->required();
  CLI::Option* image_opt = predict_cmd->add_option("IMAGE", images, "image files (PNG, JPEG or BMP)");
  CLI::Option* csv_opt = predict_cmd->add_option(
      "--csv", csv, "a CSV file of images in Kaggle's format (test.csv: pixel0,...,pixel783), instead of IMAGE files; "
      "a labelled file (train.csv) also gets its accuracy printed (`mnist eval --data FILE.csv` gives the loss too)")
      ->check(non_empty());
  CLI::Option* out_opt = predict_cmd->add_option(
      "--out", out, "with --csv: the submission file to write, ImageId,Label (atomically)")
      ->check(non_empty());
  csv_opt->excludes(image_opt);
  csv_opt->needs(out_opt);
  out_opt->needs(csv_opt);
  predict_cmd->add_option("--device", device, "auto, cpu or cuda[:N]")->capture_default_str();
  predict_cmd->add_option("--kernel", kernels, "select a kernel, OP=NAME (repeatable)");

  const mnist::BenchCommand bench_cmd = mnist::add_bench_command(app);
  const mnist::ExchangeCommands exchange_cmds = mnist::add_exchange_commands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "mnist: %s\nRun `mnist --help` or `mnist <command> --help` for usage.\n",
                 examples::parse_error_message(e).c_str());
    return 2;
  }

  try {
    check_environment();  // MINIDL_CUDA_MEMORY_LIMIT, MINIDL_CHECK_NUMERICS: a typo fails before any work
    check_fusion_environment();  // MINIDL_FUSE_RELU (nn/fuse_relu.h)
    if (*train_cmd) {
      mnist::apply_recipe(tf, *train_cmd);
      return mnist::train(tf);
    }
    if (*eval_cmd) return mnist::eval(model_path, data, device, kernels, deterministic);
    if (*predict_cmd) {
      if (!csv.empty()) return mnist::predict_csv(model_path, csv, out, device, kernels);
      MINIDL_CHECK(!images.empty(), "predict: give image files, or --csv FILE --out FILE");
      return mnist::predict(model_path, images, device, kernels);
    }
    if (*bench_cmd.app) return bench_cmd.run();
    if (*exchange_cmds.export_app || *exchange_cmds.import_app) return exchange_cmds.run();
  } catch (const OutputIsInputError& e) {
    return dist::report_error(e, "mnist", 2);  // an output names an input: a usage error (nn/files.h)
  } catch (const NonFiniteError& e) {
    // Training diverged (examples/train_guard.h; or MINIDL_CHECK_NUMERICS found a NaN): exit status 3. In
    // a job, when only this rank found it, the whole job ends with that status.
    return dist::report_error(e, "mnist", examples::kExitNonFinite);
  } catch (const std::exception& e) {
    return dist::report_error(e, "mnist");  // "mnist: <message>"; in a job, ends the job when only this rank failed
  }
  return 0;
}