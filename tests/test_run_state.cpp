// tests/test_run_state.cpp — what the training programs share to stop and resume (examples/run_state.h):
// the resumable metadata round trip (epoch sums to the bit), refusing a file of another run, the decisions
// after each step and epoch, the resume command, and the SIGINT/SIGTERM handler: it only notes the first
// signal, a second one acts as without it (during a save, the checkpoint's temporary file is removed and
// the old file stays), and an ignored signal stays ignored.
#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "examples/run_state.h"
#include "nn/checkpoint.h"

using namespace minidl;
using examples::RunControl;
using examples::RunFlags;
using examples::RunPosition;

namespace {

// Gives SIGINT and SIGTERM their default dispositions for the scope (the test runner installs its own
// handlers, and a RunControl only installs over the default), and puts the runner's back after.
class DefaultStopSignals {
 public:
  DefaultStopSignals() {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &dfl, &saved_[0]);
    ::sigaction(SIGTERM, &dfl, &saved_[1]);
  }
  ~DefaultStopSignals() {
    ::sigaction(SIGINT, &saved_[0], nullptr);
    ::sigaction(SIGTERM, &saved_[1], nullptr);
  }

 private:
  struct sigaction saved_[2];
};

bool is_default(int sig) {
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  return !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL;
}

RunFlags with_save(const std::string& path) {
  RunFlags f;
  f.save = path;
  return f;
}

}  // namespace

TEST_CASE("run state: a position and its epoch sums survive the metadata to the bit", "[run_state]") {
  manual_seed(5);
  reserve_random_offset(1234);
  const examples::Metadata settings = {{"run.lr", examples::exact_number(0.1)}, {"run.seed", "5"}, {"model", "m"}};
  RunPosition at;
  at.epoch = 2;
  at.epoch_step = 17;
  at.step = 217;
  at.epoch_sums = {0.1 + 0.2, 1.0 / 3.0, 1e-300, 5e300, 1234567, 0};
  const examples::Metadata saved = examples::resumable_metadata(settings, 5, at);
  CHECK(saved.at("epoch") == "2");
  CHECK(saved.at("epoch_step") == "17");
  CHECK(saved.at("step") == "217");
  CHECK(saved.at("random_offset") == "1234");
  CHECK(saved.at("run.lr") == "0.10000000000000001");

  manual_seed(99);  // resuming restores the stream
  const RunPosition back = examples::resume_position("f.ckpt", saved, settings, 6);
  CHECK(back.epoch == 2);
  CHECK(back.epoch_step == 17);
  CHECK(back.step == 217);
  CHECK(back.epoch_sums == at.epoch_sums);  // == on doubles: the very same bits
  CHECK(current_seed() == 5);
  CHECK(current_random_offset() == 1234);

  // At an epoch's end there are no sums; files of older versions have no epoch_step (0).
  at.epoch_step = 0;
  examples::Metadata end = examples::resumable_metadata(settings, 5, at);
  CHECK(end.count("epoch_sums") == 0);
  end.erase("epoch_step");
  CHECK_FALSE(examples::resume_position("f.ckpt", end, settings, 6).mid_epoch());
}

TEST_CASE("run state: a file of another run, or of no resumable run, is refused", "[run_state]") {
  const examples::Metadata settings = {{"run.lr", "0.001"}, {"run.batch", "64"}, {"run.seed", "1"}};
  RunPosition at;
  at.epoch = 1;
  at.step = 10;
  examples::Metadata saved = examples::resumable_metadata(settings, 1, at);
  examples::Metadata other = settings;
  other["run.lr"] = "0.5";
  other["run.batch"] = "32";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, other, 2),
                    "--resume m.ckpt: the saved run had other settings; resume with the same flags (--batch: saved "
                    "64, asked 32; --lr: saved 0.001, asked 0.5)");
  other["run.new"] = "x";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, other, 2), Catch::Contains("run.new: saved (none), asked x"));
  // A setting the file has and this run has not (written only when on): refused too.
  examples::Metadata decayed = saved;
  decayed["run.weight_decay"] = "0.01";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", decayed, settings, 2),
                    Catch::Contains("--weight-decay: saved 0.01, asked (none)"));

  examples::Metadata plain = settings;  // saved by a run that was not resumable
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", plain, settings, 2),
                    Catch::Contains("no 'seed' in the file: it was not saved by a resumable run"));
  saved["epoch_step"] = "3";  // mid-epoch, but the sums are missing
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2), Catch::Contains("without 'epoch_sums'"));
  saved["epoch_sums"] = "1,2,3";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2),
                    Catch::Contains("'epoch_sums' has 3 numbers, this program keeps 2"));
  saved["epoch_sums"] = "1,x";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2),
                    Catch::Contains("not a list of finite numbers"));
  saved["epoch_sums"] = "1,nan";  // a count read from it becomes an integer: no NaN, no infinity
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2),
                    Catch::Contains("'epoch_sums' is '1,nan', not a list of finite numbers"));
  saved["epoch_sums"] = "1,-inf";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2),
                    Catch::Contains("not a list of finite numbers"));
  saved["epoch_sums"] = "1,2";
  saved["step"] = "12a";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2),
                    "--resume m.ckpt: 'step' is '12a', not a whole number from 0 to 9223372036854775807");
  saved["step"] = "-1";
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2),
                    Catch::Contains("'step' is '-1', not a whole number from 0"));
  saved["step"] = "12";
  saved["random_offset"] = "18446744073709551616";  // 2^64
  CHECK_THROWS_WITH(examples::resume_position("m.ckpt", saved, settings, 2),
                    "--resume m.ckpt: 'random_offset' is '18446744073709551616', not a whole number from 0 to "
                    "18446744073709551615");
}

