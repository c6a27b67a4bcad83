// core/dispatch.cpp — the dispatch table: registration, selection (a kernel's name, or `auto`, for an op or
// one of its stages), the candidate lists, the usage notes and log, and the gathering of the profile
// (core/dispatch.h).
#include "core/dispatch.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/backend.h"
#include "core/capture.h"
#include "core/determinism.h"
#include "core/did_you_mean.h"
#include "core/kernel_auto.h"
#include "core/kernel_profile.h"
#include "core/selection_target.h"
#include "core/settings.h"

namespace minidl {

void ensure_registered();  // core/registry_init.cpp

// Whether a selection of `target` (an op, or one stage: core/selection_target.h) covers kernel k.
static bool in_target(const KernelInfo& k, const std::string& target) { return key_in_target(k.key, target); }
static std::string op_of(const std::string& key) { return op_of_key(key); }

// One (key, device) of the table: its current candidate list and what its last call did.
struct KeySlot {
  // The immutable list candidates() returns; null until built after the last change.
  std::atomic<const std::vector<const KernelInfo*>*> candidates{nullptr};
  // The last served call: the kernel (never freed, see "Thread safety"), and whether kernels declined
  // before it. A call served like the one before it changes neither and takes no lock.
  std::atomic<const KernelInfo*> last_used{nullptr};
  std::atomic<bool> last_had_declines{false};
  // `auto` is selected for this key and device and the key may be timed; set with each new list.
  std::atomic<bool> auto_select{false};
  // The names of the kernels that declined the last call, behind their own lock.
  mutable std::mutex usage_mutex;
  std::vector<std::string> last_declined;
};

struct KernelRegistry::Impl {
  std::mutex mutex;  // guards everything below but the slots' own state
  std::vector<std::unique_ptr<KernelInfo>> kernels;
  // (target, device) -> selected name, where the target is an op or "op.stage" (in_target above); op "*"
  // holds the `auto` of every op without a selection of its own
  std::map<std::pair<std::string, int>, std::string> selection;
  std::atomic<bool> any_auto{false};  // some selection is "auto" (watch() reads it on every call)
  // key -> its slot per device type (slots are never removed: a dispatch may hold one)
  std::unordered_map<std::string, std::array<std::unique_ptr<KeySlot>, kNumDeviceTypes>> slots;
  // Lists and kernels replaced or removed while the process runs: kept, because another thread may still
  // be walking a list (KernelRegistry's "Thread safety").
  std::vector<std::unique_ptr<const std::vector<const KernelInfo*>>> retired_lists;
  std::vector<std::unique_ptr<KernelInfo>> retired_kernels;
  std::set<std::string> logged;  // "key device served (declines)" lines already logged (level 1)
  std::atomic<int> log_level{0};
  std::atomic<bool> profile{false};
  ProfileMode profile_mode = ProfileMode::off;        // MINIDL_PROFILE, read once
  std::map<std::string, ProfileRow> timings;          // "key device name shape" -> totals
  AutoTable auto_table;                               // `auto`'s winners (core/kernel_auto.h)
  std::once_flag auto_file_read;                      // MINIDL_AUTO_FILE, read at the first `auto` call
  std::string auto_file;

