// tests/test_run_continue.cpp — going on with a run (examples/run_start.h, examples/run_state.h) and the
// whole run's time left (examples/run_estimate.h): --resume to a larger --epochs is accepted, to fewer
// than done refused naming --epochs; --init-from loads the weights and buffers but not the optimizer, and
// a model of other settings is refused naming the flag; the estimate's arithmetic with injected times,
// the long-CPU-run warning's threshold, and the progress line showing the run's figure.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "examples/run_estimate.h"
#include "examples/run_start.h"
#include "examples/run_state.h"
#include "nn/checkpoint.h"
#include "nn/optim.h"
#include "nn/progress.h"
#include "ops/ops.h"

using namespace minidl;
using examples::Metadata;
using examples::RunPosition;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_continue_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

// A module built without any op: two parameters and a buffer.
class TinyNet : public Module {
 public:
  explicit TinyNet(float w0 = 1) {
    weight = register_parameter("weight", from_vector({w0, 2, 3, 4, 5, 6}, {2, 3}));
    bias = register_parameter("bias", from_vector({0.5, -0.5}, {2}));
    running = register_buffer("running", from_vector({7, 8}, {2}, DType::float64));
  }
  std::string type_name() const override { return "TinyNet"; }
  Tensor weight, bias, running;
};

void one_adam_step(TinyNet& net, Adam& adam) {
  net.weight.set_grad(from_vector({0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, {2, 3}));
  net.bias.set_grad(from_vector({1.0, -2.0}, {2}));
  adam.step();
}

// A run's settings as a program saves them (examples/mnist/train_settings.cpp).
Metadata settings_of(int64_t epochs, int64_t steps_per_epoch) {
  return {{"model", "tiny"},
          {"run.batch", "32"},
          {"run.batches_per_epoch", std::to_string(steps_per_epoch)},
          {"run.epochs", std::to_string(epochs)},
          {"run.total_steps", std::to_string(epochs * steps_per_epoch)},
          {"run.lr", "0.002"}};
}

}  // namespace

TEST_CASE("run continue: --resume goes on to a larger --epochs and refuses fewer than done", "[run_state]") {
  RunPosition done;  // a finished 4-epoch run of 10 steps an epoch
  done.epoch = 4;
  done.step = 40;
  const Metadata saved = examples::resumable_metadata(settings_of(4, 10), 1, done);

  const RunPosition at = examples::resume_position("m.ckpt", saved, settings_of(6, 10), 2);
  CHECK(at.epoch == 4);
  CHECK(at.step == 40);
  CHECK(examples::run_length_note(saved, settings_of(6, 10)) ==
        "extending the run from 4 epoch(s) (40 steps) to 6 (60 steps): the learning-rate schedule is recomputed "
        "for 60 steps");
  CHECK(examples::run_length_note(saved, settings_of(4, 10)).empty());

  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings_of(3, 10), 2),
                    "--resume m.ckpt: the saved run has done 4 epoch(s), 40 steps, more than this run's --epochs 3 "
                    "(30 steps); give at least as many epochs as are done to go on");
  // Other settings are still refused, named by their flags, the length among them only when it is short.
  Metadata other = settings_of(6, 10);
  other["run.lr"] = "0.5";
  other["rnn"] = "lstm";
  Metadata saved_rnn = saved;
  saved_rnn["rnn"] = "gru";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved_rnn, other, 2),
                    Catch::Contains("(--rnn: saved gru, asked lstm; --lr: saved 0.002, asked 0.5)"));
  CHECK(examples::flag_of_setting("gru_hidden") == "--hidden");
  CHECK(examples::flag_of_setting("not.a.key") == "not.a.key");
}