TEST_CASE("run state: positions, flags and the resume command", "[run_state]") {
  RunPosition end;
  end.epoch = 2;
  end.step = 20;
  CHECK(examples::describe_position(end, 10) == "after epoch 2 (step 20)");
  RunPosition mid = end;
  mid.epoch_step = 3;
  mid.step = 23;
  CHECK(examples::describe_position(mid, 10) == "in epoch 3 after step 3 of 10, step 23 of the run");

  RunFlags f;
  f.stop_after_steps = 5;
  CHECK_THROWS_WITH(f.check(), Catch::Contains("--stop-after-steps needs --save FILE"));
  f.resume = "r.ckpt";  // a resumed run saves to its file
  CHECK_NOTHROW(f.check());
  CHECK(f.save_path() == "r.ckpt");
  f.save = "s.ckpt";
  CHECK(f.save_path() == "s.ckpt");
  RunFlags g;
  g.save_every = 100;
  CHECK_THROWS_WITH(g.check(), Catch::Contains("--save-every needs --save FILE"));

  // This test program's own command line, with --resume added (quoted for a shell) and "mpirun -np N"
  // in front for a job.
  const std::string cmd = examples::resume_command("my run.ckpt", 1);
  CHECK_THAT(cmd, Catch::StartsWith(std::string(program_invocation_name)));
  CHECK_THAT(cmd, Catch::EndsWith(" --resume 'my run.ckpt'"));
  CHECK_THAT(examples::resume_command("it's.ckpt", 4),
             Catch::StartsWith("mpirun -np 4 ") && Catch::EndsWith(" --resume 'it'\\''s.ckpt'"));
}

TEST_CASE("run control: when to save and stop after a step and after an epoch", "[run_state]") {
  DefaultStopSignals signals;
  RunFlags f = with_save("m.ckpt");
  f.save_every = 4;
  f.stop_after_steps = 10;
  {
    RunControl control("test", f, /*start_step=*/3, nullptr);  // resumed at step 3: stops at step 13
    auto d = control.after_step(4, false);
    CHECK((d.save && !d.stop));  // every 4 steps of the run
    d = control.after_step(5, false);
    CHECK((!d.save && !d.stop));
    d = control.after_step(8, true);  // an epoch's last step: the epoch's end decides
    CHECK((!d.save && !d.stop));
    CHECK_FALSE(control.after_epoch(8, false));
    d = control.after_step(13, false);  // 10 steps in this invocation
    CHECK((d.save && d.stop));
    CHECK(control.stop_reason() == examples::StopReason::steps_done);
    CHECK(control.exit_status() == 0);
  }
  RunFlags e = with_save("m.ckpt");
  e.stop_after_epochs = 2;
  {
    RunControl control("test", e, 0, nullptr);
    CHECK_FALSE(control.after_epoch(10, false));
    CHECK(control.after_epoch(20, false));
    CHECK(control.stop_reason() == examples::StopReason::epochs_done);
    RunPosition at;
    at.epoch = 2;
    at.step = 20;
    CHECK_THAT(control.stop_message(at, 10, true),
               Catch::StartsWith("test: stopped as asked (--stop-after-epochs 2) after epoch 2 (step 20); saved m.ckpt; "
                                 "resume with: ") &&
                   Catch::EndsWith(" --resume m.ckpt"));
  }
  {
    RunControl control("test", e, 0, nullptr);
    CHECK_FALSE(control.after_epoch(10, false));
    CHECK_FALSE(control.after_epoch(20, /*run_done=*/true));  // a finished run never "stops early"
  }
}