  // The slot of (key, device), made on first use. Caller holds `mutex`.
  KeySlot& slot(const std::string& key, DeviceType device) {
    std::unique_ptr<KeySlot>& s = slots[key][static_cast<size_t>(device)];
    if (!s) s = std::make_unique<KeySlot>();
    return *s;
  }
  // The slot when it exists, else null. Caller holds `mutex`.
  KeySlot* find_slot(const std::string& key, DeviceType device) const {
    auto it = slots.find(key);
    return it == slots.end() ? nullptr : it->second[static_cast<size_t>(device)].get();
  }
  // Drops the list of a slot (the next candidates() builds it again), retiring the old one. Caller holds `mutex`.
  void invalidate(KeySlot& s) {
    const std::vector<const KernelInfo*>* old = s.candidates.exchange(nullptr);
    if (old) retired_lists.emplace_back(old);
  }
  // The selection of (target, device): its own, else the "*" one (`auto` for every op), else "". Caller
  // holds `mutex`.
  std::string selection_of(const std::string& target, DeviceType device) const {
    auto own = selection.find({target, static_cast<int>(device)});
    if (own != selection.end()) return own->second;
    auto every = selection.find({"*", static_cast<int>(device)});
    return every == selection.end() ? "" : every->second;
  }
  // The selection that orders the kernels of (key, device): the stage's own, else the op's. Caller holds `mutex`.
  std::string selection_for_key(const std::string& key, DeviceType device) const {
    auto stage = selection.find({stage_target_of(key), static_cast<int>(device)});
    return stage != selection.end() ? stage->second : selection_of(op_of(key), device);
  }
  // Builds the ordered list of (key, device): the selected kernel first, then by descending priority
  // (registration order between equal priorities). Under `auto` the list keeps the priority order: the
  // call puts its shape's winner first. Caller holds `mutex`.
  std::vector<const KernelInfo*> build_list(const std::string& key, DeviceType device) const {
    std::vector<const KernelInfo*> list;
    for (const auto& k : kernels)
      if (k->key == key && k->device == device) list.push_back(k.get());
    std::stable_sort(list.begin(), list.end(),
                     [](const KernelInfo* a, const KernelInfo* b) { return a->priority > b->priority; });
    const std::string selected = selection_for_key(key, device);
    auto chosen = std::find_if(list.begin(), list.end(), [&](const KernelInfo* k) { return k->name == selected; });
    if (chosen != list.end()) std::rotate(list.begin(), chosen, chosen + 1);
    return list;
  }
};

namespace {
void print_profile();
void save_auto_file();
}

KernelRegistry& KernelRegistry::during_registration() {
  static KernelRegistry registry;
  return registry;
}

KernelRegistry& KernelRegistry::instance() {
  ensure_registered();
  return during_registration();
}

KernelRegistry::Impl& KernelRegistry::impl() const {
  static Impl* state = [] {
    auto* s = new Impl();
    s->log_level = static_cast<int>(settings::log_dispatch.read());
    s->profile_mode = minidl::profile_mode();
    s->profile = s->profile_mode != ProfileMode::off;
    if (s->profile) std::atexit(print_profile);
    return s;
  }();
  return *state;
}

void KernelRegistry::add(KernelInfo info) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const auto& k : s.kernels) {
    MINIDL_CHECK(!(k->key == info.key && k->device == info.device && k->name == info.name),
                 "dispatch: kernel '", info.name, "' registered twice for ", info.key, " on ",
                 device_type_name(info.device));
    // Typed keys make a mismatch a compile error; this catches two key objects of one name.
    MINIDL_CHECK(k->key != info.key || k->signature == info.signature, "dispatch: kernel '", info.name, "' of '",
                 info.key, "' has another signature than kernel '", k->name, "' of the same key");
    // Equal priorities would leave the order to registration order: each kernel states its place.
    MINIDL_CHECK(!(k->key == info.key && k->device == info.device && k->priority == info.priority),
                 "dispatch: kernels '", k->name, "' and '", info.name, "' of ", info.key, " on ",
                 device_type_name(info.device), " have the same priority (", info.priority,
                 "): give '", info.name, "' another (core/dispatch.h, Priority)");
  }
  info.slot = &s.slot(info.key, info.device);
  s.invalidate(*info.slot);
  s.auto_table.forget(info.key, device_type_name(info.device));  // a new kernel has not been timed
  s.kernels.push_back(std::make_unique<KernelInfo>(std::move(info)));
}

bool KernelRegistry::remove(const std::string& key, DeviceType device, const std::string& name) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = std::find_if(s.kernels.begin(), s.kernels.end(), [&](const std::unique_ptr<KernelInfo>& k) {
    return k->key == key && k->device == device && k->name == name;
  });
  if (it == s.kernels.end()) return false;
  s.invalidate(s.slot(key, device));
  s.auto_table.forget(key, device_type_name(device));
  s.retired_kernels.push_back(std::move(*it));
  s.kernels.erase(it);
  return true;
}

int KernelRegistry::log_level() const { return impl().log_level.load(); }

