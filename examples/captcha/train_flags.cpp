// examples/captcha/train_flags.cpp — `captcha train`'s command line: its flags, their defaults and
// their checks (examples/flags.h), filling in TrainArgs (examples/captcha/train.h). What each flag does
// is in examples/captcha/train.cpp and, for the data, train_data.cpp.
//
//   captcha train [--device auto|cpu|cuda] [--steps N | --epochs N] [--epoch-size N] [--batch N] [--lr X]
//                 [--schedule cosine|constant] [--data DIR] [--val-data DIR] [--val-count N] [--charset S]
//                 [--length N|A-B] [--width W --height H] [--seed N] [--metrics FILE [--metrics-every N]] [--save FILE]
//                 [--kernel OP=NAME]... [--threads N] [--rnn gru|lstm] [--gru auto|fused|composed|sequence]
//                 [--channels A,B,...] [--convs-per-block N] [--hidden N] [--gru-layers N] [--dropout P]
//                 [--save-every N] [--resume FILE] [--resume-other-data] [--stop-after-epochs N]
//                 [--stop-after-steps N] [--deterministic] [--precision fp32|tf32|bf16] [--distributed]
//                 [--augment LIST | --no-augment] [--augment-strength X] [--weight-decay W]
//                 [--save-best FILE] [--early-stop N] [--cuda-graph | --no-cuda-graph] [--init-from FILE]
//                 [--recipe default|cpu]
#include <memory>

#include "examples/captcha/common.h"
#include "examples/captcha/train.h"
#include "examples/flags.h"
#include "examples/run_state.h"

using namespace minidl;
using examples::non_empty;
using examples::number_in;
using examples::FlagRange;

