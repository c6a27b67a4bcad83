// core/dispatch.h — the one dispatch table: (kernel key, device type) -> several named kernels.
//
// A kernel key is "op" or "op.stage" ("matmul", "conv2d.backward_input"); the part before the dot is the
// op that users select kernels by (or one stage alone: "conv2d.backward_input", "conv2d.forward"). Each registered kernel has a name ("naive", "openblas", "cublas"),
// a one-line description and a priority. A kernel is a plain function returning bool:
//
//     bool matmul_openblas(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b);
//
// Returning false means "I decline this call" (a dtype or layout it does not handle); the dispatcher
// then tries the next kernel. Order of trial: the kernel the user selected for this stage or op and
// device (if any), then the others by descending priority (Priority below). Each key is a typed object declared
// next to its signature in ops/kernel_signatures.h (core/kernel_key.h): registration and dispatch take
// the object, so a kernel of the wrong signature does not compile:
//
//     register_kernel(keys::matmul, DeviceType::cpu, "openblas", Priority::tuned, "cblas_sgemm", matmul_openblas);
//     dispatch(keys::matmul, a.device(), a, b, out, trans_a, trans_b);
//
// Every kernel file registers its kernels through one function, listed in cpu/kernel_files.h or
// cuda/kernel_files.h.
//
// Selecting kernels at run time:
//   - API:         minidl::select_kernel("matmul", DeviceType::cpu, "naive");
//   - environment: MINIDL_KERNELS="matmul=naive,conv2d=im2col_blas"
//   - programs:    --kernel matmul=naive   (calls select_kernels_from_spec)
// `auto` (--kernel conv2d=auto, MINIDL_KERNELS='*=auto' for every op, select_kernel(op, device, "auto"))
// chooses per call shape by timing: the first call of each (key, device, shape) runs every kernel that
// accepts it (a warm-up call, then up to kAutoTimedCalls timed ones, the device synchronised as
// MINIDL_PROFILE does), keeps the fastest for the process, and prints one line saying what it chose and
// the times (a kernel that declined shows "declined"; it is never chosen). Later calls of the shape try the
// winner first (then the usual order, should it decline). MINIDL_AUTO_FILE=path loads the choices at the
// first `auto` call and saves them at exit, so the next run times nothing it has timed before. Not
// timed, so they keep the usual order: keys whose calls cannot be repeated (core/kernel_auto.h:
// optimizer steps, dropout masks, the sequence backwards, CTC), calls under --deterministic (timing
// would make the choice depend on the moment), and calls while a CUDA graph is being captured.
// Logging: MINIDL_LOG_DISPATCH=1 prints which device and kernel served each key, once per (key, device,
// served kernel, kernels that declined first): "copy  cpu -> naive (after memcpy declined)" appears once,
// not every step. MINIDL_LOG_DISPATCH=2 prints every call and every decline, with the call's shape.
// Numerics: MINIDL_CHECK_NUMERICS=1 checks every output of every call for NaN and infinity and names
// the first kernel that produced one (core/numerics.h).
// Profiling: MINIDL_PROFILE=1 times every kernel call on the host and prints a table at exit, a row per
// (key, device, kernel, call shape) with calls, total and mean time (core/kernel_profile.h). CPU kernels
// are timed exactly; on a GPU the launch is asynchronous, so MINIDL_PROFILE=1 also synchronises the device
// after each call (slower, but the times are then the kernels' own). MINIDL_PROFILE=shapes also writes the
// run's distinct shapes as `minidl bench --shape KEY:SPEC` arguments (to stderr, or to MINIDL_PROFILE_FILE),
// so a training run's real shapes can be benchmarked directly.
// The call's shape (core/call_shape.h) is described only when the profile, the level-2 log or `auto`
// needs it; otherwise a call costs what it did without them.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/call_shape.h"
#include "core/device.h"
#include "core/error.h"
#include "core/kernel_key.h"
#include "core/numerics.h"