void KernelRegistry::set_log_level(int level) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.log_level = level;
  s.logged.clear();
}

const std::vector<const KernelInfo*>& KernelRegistry::candidates(const KernelKeyBase& key, DeviceType device) {
  // The fast path: the key knows its slot and the slot holds a list. No lock, no string.
  KeySlot* slot = key.cached_slot(device);
  if (slot)
    if (const std::vector<const KernelInfo*>* list = slot->candidates.load()) return *list;
  if (!slot) {
    Impl& s = impl();
    std::lock_guard<std::mutex> lock(s.mutex);
    slot = &s.slot(key.name(), device);
    key.cache_slot(device, slot);
  }
  return candidates(key.name(), device);
}

const std::vector<const KernelInfo*>& KernelRegistry::candidates(const std::string& key, DeviceType device) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  KeySlot& slot = s.slot(key, device);
  if (const std::vector<const KernelInfo*>* list = slot.candidates.load()) return *list;
  auto* list = new std::vector<const KernelInfo*>(s.build_list(key, device));
  slot.auto_select.store(s.selection_for_key(key, device) == "auto" && kernel_auto_may_time(key));
  slot.candidates.store(list);
  return *list;
}

static std::string list_kernels_of(const std::vector<std::unique_ptr<KernelInfo>>& kernels, const std::string& target,
                                   int device) {
  std::set<std::string> names;
  for (const auto& k : kernels)
    if (in_target(*k, target) && (device < 0 || static_cast<int>(k->device) == device))
      names.insert(k->name + (device < 0 ? std::string("@") + device_type_name(k->device) : ""));
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

static std::string list_ops(const std::vector<std::unique_ptr<KernelInfo>>& kernels) {
  std::set<std::string> ops;
  for (const auto& k : kernels) ops.insert(k->op);
  std::string out;
  for (const auto& o : ops) out += (out.empty() ? "" : ", ") + o;
  return out;
}

// The stages of `op` as selection targets: "conv2d.backward_input, conv2d.backward_weight, conv2d.forward".
static std::string list_stages_of(const std::vector<std::unique_ptr<KernelInfo>>& kernels, const std::string& op) {
  std::set<std::string> stages;
  for (const auto& k : kernels)
    if (k->op == op) stages.insert(stage_target_of(k->key));
  std::string out;
  for (const auto& stage : stages) out += (out.empty() ? "" : ", ") + stage;
  return out;
}

// " (did you mean 'matmul'?)" for a misspelled op or stage, or a kernel name of `target` on `device`
// (core/did_you_mean.h).
static std::string suggest_target(const std::vector<std::unique_ptr<KernelInfo>>& kernels, const std::string& target) {
  std::set<std::string> targets;
  for (const auto& k : kernels) targets.insert(is_stage_target(target) ? stage_target_of(k->key) : k->op);
  return did_you_mean(target, targets);
}
static std::string suggest_kernel(const std::vector<std::unique_ptr<KernelInfo>>& kernels, const std::string& target,
                                  DeviceType device, const std::string& name) {
  std::set<std::string> names;
  for (const auto& k : kernels)
    if (in_target(*k, target) && k->device == device) names.insert(k->name);
  return did_you_mean(name, names);
}

// `op` is a selection target: an op, or one stage "op.stage" (in_target at the top of this file).
void KernelRegistry::select(const std::string& op, DeviceType device, const std::string& name) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  const int dev = static_cast<int>(device);
  const bool every_op = op == "*";
  bool op_known = every_op, name_known = name == "auto";
  for (const auto& k : s.kernels) {
    if (!in_target(*k, op)) continue;
    op_known = true;
    if (k->device == device && k->name == name) name_known = true;
  }
  if (!op_known && is_stage_target(op)) {  // a known op's unknown stage lists the stages, else the ops
    const std::string stages = list_stages_of(s.kernels, op_of(op));
    MINIDL_CHECK(stages.empty(), "kernel selection: unknown stage '", op, "'", suggest_target(s.kernels, op),
                 "; stages of ", op_of(op), ": ", stages, " (or ", op_of(op), " for all of them)");
  }
  MINIDL_CHECK(op_known, "kernel selection: unknown op '", op, "'", suggest_target(s.kernels, op), "; ops: ",
               list_ops(s.kernels));
  const bool clear = name.empty() || name == "default";
  MINIDL_CHECK(!every_op || clear || name == "auto", "kernel selection: every op ('*') can only be given auto, not '",
               name, "'");
  MINIDL_CHECK(clear || name_known, "kernel selection: ", is_stage_target(op) ? "stage '" : "op '", op,
               "' has no kernel '", name, "' on ", device_type_name(device),
               suggest_kernel(s.kernels, op, device, name), "; kernels there: ", list_kernels_of(s.kernels, op, dev),
               " (or auto: the fastest per call shape)");
  auto it = s.selection.find({op, dev});
  const std::string before = it == s.selection.end() ? "" : it->second;
  const std::string after = clear ? "" : name;
  if (before == after) return;  // nothing changes: the published lists stay
  if (clear)
    s.selection.erase(it);
  else
    s.selection[{op, dev}] = name;
  bool any_auto = false;
  for (const auto& entry : s.selection) any_auto = any_auto || entry.second == "auto";
  s.any_auto.store(any_auto);
  for (auto& [key, per_device] : s.slots)
    if ((every_op || op_of(key) == op || stage_target_of(key) == op) && per_device[static_cast<size_t>(device)])
      s.invalidate(*per_device[static_cast<size_t>(device)]);
}