namespace captcha {

Command add_train_command(CLI::App& parent) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = parent.add_subcommand("train", "train the recognizer; prints progress and validation accuracy");
  cmd->add_option("--device", a->device, "auto, cpu or cuda[:N]")->capture_default_str();
  CLI::Option* steps =
      cmd->add_option("--steps", a->steps, "stop after N training steps (batches)")
          ->check(number_in(FlagRange::whole<int64_t>(1)));
  CLI::Option* epochs =
      cmd->add_option("--epochs", a->epochs, "epochs to train")->capture_default_str()
          ->check(number_in(FlagRange::whole<int64_t>(1)));
  steps->excludes(epochs);
  cmd->add_option("--epoch-size", a->epoch_size, "generated captchas per epoch")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_option("--batch", a->batch, "batch size")->capture_default_str()->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_option("--lr", a->lr, "Adam learning rate")->capture_default_str()->check(number_in(FlagRange::above(0)));
  cmd->add_option("--schedule", a->schedule, "learning rate: cosine (decay to 1% over the run) or constant")
      ->capture_default_str()
      ->check(CLI::IsMember({"cosine", "constant"}));
  cmd->add_option("--data", a->data, "train on the labelled images of DIR instead of generated captchas");
  CLI::Option* val_data = cmd->add_option(
      "--val-data", a->val_data,
      "validate on the labelled images of DIR (also when training on generated captchas: how well they teach "
      "to read real ones)");
  cmd->add_option("--val-count", a->val_count, "generated validation captchas (or images held out of --data)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)))
      ->excludes(val_data);
  a->charset_flag = cmd->add_option("--charset", a->charset, "characters (with --data: inferred from the labels)")
                        ->capture_default_str();
  a->length_flag = cmd->add_option("--length", a->length, "characters per captcha: N or A-B")->capture_default_str();
  cmd->add_option("--width", a->width, "model input width")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(kMinImageSide, kMaxImageSide)));
  cmd->add_option("--height", a->height, "model input height")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(kMinImageSide, kMaxImageSide)));
  cmd->add_option("--seed", a->seed, "seed of initialisation, dropout and data (validation uses seed + 1, `captcha "
                  "eval` seed + 2)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<uint64_t>(0, kMaxTrainSeed)));
  cmd->add_option("--metrics", a->metrics, 
                  "write one JSON object per epoch to FILE (JSON Lines; a metrics log there is replaced, or "
                  "appended to by --resume; any other file is refused)")
      ->check(non_empty());
  cmd->add_option("--metrics-every", a->metrics_every,
                  "with --metrics, also a record every N optimizer steps (the training loss over those "
                  "steps, lr, seconds_since_start): curves finer than one point per epoch for `minidl plot`")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  examples::add_run_flags(*cmd, a->run);  // --save, --resume, --save-every, --stop-after-* (examples/run_state.h)
  cmd->add_option("--kernel", a->kernels, "select a kernel, OP=NAME (repeatable; see `minidl kernels`)");
  cmd->add_option("--threads", a->threads, "threads rendering or decoding images (0: all hardware threads)")
      ->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(0, kMaxThreads)));
  cmd->add_option("--rnn", a->rnn, "recurrent layer: gru, or lstm (captcha_break's PyTorch recipe)")
      ->capture_default_str()
      ->check(CLI::IsMember({"gru", "lstm"}));
  cmd->add_option("--gru", a->gru, "recurrent layer's implementation (GRU or LSTM): fused (cell op per step), composed (elementwise ops), sequence (one sequence op: cuDNN's RNN on a GPU) or auto (sequence on a GPU, fused on the CPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "fused", "composed", "sequence"}));
  cmd->add_option("--channels", a->channels, "channels of the convolution blocks")->capture_default_str();
  cmd->add_option("--convs-per-block", a->convs_per_block, "convolutions per block")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(1)));
  cmd->add_option("--hidden", a->hidden, "GRU/LSTM hidden size (per direction)")->capture_default_str()
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_option("--gru-layers", a->gru_layers, "GRU/LSTM layers")->capture_default_str()
      ->check(number_in(FlagRange::whole<int>(1)));
  cmd->add_option("--dropout", a->dropout, "dropout after the CNN and after the recurrent layer")
      ->capture_default_str()
      ->check(number_in(FlagRange::real(0, 1).excluding_hi()));
  a->augment_flag =
      cmd->add_option("--augment", a->augment,
                      "with --data: the augmentations of training images, all, none, or a list of affine,scale,"
                      "translate,blur,contrast,colour,invert,noise (nn/augment.h)")
          ->capture_default_str();
  CLI::Option* no_augment =
      cmd->add_flag("--no-augment", a->no_augment, "with --data: train on the images as they are (= --augment none)");
  no_augment->excludes(a->augment_flag);
  a->augment_strength_flag =
      cmd->add_option("--augment-strength", a->augment_strength,
                      "with --data: scales every augmentation range and probability (0: none)")
          ->capture_default_str()
          ->check(number_in(FlagRange::real(0, 10)));
  cmd->add_option("--weight-decay", a->weight_decay,
                  "decoupled weight decay (AdamW) when > 0; default 0.01 with --data, 0 (Adam) for generated data")
      ->check(number_in(FlagRange::real(0, 1)));
  cmd->add_option("--save-best", a->save_best,
                  "also save the model of the epoch with the best validation whole-captcha accuracy to FILE")
      ->check(non_empty());
  cmd->add_option("--early-stop", a->early_stop, "stop after N epochs in a row without a new best validation accuracy")
      ->check(number_in(FlagRange::whole<int64_t>(1)));
  cmd->add_flag("--deterministic", a->deterministic,
                "on a GPU, only deterministic algorithms, chosen without timing: the same bits every run "
                "(the CPU always is, for the same threads)");
  examples::add_precision_flag(cmd, a->precision);
  cmd->add_flag("--cuda-graph", a->cuda_graph,
                "capture forward, CTC loss, backward and Adam as a CUDA graph after two eager steps and replay it "
                "every step (one launch instead of hundreds; examples/captcha/train_step.h); the default on one GPU");
  cmd->add_flag("--no-cuda-graph", a->no_cuda_graph, "on a GPU, run every step eagerly")->excludes("--cuda-graph");
  examples::add_memory_format_flag(cmd, a->memory_format, examples::kCaptchaGpuFormats);
  examples::add_activations_flag(cmd, a->activations);
  cmd->add_flag("--distributed", a->distributed,
                "one rank of a data-parallel job: mpirun -np N captcha train --distributed ... (--batch is the "
                "global batch; --device cuda: one GPU per process; docs/distributed.md)");
  cmd->add_option("--recipe", a->recipe,
                  "default, or cpu: a short run that learns 4-digit captchas in minutes on a CPU (a slim model, 600 "
                  "steps of 32; its settings apply where those flags are not given: examples/captcha/recipe.cpp)")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "cpu"}));
  return {cmd, [a, cmd] {
            apply_recipe(*a, *cmd);
            return run_train(*a);
          }};
}

}  // namespace captcha