TEST_CASE("run continue: --resume loads the optimizer, --init-from the weights only", "[run_state]") {
  TempDir dir;
  TinyNet trained(9);
  Adam adam(trained.parameters(), AdamOptions{});
  one_adam_step(trained, adam);
  one_adam_step(trained, adam);
  fill_(trained.running, 42);
  RunPosition done;
  done.epoch = 2;
  done.step = 2;
  save_checkpoint(dir.file("m.ckpt"), trained, &adam, examples::resumable_metadata(settings_of(2, 1), 1, done));

  SECTION("--resume") {
    TinyNet net;
    Adam adam2(net.parameters(), AdamOptions{});
    const examples::ResumedRun r =
        examples::resume_run(dir.file("m.ckpt"), net, adam2, settings_of(3, 1), 2, {}, false, "");
    CHECK(r.start.step == 2);
    CHECK(adam2.step_count() == 2);
    CHECK(net.weight.to_vector<float>() == trained.weight.to_vector<float>());
    CHECK_THAT(r.length_note, Catch::StartsWith("extending the run from 2 epoch(s) (2 steps) to 3 (3 steps)"));
  }
  SECTION("--init-from") {
    TinyNet net;
    Adam fresh(net.parameters(), AdamOptions{});
    const Metadata file = examples::init_from(dir.file("m.ckpt"), net, settings_of(5, 7), {"model"}, "");
    CHECK(file.at("epoch") == "2");
    CHECK(net.weight.to_vector<float>() == trained.weight.to_vector<float>());  // the weights
    CHECK(net.bias.to_vector<float>() == trained.bias.to_vector<float>());
    CHECK(net.running.to_vector<double>() == std::vector<double>{42, 42});     // and the buffers
    CHECK(fresh.step_count() == 0);  // the optimizer is new: its first step is a first step
    // Another model is refused before a tensor is copied, naming the flag.
    Metadata other = settings_of(5, 7);
    other["model"] = "bigger";
    TinyNet untouched;
    CHECK_THROWS_WITH(examples::init_from(dir.file("m.ckpt"), untouched, other, {"model"}, ""),
                      Catch::Contains("the saved model is not this run's (--model: saved tiny, asked bigger)"));
    CHECK(untouched.weight.to_vector<float>()[0] == 1);
  }
  SECTION("--init-from with --resume is refused") {
    examples::RunFlags flags;
    flags.resume = dir.file("m.ckpt");
    flags.init_from = dir.file("m.ckpt");
    CHECK_THROWS_WITH(flags.check(), Catch::Contains("give one of them"));
  }
}

TEST_CASE("run estimate: the whole run's time left from injected times", "[run_estimate]") {
  // 3 epochs of 100 steps; an evaluation guessed at 10 steps' time until one is measured.
  examples::RunEstimate estimate(3, 100, 300, 10);
  // In epoch 1 at 2 s a step, 50 s of it left: 50 + its evaluation (10 x 2) + 2 epochs x (200 + 20).
  CHECK(estimate.remaining(1, 50, 2.0, false) == Approx(50 + 20 + 2 * 220));
  // Epoch 1 measured: 100 steps in 150 s (1.5 s a step), its evaluation 30 s: the next epochs use them.
  estimate.epoch_done(100, 150, 30);
  CHECK(estimate.step_seconds(99) == Approx(1.5));
  CHECK(estimate.eval_seconds(99) == Approx(30));
  CHECK(estimate.remaining(1, 0, 0, true) == Approx(2 * (150 + 30)));  // at epoch 1's end
  CHECK(estimate.remaining(2, 75, 1.5, false) == Approx(75 + 30 + 180));
  estimate.epoch_done(100, 250, 10);  // a slower epoch: the means move
  CHECK(estimate.remaining(2, 0, 0, true) == Approx(200 + 20));
  CHECK(estimate.remaining(3, 0, 0, true) == Approx(0));

  // The last epoch cut short (captcha's --steps 250 of 100-step epochs), and a run without evaluations.
  examples::RunEstimate cut(3, 100, 250, 0, /*evaluates=*/false);
  CHECK(cut.remaining(1, 100, 1.0, false) == Approx(100 + 150));
}

TEST_CASE("run estimate: a CPU run projected past an hour warns, naming the time and the recipe",
          "[run_estimate]") {
  CHECK(examples::long_run_warning("captcha", 3600, 12, 500, 0.6, "try: captcha train --recipe cpu").empty());
  CHECK(examples::long_run_warning("captcha", 75813, 12, 500, 12.6, "try: captcha train --recipe cpu") ==
        "captcha: warning: on this CPU the run needs about 21:03:33 more (12 epoch(s) of 500 steps, 13 s a step); "
        "try: captcha train --recipe cpu");
}

TEST_CASE("progress: an epoch's line shows the whole run's time left when given", "[run_estimate]") {
  char path[] = "/tmp/minidl_test_progress_XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  std::FILE* out = ::fdopen(fd, "w+");
  {
    Progress progress("epoch 1/3", 8, Progress::Mode::plain, out, 1e9);
    double seen_eta = -1;
    progress.set_run_remaining([&](double eta, double) {
      seen_eta = eta;
      return 7322.0;  // 2:02:02
    });
    progress.update(2, 64, 0.5, 0.25);  // 25%: a plain line
    CHECK(seen_eta >= 0);
  }
  std::rewind(out);
  char line[256] = {};
  REQUIRE(std::fgets(line, sizeof line, out));
  std::fclose(out);
  ::unlink(path);
  CHECK_THAT(std::string(line), Catch::Contains("ETA epoch ") && Catch::Contains(", run ~2:02:02"));
}