std::string KernelRegistry::selected(const std::string& op, DeviceType device) const {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.selection_of(op, device);
}

bool KernelRegistry::is_selected(const std::string& key, DeviceType device, const std::string& name) const {
  const std::string by_stage = selected(stage_target_of(key), device);
  if (!by_stage.empty()) return by_stage == name;
  return selected(op_of_key(key), device) == name;
}

std::vector<const KernelInfo*> KernelRegistry::all() const {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<const KernelInfo*> out;
  for (const auto& k : s.kernels) out.push_back(k.get());
  std::stable_sort(out.begin(), out.end(), [](const KernelInfo* a, const KernelInfo* b) {
    if (a->op != b->op) return a->op < b->op;
    if (a->key != b->key) return a->key < b->key;
    if (a->device != b->device) return a->device < b->device;
    return a->priority > b->priority;
  });
  return out;
}

std::string KernelRegistry::last_used(const std::string& key, DeviceType device) const {
  Impl& s = impl();
  KeySlot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    slot = s.find_slot(key, device);
  }
  if (!slot) return "";
  const KernelInfo* used = slot->last_used.load();
  return used ? used->name : "";
}

void KernelRegistry::note_used(const KernelInfo& k, const DeclinedKernels& declined, const std::string& shape) {
  Impl& s = impl();
  KeySlot* slot = k.slot;
  if (slot->last_used.load() != &k || declined.count > 0 || slot->last_had_declines.load()) {
    std::lock_guard<std::mutex> lock(slot->usage_mutex);
    slot->last_used.store(&k);
    slot->last_had_declines.store(declined.count > 0);
    slot->last_declined.clear();
    for (int i = 0; i < declined.count; ++i) slot->last_declined.push_back(declined.kernels[i]->name);
  }
  const int level = s.log_level.load();
  if (level < 1) return;
  // Level 1 logs each (key, device, served kernel, kernels that declined) once, so a decline that
  // happens every step ("copy cpu memcpy declined") is logged once, with the kernel that served after it.
  std::string declines;
  for (int i = 0; i < declined.count; ++i) declines += (declines.empty() ? "" : ", ") + declined.kernels[i]->name;
  const std::string what = k.name + (declines.empty() ? "" : " (after " + declines + " declined)");
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (level < 2 && !s.logged.insert(k.key + " " + device_type_name(k.device) + " " + what).second) return;
  }
  // Level 2 adds the call's shape (core/call_shape.h).
  std::fprintf(stderr, "[minidl dispatch] %-28s %-5s -> %s%s%s\n", k.key.c_str(), device_type_name(k.device),
               what.c_str(), level >= 2 ? "  " : "", level >= 2 ? shape.c_str() : "");
}