TEST_CASE("run control: SIGINT and SIGTERM are noted, the step finishes, and the exit status says which",
          "[run_state]") {
  DefaultStopSignals signals;
  for (int sig : {SIGINT, SIGTERM}) {
    INFO("signal " << sig);
    RunControl control("test", with_save("m.ckpt"), 0, nullptr);
    CHECK_FALSE(is_default(sig));  // the handler is installed
    auto d = control.after_step(1, false);
    CHECK((!d.save && !d.stop));
    ::raise(sig);  // noted, not fatal
    CHECK(examples::noted_stop_signal() == sig);
    CHECK(is_default(SIGINT));  // a second one would act as without the handler
    CHECK(is_default(SIGTERM));
    d = control.after_step(2, false);
    CHECK((d.save && d.stop));
    CHECK(control.stop_reason() == examples::StopReason::signal);
    CHECK(control.exit_status() == 128 + sig);
    RunPosition at;
    at.epoch_step = 2;
    at.step = 2;
    CHECK_THAT(control.stop_message(at, 5, true),
               Catch::StartsWith(std::string("test: interrupted by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                                 " in epoch 1 after step 2 of 5, step 2 of the run; saved m.ckpt; resume with: "));
  }
  CHECK(is_default(SIGINT));  // the destructor put the dispositions back
  CHECK(is_default(SIGTERM));

  // Without a file: stop, but nothing to save, and the message says so.
  {
    RunControl control("test", RunFlags{}, 0, nullptr);
    ::raise(SIGINT);
    const auto d = control.after_step(1, false);
    CHECK((!d.save && d.stop));
    RunPosition at;
    at.epoch_step = 1;
    at.step = 1;
    CHECK_THAT(control.stop_message(at, 5, false), Catch::Contains("nothing was saved (no --save FILE)"));
  }
  // At an epoch's last step, the epoch ends first (evaluation, save), then the run stops.
  {
    RunControl control("test", with_save("m.ckpt"), 0, nullptr);
    ::raise(SIGTERM);
    const auto d = control.after_step(5, /*epoch_done=*/true);
    CHECK((!d.save && !d.stop));
    CHECK(control.after_epoch(5, false));
    CHECK(control.exit_status() == 128 + SIGTERM);
  }

  // An ignored SIGINT stays ignored (nohup, a background job of a script).
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &before);
  {
    RunControl control("test", with_save("m.ckpt"), 0, nullptr);
    struct sigaction now {};
    ::sigaction(SIGINT, nullptr, &now);
    CHECK(now.sa_handler == SIG_IGN);
    ::raise(SIGINT);
    CHECK(examples::noted_stop_signal() == 0);
    CHECK_FALSE(control.after_step(1, false).stop);
  }
  ::sigaction(SIGINT, &before, nullptr);
}

namespace {
volatile std::sig_atomic_t g_raise_on_xfsz = 0;
extern "C" void raise_on_xfsz(int) { ::raise(g_raise_on_xfsz); }
}  // namespace

TEST_CASE("run control: a second Ctrl-C ends the process, and during the save, the old file stays whole",
          "[run_state]") {
  char tmpl[] = "/tmp/minidl_test_run_state_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string path = dir + "/m.ckpt";
  Checkpoint small, big;
  small.metadata["n"] = "1";
  big.tensors.emplace_back("x", zeros({1 << 20}));  // 4 MB: built before fork, the child runs no kernel
  write_checkpoint(path, small);

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    RunControl control("test", with_save(path), 0, nullptr);
    ::raise(SIGINT);  // the first: noted; the program goes on to save
    if (examples::noted_stop_signal() != SIGINT) ::_exit(12);
    // Mid-write, RLIMIT_FSIZE raises SIGXFSZ, whose handler raises the second SIGINT.
    g_raise_on_xfsz = SIGINT;
    struct sigaction on_xfsz {};
    on_xfsz.sa_handler = raise_on_xfsz;
    ::sigaction(SIGXFSZ, &on_xfsz, nullptr);
    struct rlimit limit;
    ::getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = 4096;
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_checkpoint(path, big);
    } catch (...) {
      ::_exit(10);  // the second signal did not end the process
    }
    ::_exit(11);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  if (WIFEXITED(status)) FAIL("the child exited with status " << WEXITSTATUS(status) << " instead of dying");
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  // The temporary file is gone and the old file is intact.
  CHECK(read_checkpoint(path).metadata.at("n") == "1");
  std::FILE* ls = ::popen(("ls -A '" + dir + "'").c_str(), "r");
  char line[256];
  std::string listing;
  while (std::fgets(line, sizeof line, ls)) listing += line;
  ::pclose(ls);
  CHECK(listing == "m.ckpt\n");
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("run state: data fingerprints are FNV-1a of the loaded data, and a resume on other data is refused",
          "[run_state]") {
  // FNV-1a's published test vectors (64 bits; fewer than 8 bytes, hashed byte by byte).
  CHECK(examples::fnv1a_64("", 0) == 0xcbf29ce484222325ull);
  CHECK(examples::fnv1a_64("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(examples::fnv1a_64("foobar", 6) == 0x85944171f73967e8ull);
  // Longer inputs: FNV-1a's step on each 8-byte word, then on each remaining byte.
  uint64_t expected = 0xcbf29ce484222325ull;
  uint64_t word = 0;
  for (int k = 7; k >= 0; --k) word = word << 8 | static_cast<unsigned char>("abcdefgh"[k]);  // little-endian
  expected = (expected ^ word) * 1099511628211ull;
  for (char c : std::string("ij")) expected = (expected ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  CHECK(examples::fnv1a_64("abcdefghij", 10) == expected);
  CHECK(examples::fnv1a_64("ij", 2, examples::fnv1a_64("abcdefgh", 8)) == expected);
  CHECK(examples::fnv1a_64("abcdefghik", 10) != expected);

  const Tensor images = from_vector({0.0, 0.5, 1.0, 0.25, 0.75, 0.125}, {3, 2});
  const Tensor labels = from_vector({1, 2, 3}, {3}, TensorOptions(DType::int64));
  const std::string fingerprint = examples::data_fingerprint(images, labels);
  CHECK_THAT(fingerprint, Catch::Matches("3 samples, fnv1a64 [0-9a-f]{16}"));
  CHECK(examples::data_fingerprint(images.clone(), labels.clone()) == fingerprint);
  // One label changed, or the same images in another order: another fingerprint.
  CHECK(examples::data_fingerprint(images, from_vector({1, 2, 4}, {3}, TensorOptions(DType::int64))) != fingerprint);
  CHECK(examples::data_fingerprint(images.slice(0, 0, 3).contiguous(), labels) == fingerprint);
  CHECK(examples::data_fingerprint(from_vector({0.25, 0.75, 0.0, 0.5, 1.0, 0.125}, {3, 2}), labels) != fingerprint);

  const std::vector<examples::DataFingerprint> now = {{"data.train", "--data", fingerprint},
                                                      {"data.val", "--val-data", "8 samples, fnv1a64 00000000000000aa"}};
  examples::Metadata saved = examples::fingerprint_metadata(now);
  CHECK(saved.at("data.train") == fingerprint);
  CHECK(examples::check_data_fingerprints("m.ckpt", saved, now, false).empty());

  examples::Metadata other = saved;
  other["data.train"] = "3 samples, fnv1a64 0123456789abcdef";
  CHECK_THROWS_WITH(examples::check_data_fingerprints("m.ckpt", other, now, false),
                    "--resume m.ckpt: the data is not the saved run's (--data gives " + fingerprint +
                        ", the saved run had 3 samples, fnv1a64 0123456789abcdef). Resume with the same data, or "
                        "give --resume-other-data to go on with this data");
  other["data.val"] = "8 samples, fnv1a64 00000000000000bb";
  CHECK_THROWS_WITH(examples::check_data_fingerprints("m.ckpt", other, now, false),
                    Catch::Contains("--data gives") && Catch::Contains("; --val-data gives"));
  CHECK_THAT(examples::check_data_fingerprints("m.ckpt", other, now, true),
             Catch::StartsWith("--resume-other-data: going on with other data than m.ckpt was trained on (--data "
                               "gives"));
  // A file saved before fingerprints existed resumes, and the log says the data was not checked.
  CHECK(examples::check_data_fingerprints("m.ckpt", {{"epoch", "1"}}, now, false) ==
        "m.ckpt has no fingerprint of its data (saved by an older minidl): resuming without checking that --data, "
        "--val-data give the same data");
}