namespace minidl {

using AnyFunction = void (*)();

// Priorities: the default kernel of a key on a device is the one of highest priority that accepts the
// call. The levels, from the bottom of a ladder to its top:
enum class Priority : int {
  reference = 0,  // the naive reference every other kernel is tested against (cpu/*_naive.cpp, CUDA v1_naive)
  portable = 10,  // plain parallel code: OpenMP loops, one CUDA thread per element, memcpy
  tuned = 20,     // tuned kernels and vendor libraries: BLAS, cuDNN, vectorised or register-blocked CUDA
  preferred = 30, // above the tuned and vendor kernels of its key: cuBLAS atop the matmul ladder,
                  // batch_norm's v2_split above cuDNN
};
// An order between two named levels: `Priority::tuned + 5`. Every use says why, in a comment.
constexpr Priority operator+(Priority p, int offset) { return static_cast<Priority>(static_cast<int>(p) + offset); }
constexpr Priority operator-(Priority p, int offset) { return p + (-offset); }

class AutoTable;  // core/kernel_auto.h

struct KernelInfo {
  std::string key;          // "conv2d.backward_input"
  std::string op;           // "conv2d"
  DeviceType device;        // cpu or cuda
  std::string name;         // "im2col_blas"
  std::string description;  // one line
  int priority = 0;         // the highest-priority kernel that accepts a call is the default
  AnyFunction fn = nullptr;
  std::type_index signature = typeid(void);
  KeySlot* slot = nullptr;  // its (key, device) entry of the table, set by KernelRegistry::add
};

// The kernels that declined one call before another served it (at most kMax are remembered), collected
// by dispatch() on its own stack: concurrent calls of the same key never mix their declines.
struct DeclinedKernels {
  static constexpr int kMax = 8;
  const KernelInfo* kernels[kMax] = {};
  int count = 0;
  void add(const KernelInfo& k) {
    if (count < kMax) kernels[count++] = &k;
  }
};

// What one call must do beyond calling its kernels in order (KernelRegistry::watch). All false unless
// MINIDL_PROFILE, MINIDL_LOG_DISPATCH=2 or an `auto` selection is on.
struct CallWatch {
  bool profile = false;      // time the call (MINIDL_PROFILE)
  bool shape = false;        // describe the call's shape (the profile, the level-2 log, `auto`)
  bool auto_select = false;  // `auto` is selected for this key and device, and the key may be timed
};

// One kernel's result when `auto` timed a call shape: the fastest of its timed calls, or declined.
struct AutoTiming {
  const KernelInfo* kernel = nullptr;
  double seconds = 0;
  bool declined = false;
  bool cut = false;        // its warm-up call alone was kAutoCutoff times slower than the best so far
  bool not_timed = false;  // a reference kernel, not timed because another kernel accepted the call
};
// `auto` times a kernel with one warm-up call, then up to kAutoTimedCalls calls, fewer once they have
// taken kAutoBudgetSeconds (at least one), and keeps the fastest (the least disturbed by a busy machine).
// Two limits keep the first call of a large shape from taking minutes:
//   - a kernel whose warm-up call took more than kAutoCutoff times the fastest timed kernel so far is not
//     called again (the warm-up time stands as its time: it cannot win);
//   - the reference kernels (Priority::reference, the naive loops every other kernel is tested against)
//     are timed only when no other kernel accepts the call: they are there to be right, and one naive
//     convolution of the captcha model takes 30 s on a CPU. Select one by name to use it.
constexpr int kAutoTimedCalls = 3;
constexpr double kAutoBudgetSeconds = 0.2;
constexpr double kAutoCutoff = 4.0;

// Thread safety: every member may be called from any thread at any time. The kernel lists that
// candidates() returns are immutable: selecting a kernel or registering one publishes new lists and
// retires the old ones without freeing them (nor the KernelInfo of a removed kernel) until the process
// ends, so a list a dispatch is walking stays valid whatever another thread selects meanwhile. A list is
// built at the first call of its (key, device) after a change; a selection that changes nothing builds
// none. The usage notes (last_used, last_declined) are per (key, device), each behind its own lock.
class KernelRegistry {
 public:
  // The registry with every kernel registered (registration happens on first use).
  static KernelRegistry& instance();
  // The registry as it is, without registering anything first: for the registration functions
  // themselves (register_kernel), which run while instance() is registering.
  static KernelRegistry& during_registration();

