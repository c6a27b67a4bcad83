// examples/run_state.h — what both training programs (mnist train, captcha train) share to stop a run
// and continue it exactly: --save after every epoch and every --save-every N steps, --resume FILE,
// --stop-after-epochs N and --stop-after-steps N, and Ctrl-C. Implemented in examples/run_state.cpp (what
// a save holds, --resume, data fingerprints, the flags) and examples/run_control.cpp (RunControl: the
// signal handler, when to save and stop, and the command that resumes).
//
// Where a run is: (epoch, epoch_step, step) = epochs finished, steps of the next epoch done (0 at an
// epoch's end), optimizer steps of the whole run. A resumable checkpoint holds, next to the model and the
// optimizer's state (Adam's moments and step counts, its learning rate), everything the rest of the run
// depends on, as metadata (docs/checkpoint-format.md):
//   seed, epoch, epoch_step, step   where the run is
//   random_offset                   the position of the global random stream (dropout masks; core/random.h)
//   epoch_sums                      mid-epoch only: the running sums of the unfinished epoch (the program's
//                                   loss sum and counts), so that its summary covers all of its steps
//   run.*                           the settings that make the run what it is: --resume refuses a file
//                                   whose settings differ from the flags given, naming each
//   data.train, data.val            fingerprints of the data trained and validated on (below)
// The learning rate is a closed form of the step (nn/lr_schedule.h) and the order of the data a pure
// function of (seed, epoch) (nn/data.h), so both follow from the position: a resumed run goes on with the
// next batch of the same epoch (DataLoader::epoch(e, first_batch)), and on the CPU it ends bit for bit
// where the uninterrupted run ends (tests/mnist_resume_test.sh, tests/captcha_resume_test.sh).
//
// Data fingerprints. run.data says where the data came from and how many samples it has; it cannot tell
// a folder whose files were replaced, or a CSV file whose every label changed, from the one the run
// began with. So every file also holds, per data set, "<count> samples, fnv1a64 <16 hex digits>": the
// sample count and a 64-bit FNV-1a hash (fnv1a_64) of the bytes of the loaded inputs (float32, as the
// model reads them) then the labels (data_fingerprint()). --resume compares them with the data it has loaded and
// refuses a difference, naming the flag that chose the data (--data, --val-data); --resume-other-data
// goes on anyway, saying so, and the next save holds the new fingerprints. A file saved before
// fingerprints existed resumes as before, with a line saying the data could not be checked. Generated
// captchas are defined by their settings, which the fingerprint then is ("generated: seed 8, 1000
// captchas"). Hashing reads every byte once (docs/checkpoint-format.md gives its speed). The inputs are
// hashed after decoding and resizing, so the same files give the same fingerprint with the same build;
// another compiler or CPU could round a resized pixel differently (then --resume-other-data).
//
// Ctrl-C (SIGINT) and SIGTERM. While a RunControl lives, a handler notes the signal and does nothing
// else (async-signal-safe: it sets a flag, writes one line to stderr and restores the previous
// dispositions). The loop asks after every step; then the program saves a resumable checkpoint (when it
// has a save file), prints how to resume, and exits with 128 + the signal number (130 for SIGINT, 143 for
// SIGTERM). A second Ctrl-C acts as if there were no handler, ending the process at once: during a save,
// the checkpoint code removes its temporary file then and the previous file stays whole (nn/checkpoint.h).
// Signals that were ignored when the program started (nohup, a background job of a script) stay ignored.
//
// --distributed: every rank asks after every step, and the ranks agree (the largest signal number over
// the ranks: dist::max_over_ranks, one small host-side all-reduce), so all of them stop after the same
// step, even when only one got the signal, and none is left waiting in a collective; rank 0 saves. The
// epoch sums saved mid-epoch are the sums over the ranks; on resume, rank 0 starts from them (a job of
// any size that divides --batch can resume a file). Weights and optimizer state continue exactly; the
// epoch's summary and, for a model with batch norm, the running statistics saved mid-epoch (the ranks'
// average; each rank keeps its own until the epoch's end) agree with the uninterrupted job's up to the
// order of floating-point sums. Note that mpirun answers Ctrl-C by sending SIGTERM to every rank and
// SIGKILL one second later (Open MPI's odls_base_sigkill_timeout): to let the ranks save, start the job
// with `mpirun --mca odls_base_sigkill_timeout 60 ...`, or signal the rank processes instead of mpirun.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dist/data_parallel.h"
#include "dist/launch.h"
#include "nn/files.h"
#include "nn/module.h"