void KernelRegistry::note_declined(const KernelInfo& k, const std::string& shape) {
  // Level 1 names the declines on the line of the kernel that served (note_used); level 2 shows each.
  if (impl().log_level.load() >= 2)
    std::fprintf(stderr, "[minidl dispatch] %-28s %-5s    %s declined, trying the next kernel  %s\n", k.key.c_str(),
                 device_type_name(k.device), k.name.c_str(), shape.c_str());
}

std::vector<std::string> KernelRegistry::last_declined(const std::string& key, DeviceType device) const {
  Impl& s = impl();
  KeySlot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    slot = s.find_slot(key, device);
  }
  if (!slot) return {};
  std::lock_guard<std::mutex> lock(slot->usage_mutex);
  return slot->last_declined;
}

std::vector<std::string> last_declined_kernels(const std::string& key, DeviceType device) {
  return KernelRegistry::instance().last_declined(key, device);
}

CallWatch KernelRegistry::watch(const std::vector<const KernelInfo*>& kernels) const {
  Impl& s = impl();
  CallWatch w;
  w.profile = s.profile.load(std::memory_order_relaxed);
  w.auto_select = s.any_auto.load(std::memory_order_relaxed) && !kernels.empty() &&
                  kernels.front()->slot->auto_select.load(std::memory_order_relaxed);
  w.shape = w.profile || w.auto_select || s.log_level.load(std::memory_order_relaxed) >= 2;
  return w;
}

bool KernelRegistry::profiling() const { return impl().profile; }

void KernelRegistry::set_profiling(bool on) { impl().profile = on; }

void KernelRegistry::note_time(const KernelInfo& k, const std::string& shape, double seconds) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::string id = k.key + " " + device_type_name(k.device) + " " + k.name;
  auto& t = s.timings[id + " " + shape];
  t.kernel = id;
  t.key = k.key;
  t.device = device_type_name(k.device);
  t.shape = shape;
  t.seconds += seconds;
  t.calls += 1;
}

void KernelRegistry::clear_profile() {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.timings.clear();
}

AutoTable& KernelRegistry::auto_table() { return impl().auto_table; }

const KernelInfo* KernelRegistry::auto_winner(const std::vector<const KernelInfo*>& kernels, Device device,
                                              const std::string& shape, bool& must_time) {
  must_time = false;
  // Deterministic mode keeps the usual order: a choice by timing could differ between runs. One kernel
  // needs no choice.
  if (kernels.size() < 2 || deterministic_algorithms()) return nullptr;
  Impl& s = impl();
  std::call_once(s.auto_file_read, [&s] {
    s.auto_file = settings::auto_file.read();
    if (s.auto_file.empty()) return;
    s.auto_table.load(s.auto_file);
    std::atexit(save_auto_file);
  });
  const std::string winner = s.auto_table.find(kernels.front()->key, device.str(), shape);
  for (const KernelInfo* k : kernels)
    if (!winner.empty() && k->name == winner) return k;
  // No winner yet (or its kernel is gone): time now, unless a CUDA graph is being captured on the device,
  // where a synchronisation is not allowed and every call is replayed as captured.
  must_time = !capture_offset_shift(device).defined();
  return nullptr;
}

const KernelInfo* KernelRegistry::auto_timed_winner(const std::vector<const KernelInfo*>& kernels, Device device,
                                                    const std::string& shape, const std::vector<AutoTiming>& timings) {
  const AutoTiming* best = nullptr;
  std::vector<AutoResult> times;
  for (const AutoTiming& t : timings) {
    const char* note = t.declined ? "declined" : t.not_timed ? "not timed (reference)" : t.cut ? "after its warm-up" : "";
    times.push_back({t.kernel->name, t.seconds, note});
    const bool candidate = !t.declined && !t.not_timed && !t.cut;
    if (candidate && (best == nullptr || t.seconds < best->seconds)) best = &t;  // ties: the higher priority
  }
  const std::string key = kernels.front()->key;
  if (best == nullptr) {
    std::fprintf(stderr, "%s\n", auto_choice_line(key, device.str(), shape, "", times).c_str());
    return nullptr;
  }
  const std::string kept = impl().auto_table.record(key, device.str(), shape, best->kernel->name);
  if (kept != best->kernel->name) {  // another thread timed this shape first: its choice stays
    for (const KernelInfo* k : kernels)
      if (k->name == kept) return k;
  }
  std::fprintf(stderr, "%s\n", auto_choice_line(key, device.str(), shape, kept, times).c_str());
  return best->kernel;
}