  // Adds a kernel. Throws when (key, device, name) exists, or when the key's other kernels were
  // registered with another signature (two key objects of one name and different types).
  void add(KernelInfo info);
  // Removes kernel `name` of (key, device); false when there is none. For tests and `minidl bench` tests,
  // which register a kernel of their own for a while (tests/test_util.h ScopedKernel).
  bool remove(const std::string& key, DeviceType device, const std::string& name);

  // The kernels to try for (key, device), in order: the selected one first, then by priority. The list
  // never changes and stays valid for the life of the process (see "Thread safety" above).
  // By key object: once the key has cached its slot and the list is built, this reads two atomic
  // pointers and takes no lock (the dispatch fast path).
  const std::vector<const KernelInfo*>& candidates(const KernelKeyBase& key, DeviceType device);
  // By name, for tests and tools that pick a key at run time (takes the registry's lock).
  const std::vector<const KernelInfo*>& candidates(const std::string& key, DeviceType device);

  // Makes `name` the first kernel tried for every key of `op` on `device` that has a kernel of that
  // name; `op` may also name one stage ("conv2d.backward_input", "conv2d.forward" for the forward key
  // alone), whose selection wins over its op's (core/selection_target.h). Throws an Error listing what exists when the op or the name is unknown. name "" or "default"
  // clears the selection. Name "auto" chooses per call shape by timing (the comment at the top); op "*"
  // with "auto" (or "" to clear) applies to every op that has no selection of its own.
  void select(const std::string& op, DeviceType device, const std::string& name);
  // The selected name for (op or stage, device), "" if none ("auto" under `auto`, also when it comes from "*").
  std::string selected(const std::string& op, DeviceType device) const;
  // Whether kernel `name` is the one selected for `key` on `device`: by the key's stage
  // ("conv2d.backward_weight") or, when the stage has no selection of its own, by its op ("conv2d").
  // Kernels that decline under strict FP32 or --deterministic unless the user asked for them by name ask this.
  bool is_selected(const std::string& key, DeviceType device, const std::string& name) const;

  // Every registered kernel, sorted by op, key, device, priority.
  std::vector<const KernelInfo*> all() const;
  // The name of the kernel that served the last call of (key, device), "" if none yet.
  std::string last_used(const std::string& key, DeviceType device) const;
  // The kernels that declined the last call of (key, device) before one accepted it.
  std::vector<std::string> last_declined(const std::string& key, DeviceType device) const;
  // Kernel `k` served a call after `declined` declined it: notes both, and logs them (MINIDL_LOG_DISPATCH;
  // `shape` is the call's, "" when not described).
  void note_used(const KernelInfo& k, const DeclinedKernels& declined, const std::string& shape = "");
  // Kernel `k` declined a call (logged at MINIDL_LOG_DISPATCH=2).
  void note_declined(const KernelInfo& k, const std::string& shape = "");
  // MINIDL_LOG_DISPATCH's level (0 off, 1 once per kernel, 2 every call); set_log_level overrides it.
  int log_level() const;
  void set_log_level(int level);
  // What a call of these kernels must do beyond calling them: one function call, then plain loads.
  CallWatch watch(const std::vector<const KernelInfo*>& kernels) const;
  // MINIDL_PROFILE: whether to time calls, and where the times go (core/kernel_profile.h).
  bool profiling() const;
  void note_time(const KernelInfo& k, const std::string& shape, double seconds);
  struct ProfileRow {
    std::string kernel;  // "key device name"
    std::string key;     // "conv2d.backward_input"
    std::string device;  // "cpu", "cuda"
    std::string shape;   // the calls' shape (core/call_shape.h)
    double seconds = 0;
    int64_t calls = 0;
  };
  std::vector<ProfileRow> profile_rows() const;
  // Drops every row (for tests).
  void clear_profile();
  // Turns the profile on or off for this process, whatever MINIDL_PROFILE says (for tests).
  void set_profiling(bool on);