namespace examples {

// Where a run is (see the header comment).
struct RunPosition {
  int64_t epoch = 0;       // epochs finished
  int64_t epoch_step = 0;  // steps of epoch + 1 done; 0 at an epoch's end
  int64_t step = 0;        // optimizer steps of the run
  std::vector<double> epoch_sums;  // mid-epoch: the program's running sums of the unfinished epoch
  bool mid_epoch() const { return epoch_step > 0; }
};

using Metadata = std::map<std::string, std::string>;

// "%.17g": a number as text that reads back to the very same double.
std::string exact_number(double x);

// The metadata of a resumable checkpoint at `at`: `settings` (the run.* keys and whatever else --resume
// must compare), seed, epoch, epoch_step, step, random_offset (the stream's position now) and, mid-epoch,
// epoch_sums.
Metadata resumable_metadata(const Metadata& settings, uint64_t seed, const RunPosition& at);

// The flag that sets a saved setting ("rnn" -> "--rnn", "run.lr" -> "--lr"), for messages; an unknown key
// as it is.
std::string flag_of_setting(const std::string& key);
// The settings of `expected` for which `compared(key)` holds that differ from `saved`'s, and the run.*
// settings `saved` has and `expected` lacks, each named by its flag: "--rnn: saved gru, asked lstm; ...".
// "" when none differs.
std::string setting_differences(const Metadata& saved, const Metadata& expected,
                                const std::function<bool(const std::string&)>& compared);

// --resume: given the metadata of the file at `path` (read before any tensor is loaded, so that a file
// of another model is named by its flag rather than by a tensor's shape), refuses it when one of
// `expected`'s settings differs or the file has a run.* setting `expected` lacks (naming every difference
// by its flag), a key a resume needs is missing, a number is not plain decimal digits within its type
// (epoch, step and the rest are never negative; the epoch sums are finite), or a mid-epoch file has not
// `sums` epoch sums (the program's count); restores the global random stream, and returns where the run
// continues. Saved values quoted in an error are cut to 40 characters, bytes outside printable ASCII
// shown as '?'.
// The run's length (run.epochs, run.total_steps) may differ: a finished or unfinished run continues to a
// larger --epochs (the programs rebuild their learning-rate schedule for the new total and set it to the
// saved step: run_length_note); fewer steps than the file has done are refused, naming --epochs.
RunPosition resume_position(const std::string& path, const Metadata& saved, const Metadata& expected, size_t sums);
// "" when `expected` keeps the saved run's length, else the line for the log: "extending the run from 4
// epoch(s) (3752 steps) to 6 (5628 steps): the learning-rate schedule is recomputed for 5628 steps".
std::string run_length_note(const Metadata& saved, const Metadata& expected);

// A 64-bit FNV-1a hash of `size` bytes, continuing from `hash` (start: kFnv1aOffset). FNV-1a's step
// (xor, then multiply by its prime) is applied to 8 bytes at a time, a word as a little-endian machine
// stores it, then to the last size % 8 bytes one by one: eight times fewer multiplications than the
// byte-wise FNV-1a, whose value it gives for fewer than 8 bytes.
constexpr uint64_t kFnv1aOffset = 14695981039346656037ull;
uint64_t fnv1a_64(const void* bytes, size_t size, uint64_t hash = kFnv1aOffset);
// "60000 samples, fnv1a64 0123456789abcdef": inputs.size(0) samples and the hash of the bytes of
// `inputs` then `targets` (contiguous CPU tensors, as a TensorDataset holds them).
std::string data_fingerprint(const minidl::Tensor& inputs, const minidl::Tensor& targets);

// One data set's fingerprint as saved and compared: metadata key ("data.train", "data.val"), the flags
// that choose that data (for messages: "--data", "--val-data", "--val-count"), and the value.
struct DataFingerprint {
  std::string key, flags, value;
};
// The fingerprints as metadata, for every save.
Metadata fingerprint_metadata(const std::vector<DataFingerprint>& fingerprints);
// --resume: compares the fingerprints of the file at `path` with this run's. A difference is an Error
// naming the flags, both values and --resume-other-data, unless `other_data_allowed`. Returns a line
// for the log: "" when every fingerprint matches, else what was not checked (an older file) or what
// differs and goes on as asked.
std::string check_data_fingerprints(const std::string& path, const Metadata& saved,
                                    const std::vector<DataFingerprint>& fingerprints, bool other_data_allowed);

// "in epoch 2 after step 37 of 93, step 130 of the run" or, at an epoch's end, "after epoch 2 (step 186)".
std::string describe_position(const RunPosition& at, int64_t steps_per_epoch);

// Runs `save` (a mid-epoch save) with the ranks' average of every floating buffer (batch-norm running
// statistics) in `model`, then gives each rank its own buffers back: the file holds what an epoch's end
// would average, while training goes on as the uninterrupted job does (each rank updates its own until
// the epoch's end). Without a job (`dp` null) it just runs `save`. Collective.
void with_averaged_buffers(minidl::Module& model, minidl::dist::DataParallel* dp, const std::function<void()>& save);

// The command that continues this run from `file`: this process's command line (the program as it was
// typed, every flag) without --resume, --init-from, --save, --stop-after-epochs and --stop-after-steps, plus
// `--resume FILE`; "mpirun -np N " in front in a job of N processes. Arguments are quoted for a POSIX
// shell when they need it.
std::string resume_command(const std::string& file, int world_size);

// The flags both programs take for this.
struct RunFlags {
  std::string save, resume;
  std::string init_from;  // --init-from FILE: trained weights, a new run (examples/run_start.h)
  int64_t save_every = 0, stop_after_epochs = 0, stop_after_steps = 0;
  bool resume_other_data = false;  // --resume-other-data: go on when the data's fingerprints differ
  // Where saves go: --save, else the --resume file (a resumed run keeps saving to it). "" for neither.
  std::string save_path() const { return !save.empty() ? save : resume; }
  // Refuses --stop-after-* without a file to continue from, and --init-from with --resume (a usage
  // error, before any work).
  void check() const;
};
// The file checks of a training run, before any work (nn/files.h, nn/metrics.h): no output (the save
// file, `metrics`, `other_outputs` such as --save-best) is one of `data` (--data, --val-data) or inside
// one of their folders, or another output; --metrics and `other_outputs` are not the --resume file
// either (the save file may be: a resumed run keeps saving to it); and --metrics holds a metrics log or
// nothing. Throws minidl::OutputIsInputError (exit status 2) or an Error naming the flags.
void check_run_paths(const RunFlags& run, const minidl::NamedPath& metrics,
                     const std::vector<minidl::NamedPath>& other_outputs, const std::vector<minidl::NamedPath>& data);

// Adds --save, --resume, --init-from, --resume-other-data, --save-every, --stop-after-epochs and
// --stop-after-steps to a `train` command.
void add_run_flags(CLI::App& train, RunFlags& flags);

// Why a run stops before its end.
enum class StopReason { none, signal, epochs_done, steps_done };

// Decides, after each step and each epoch, whether to save mid-epoch and whether to stop; owns the
// SIGINT/SIGTERM handler (installed by the constructor, removed by the destructor: one at a time).
class RunControl {
 public:
  // `program` ("mnist"), for messages; `start_step`: the run's step where this invocation starts (0, or
  // the resumed position's). `job`: this rank's place in a --distributed job, or nullptr; it must
  // outlive the RunControl.
  RunControl(std::string program, const RunFlags& flags, int64_t start_step,
             const minidl::dist::DistributedRun* job);
  ~RunControl();
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;

