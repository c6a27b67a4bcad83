// core/dispatch.h — the one dispatch table: (kernel key, device type) -> several named kernels.
//
// A kernel key is "op" or "op.stage" ("matmul", "conv2d.backward_input"); the part before the dot is the
// op that users select kernels by. Each registered kernel has a name ("naive", "openblas", "cublas"),
// a one-line description and a priority. A kernel is a plain function returning bool:
//
//     bool matmul_openblas(const Tensor& a, const Tensor& b, Tensor& out, bool trans_a, bool trans_b);
//
// Returning false means "I decline this call" (a dtype or layout it does not handle); the dispatcher
// then tries the next kernel. Order of trial: the kernel the user selected for this op and device (if
// any), then the others by descending priority (Priority below). Each key is a typed object declared
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
// Logging: MINIDL_LOG_DISPATCH=1 prints which device and kernel served each key, once per (key, device,
// served kernel, kernels that declined first): "copy  cpu -> naive (after memcpy declined)" appears once,
// not every step. MINIDL_LOG_DISPATCH=2 prints every call and every decline.
// Numerics: MINIDL_CHECK_NUMERICS=1 checks every output of every call for NaN and infinity and names
// the first kernel that produced one (core/numerics.h).
// Profiling: MINIDL_PROFILE=1 times every kernel call on the host and prints a table at exit. CPU
// kernels are timed exactly; on a GPU the launch is asynchronous, so MINIDL_PROFILE=1 also synchronises
// the device after each call (slower, but the times are then the kernels' own).
#pragma once
#include <functional>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

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
  // name. Throws an Error listing what exists when the op or the name is unknown. name "" or "default"
  // clears the selection.
  void select(const std::string& op, DeviceType device, const std::string& name);
  // The selected name for (op, device), "" if none.
  std::string selected(const std::string& op, DeviceType device) const;

  // Every registered kernel, sorted by op, key, device, priority.
  std::vector<const KernelInfo*> all() const;
  // The name of the kernel that served the last call of (key, device), "" if none yet.
  std::string last_used(const std::string& key, DeviceType device) const;
  // The kernels that declined the last call of (key, device) before one accepted it.
  std::vector<std::string> last_declined(const std::string& key, DeviceType device) const;
  // Kernel `k` served a call after `declined` declined it: notes both, and logs them (MINIDL_LOG_DISPATCH).
  void note_used(const KernelInfo& k, const DeclinedKernels& declined);
  // Kernel `k` declined a call (logged at MINIDL_LOG_DISPATCH=2).
  void note_declined(const KernelInfo& k);
  // MINIDL_LOG_DISPATCH's level (0 off, 1 once per kernel, 2 every call); set_log_level overrides it.
  int log_level() const;
  void set_log_level(int level);
  // MINIDL_PROFILE: whether to time calls, and where the times go.
  bool profiling() const;
  void note_time(const KernelInfo& k, double seconds);
  struct ProfileRow {
    std::string kernel;  // "key device name"
    double seconds = 0;
    int64_t calls = 0;
  };
  std::vector<ProfileRow> profile_rows() const;

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

// Calls kernels[0], kernels[1], ... until one accepts the call. Throws when none does. The list comes
// from KernelRegistry::candidates; every kernel in it has the signature Fn (checked by the callers).
// [doc:dispatch_loop] quoted by docs/course/03-dispatch.md
template <class Fn, class... Args>
void call_first_accepting(const std::vector<const KernelInfo*>& kernels, const char* key, Device device,
                          Args&&... args) {
  KernelRegistry& registry = KernelRegistry::instance();
  const bool profiling = registry.profiling();
  DeclinedKernels declined;
  for (const KernelInfo* k : kernels) {
    Fn* fn = reinterpret_cast<Fn*>(k->fn);
    const double start = profiling ? profile_clock(device) : 0.0;
    if (fn(args...)) {
      if (profiling) registry.note_time(*k, profile_clock(device) - start);
      registry.note_used(*k, declined);
      if (numerics_checking()) check_kernel_outputs<Fn>(*k, args...);  // MINIDL_CHECK_NUMERICS (core/numerics.h)
      return;
    }
    registry.note_declined(*k);
    declined.add(*k);
  }
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

// API selection: select_kernel("matmul", DeviceType::cpu, "naive").
void select_kernel(const std::string& op, DeviceType device, const std::string& name);
// "matmul=naive,conv2d=im2col_blas": each NAME applies on every device type that has a kernel of that
// name for OP (at least one must). Throws a listing Error for unknown ops or names.
void select_kernels_from_spec(const std::string& spec);
// The kernel that served the last call of (key, device): "" if none yet. Tests assert with it.
std::string last_kernel(const std::string& key, DeviceType device);
inline std::string last_kernel(const KernelKeyBase& key, DeviceType device) { return last_kernel(key.name(), device); }
// The kernels that declined the last call of (key, device) before another served it.
std::vector<std::string> last_declined_kernels(const std::string& key, DeviceType device);
// Clears every selection (tests use it to restore defaults).
void reset_kernel_selection();

// Helper for programs: applies each "--kernel OP=NAME" value.
void select_kernels_from_flags(const std::vector<std::string>& specs);
// select_kernels_from_spec on a given registry (used while registering, to apply MINIDL_KERNELS).
void apply_kernel_spec(KernelRegistry& registry, const std::string& spec);

}  // namespace minidl