  // `auto` (core/kernel_auto.h). The winner of (the kernels' key, device, shape) when one is known: timed
  // earlier or loaded from MINIDL_AUTO_FILE. Null with must_time set when the caller should time the
  // kernels now (auto_timed_winner), null with must_time clear when nothing is timed (deterministic mode,
  // a CUDA graph capture on `device`).
  const KernelInfo* auto_winner(const std::vector<const KernelInfo*>& kernels, Device device,
                                const std::string& shape, bool& must_time);
  // Records what timing found, logs the choice and returns the winner (null when every kernel declined).
  // When another thread recorded a winner of the same shape meanwhile, that one stays and is returned.
  const KernelInfo* auto_timed_winner(const std::vector<const KernelInfo*>& kernels, Device device,
                                      const std::string& shape, const std::vector<AutoTiming>& timings);
  // The table of winners, for tests and tools (save, clear, load).
  AutoTable& auto_table();

 private:
  KernelRegistry() = default;
  struct Impl;
  Impl& impl() const;
};

// Seconds on a monotonic clock, after waiting for `device` to finish its queued work (for MINIDL_PROFILE).
double profile_clock(Device device);

// Registers `fn` under `key` for `device`; `fn`'s type must be the key's signature (a compile error otherwise).
template <class Fn>
void register_kernel(const KernelKey<Fn>& key, DeviceType device, const std::string& name, Priority priority,
                     const std::string& description, typename KernelKey<Fn>::Signature* fn) {
  KernelInfo k;
  k.key = key.name();
  k.op = k.key.substr(0, k.key.find('.'));
  k.device = device;
  k.name = name;
  k.description = description;
  k.priority = static_cast<int>(priority);
  k.fn = reinterpret_cast<AnyFunction>(fn);
  k.signature = typeid(Fn);
  KernelRegistry::during_registration().add(std::move(k));
}

// Registers `fn` under a key named at run time: for tests and exercises that register a kernel of their
// own for a while (tests/test_util.h ScopedKernel). KernelRegistry::add checks the signature against
// the key's other kernels.
template <class Fn>
void register_kernel(const std::string& key, DeviceType device, const std::string& name, int priority,
                     const std::string& description, Fn* fn) {
  KernelInfo k;
  k.key = key;
  k.op = key.substr(0, key.find('.'));
  k.device = device;
  k.name = name;
  k.description = description;
  k.priority = priority;
  k.fn = reinterpret_cast<AnyFunction>(fn);
  k.signature = typeid(Fn);
  KernelRegistry::during_registration().add(std::move(k));
}

// Calls kernel k; true when it served the call. What the watch asks for happens around it: the time
// (MINIDL_PROFILE), the notes and the log, the check of its outputs (MINIDL_CHECK_NUMERICS).
template <class Fn, class... Args>
bool try_kernel(const KernelInfo& k, Device device, const CallWatch& watch, const std::string& shape,
                DeclinedKernels& declined, Args&... args) {
  KernelRegistry& registry = KernelRegistry::instance();
  Fn* fn = reinterpret_cast<Fn*>(k.fn);
  const double start = watch.profile ? profile_clock(device) : 0.0;
  if (!fn(args...)) {
    registry.note_declined(k, shape);
    declined.add(k);
    return false;
  }
  if (watch.profile) registry.note_time(k, shape, profile_clock(device) - start);
  registry.note_used(k, declined, shape);
  if (numerics_checking()) check_kernel_outputs<Fn>(k, args...);  // MINIDL_CHECK_NUMERICS (core/numerics.h)
  return true;
}

// `auto`: the kernel to try first for this call, the winner of its shape, found by timing every kernel
// of the list on this call when it is the shape's first (kernels overwrite their outputs, so calling
// them again is harmless; the keys for which it is not are never timed, core/kernel_auto.h). Null when
// there is no winner: then the usual order serves the call.
template <class Fn, class... Args>
const KernelInfo* auto_kernel(const std::vector<const KernelInfo*>& kernels, Device device, const std::string& shape,
                              Args&... args) {
  KernelRegistry& registry = KernelRegistry::instance();
  bool must_time = false;
  const KernelInfo* winner = registry.auto_winner(kernels, device, shape, must_time);
  if (!must_time) return winner;
  std::vector<AutoTiming> timings;
  double best = -1;  // the fastest accepting kernel's time so far; negative while none has accepted
  // Pass 0 times every kernel but the reference ones; pass 1 times those only when none accepted.
  for (int pass = 0; pass < 2; ++pass) {
    for (const KernelInfo* k : kernels) {
      const bool reference = k->priority <= static_cast<int>(Priority::reference);
      if (reference != (pass == 1)) continue;
      AutoTiming t;
      t.kernel = k;
      if (reference && best >= 0) {
        t.not_timed = true;
        timings.push_back(t);
        continue;
      }
      Fn* fn = reinterpret_cast<Fn*>(k->fn);
      const double warm_start = profile_clock(device);
      t.declined = !fn(args...);  // the warm-up call
      t.seconds = profile_clock(device) - warm_start;
      t.cut = !t.declined && best >= 0 && t.seconds > kAutoCutoff * best;
      double spent = 0;
      for (int i = 0; i < kAutoTimedCalls && !t.declined && !t.cut && spent < kAutoBudgetSeconds; ++i) {
        const double start = profile_clock(device);
        t.declined = !fn(args...);
        const double seconds = profile_clock(device) - start;
        t.seconds = i == 0 ? seconds : std::min(t.seconds, seconds);
        spent += seconds;
      }
      if (!t.declined && (best < 0 || t.seconds < best)) best = t.seconds;
      timings.push_back(t);
    }
  }
  return registry.auto_timed_winner(kernels, device, shape, timings);
}

// Calls kernels[0], kernels[1], ... until one accepts the call (under `auto`, the winner of the call's
// shape first). Throws when none does. The list comes from KernelRegistry::candidates; every kernel in
// it has the signature Fn (checked by the callers).
// [doc:dispatch_loop] quoted by docs/course/03-dispatch.md
// try_first_accepting: the same loop, returning false (instead of throwing) when every kernel declines.
template <class Fn, class... Args>
bool try_first_accepting(const std::vector<const KernelInfo*>& kernels, Device device, Args&&... args) {
  const CallWatch watch = KernelRegistry::instance().watch(kernels);
  const std::string shape = watch.shape ? describe_call(args...) : std::string();
  const KernelInfo* first = watch.auto_select ? auto_kernel<Fn>(kernels, device, shape, args...) : nullptr;
  DeclinedKernels declined;
  if (first && try_kernel<Fn>(*first, device, watch, shape, declined, args...)) return true;
  for (const KernelInfo* k : kernels)
    if (k != first && try_kernel<Fn>(*k, device, watch, shape, declined, args...)) return true;
  return false;
}

template <class Fn, class... Args>
void call_first_accepting(const std::vector<const KernelInfo*>& kernels, const char* key, Device device,
                          Args&&... args) {
  if (try_first_accepting<Fn>(kernels, device, args...)) return;
  MINIDL_CHECK(!kernels.empty(), key, ": no kernel is registered for device ", device.str());
  std::string tried;
  for (const KernelInfo* k : kernels) tried += (tried.empty() ? "" : ", ") + k->name;
  throw Error(str_cat(key, ": every kernel for ", device.str(), " declined this call (tried: ", tried,
                      "); unsupported dtype or layout?"));
}

// Calls the first kernel of `key` on `device` that accepts the call. Throws when none does. The key's
// type fixes Fn, and register_kernel accepted only kernels of that type, so no check is needed here.
template <class Fn, class... Args>
void dispatch(const KernelKey<Fn>& key, Device device, Args&&... args) {
  const std::vector<const KernelInfo*>& kernels = KernelRegistry::instance().candidates(key, device.type);
  call_first_accepting<Fn>(kernels, key.name(), device, std::forward<Args>(args)...);
}
// [/doc:dispatch_loop]

// Like dispatch, but returns false where dispatch throws because every kernel declined (or none is
// registered): for a front end with another way to serve the call (ops/bfloat16_widening.h).
template <class Fn, class... Args>
bool try_dispatch(const KernelKey<Fn>& key, Device device, Args&&... args) {
  const std::vector<const KernelInfo*>& kernels = KernelRegistry::instance().candidates(key, device.type);
  return try_first_accepting<Fn>(kernels, device, std::forward<Args>(args)...);
}

// For a fused key whose front end can run the unfused ops instead (conv2d_bias_relu): calls its kernels
// above the reference level in the usual order, and a reference kernel only when it is the one selected
// by name; false when none accepts (or none is registered), and the caller then runs the unfused ops.
// A fused reference kernel is there to be compared with, not to replace the unfused ops' fast kernels.
// `auto` does not apply here: the kernels are tried in the usual order.
template <class Fn, class... Args>
bool dispatch_fused(const KernelKey<Fn>& key, Device device, Args&&... args) {
  KernelRegistry& registry = KernelRegistry::instance();
  std::vector<const KernelInfo*> kernels;
  for (const KernelInfo* k : registry.candidates(key, device.type))
    if (k->priority > static_cast<int>(Priority::reference) || registry.is_selected(k->key, k->device, k->name))
      kernels.push_back(k);
  if (kernels.empty()) return false;
  const CallWatch watch = registry.watch(kernels);
  const std::string shape = watch.shape ? describe_call(args...) : std::string();
  DeclinedKernels declined;
  for (const KernelInfo* k : kernels)
    if (try_kernel<Fn>(*k, device, watch, shape, declined, args...)) return true;
  return false;
}

// The same by name, for tests that pick a key at run time: dispatch<UnaryKernel>("relu", device, x, out).
// Slower (a lock and a map lookup), and the signature is checked at run time.
template <class Fn, class... Args>
void dispatch(const std::string& key, Device device, Args&&... args) {
  const std::vector<const KernelInfo*>& kernels = KernelRegistry::instance().candidates(key, device.type);
  for (const KernelInfo* k : kernels)
    MINIDL_CHECK(k->signature == typeid(Fn), "dispatch: kernel '", k->name, "' of '", key,
                 "' was registered with another signature");
  call_first_accepting<Fn>(kernels, key.c_str(), device, std::forward<Args>(args)...);
}

// API selection: select_kernel("matmul", DeviceType::cpu, "naive"); "auto" chooses per shape by timing.
void select_kernel(const std::string& op, DeviceType device, const std::string& name);
// "matmul=naive,conv2d=im2col_blas": each NAME applies on every device type that has a kernel of that
// name for OP (at least one must). Throws a listing Error for unknown ops or names. "OP=auto" applies on
// every device type; "*=auto" to every op without a selection of its own.
void select_kernels_from_spec(const std::string& spec);
// The kernel that served the last call of (key, device): "" if none yet. Tests assert with it.
std::string last_kernel(const std::string& key, DeviceType device);
inline std::string last_kernel(const KernelKeyBase& key, DeviceType device) { return last_kernel(key.name(), device); }
// The kernels that declined the last call of (key, device) before another served it.
std::vector<std::string> last_declined_kernels(const std::string& key, DeviceType device);
// Clears every selection, "*=auto" included (tests use it to restore defaults). `auto`'s choices stay.
void reset_kernel_selection();

// Helper for programs: applies each "--kernel OP=NAME" value.
void select_kernels_from_flags(const std::vector<std::string>& specs);
// select_kernels_from_spec on a given registry (used while registering, to apply MINIDL_KERNELS).
void apply_kernel_spec(KernelRegistry& registry, const std::string& spec);

}  // namespace minidl