  struct Decision {
    bool save = false;  // save a mid-epoch checkpoint now
    bool stop = false;  // then stop (stop_reason() says why)
  };
  // After every step of the loop, on every rank (in a job: collective; the ranks agree). `run_step`: the
  // run's step just done; `epoch_done`: it was the last of its epoch (the epoch's end decides then:
  // after_epoch()).
  Decision after_step(int64_t run_step, bool epoch_done);
  // After an epoch's end (evaluation and save done), on every rank (collective in a job). `run_done`:
  // nothing is left to train (then it never stops early: the run is complete). True: stop now.
  bool after_epoch(int64_t run_step, bool run_done);

  StopReason stop_reason() const { return reason_; }
  // 128 + the signal for a signal; 0 for --stop-after-epochs and --stop-after-steps.
  int exit_status() const;
  // The line to print when stopping at `at`: why, what was saved, how to resume. `saved`: whether a file
  // was written for this position.
  std::string stop_message(const RunPosition& at, int64_t steps_per_epoch, bool saved) const;

 private:
  bool signal_agreed();

  std::string program_;
  RunFlags flags_;
  int64_t start_step_;
  const minidl::dist::DistributedRun* job_;
  int64_t epochs_this_run_ = 0;
  int signal_ = 0;
  StopReason reason_ = StopReason::none;
};

// The signal a RunControl's handler noted since it was installed (0: none), in this process.
int noted_stop_signal();

}  // namespace examples