std::vector<KernelRegistry::ProfileRow> KernelRegistry::profile_rows() const {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<ProfileRow> rows;
  for (const auto& entry : s.timings) rows.push_back(entry.second);
  return rows;
}

double profile_clock(Device device) {
  if (!device.is_cpu()) backend_for(device.type).synchronize(device.index);
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {
// MINIDL_PROFILE at exit: the table, and with MINIDL_PROFILE=shapes the shapes (core/kernel_profile.h).
void print_profile() {
  const std::vector<KernelRegistry::ProfileRow> rows = KernelRegistry::instance().profile_rows();
  print_profile_table(rows, stderr);
  if (minidl::profile_mode() == ProfileMode::shapes) write_profile_shapes(rows, settings::profile_file.read(), stderr);
}

// MINIDL_AUTO_FILE at exit: the choices read and made. An exit cannot throw: a failure is printed.
void save_auto_file() {
  KernelRegistry& registry = KernelRegistry::instance();
  const std::string path = settings::auto_file.read();
  try {
    registry.auto_table().save(path);
  } catch (const Error& e) {
    std::fprintf(stderr, "[minidl auto] %s\n", e.what());
  }
}
}  // namespace

void select_kernel(const std::string& op, DeviceType device, const std::string& name) {
  KernelRegistry::instance().select(op, device, name);
}

void select_kernels_from_spec(const std::string& spec) { apply_kernel_spec(KernelRegistry::instance(), spec); }

void apply_kernel_spec(KernelRegistry& registry, const std::string& spec) {
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    MINIDL_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < item.size(), "kernel selection: '", item,
                 "' is not of the form OP=NAME (e.g. matmul=naive)");
    const std::string op = item.substr(0, eq), name = item.substr(eq + 1);
    // Apply on every device type that has this kernel name for this op ("auto": on every device type).
    bool applied = false;
    std::string first_error;
    for (DeviceType d : {DeviceType::cpu, DeviceType::cuda}) {
      try {
        registry.select(op, d, name);
        applied = true;
      } catch (const Error& e) {
        if (first_error.empty()) first_error = e.what();
      }
    }
    if (!applied) {
      // Rebuild a message that lists the kernels on every device.
      // Each kernel once, though it serves several keys of the op (conv2d, conv2d.backward_input, ...).
      std::set<std::string> unique, plain_names;
      std::string names;
      for (const KernelInfo* k : registry.all())
        if (in_target(*k, op) && unique.insert(k->name + "@" + device_type_name(k->device)).second) {
          names += (names.empty() ? "" : ", ") + k->name + "@" + device_type_name(k->device);
          plain_names.insert(k->name);
        }
      if (names.empty()) throw Error(first_error);
      throw Error(str_cat("kernel selection: ", is_stage_target(op) ? "stage '" : "op '", op, "' has no kernel '", name,
                          "'", did_you_mean(name, plain_names), "; kernels: ", names));
    }
  }
}

void select_kernels_from_flags(const std::vector<std::string>& specs) {
  for (const auto& s : specs) select_kernels_from_spec(s);
}

std::string last_kernel(const std::string& key, DeviceType device) {
  return KernelRegistry::instance().last_used(key, device);
}

void reset_kernel_selection() {
  KernelRegistry& registry = KernelRegistry::instance();
  std::set<std::string> targets;  // every op and every stage
  for (const KernelInfo* k : registry.all()) {
    targets.insert(k->op);
    targets.insert(stage_target_of(k->key));
  }
  targets.insert("*");
  for (const auto& target : targets)
    for (DeviceType d : {DeviceType::cpu, DeviceType::cuda})
      if (!registry.selected(target, d).empty()) registry.select(target, d, "");  // most have none: skip the check
}

}  // namespace minidl
