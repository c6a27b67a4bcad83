// tools/kernel_table.cpp — `minidl kernels`. The signature column names the alias of
// ops/kernel_signatures.h a key's kernels implement; it comes from the bench's case table
// (tools/bench/cases.cpp), which states the signature of every key it knows how to call.
#include "tools/kernel_table.h"

#include <algorithm>
#include <set>

#include "core/did_you_mean.h"
#include "core/dispatch.h"
#include "core/strings.h"
#include "tools/bench/case.h"

namespace minidl {

namespace {

std::string op_of(const std::string& key) { return key.substr(0, key.find('.')); }

// The signature alias of `k`'s key, checked against the type it was registered with.
std::string signature_of(const KernelInfo& k) {
  const bench::CaseKey* entry = bench::find_case_key(k.key);
  if (entry == nullptr) return "?";
  if (entry->signature_type != k.signature) return entry->signature + "(MISMATCH)";
  return entry->signature;
}

}  // namespace

bool key_selected(const std::string& key, const std::vector<std::string>& ops) {
  for (const std::string& o : ops)
    if (o == key || o == op_of(key)) return true;
  return false;
}

void check_ops_known(const std::vector<std::string>& ops, const std::string& who) {
  std::set<std::string> known_ops, known_keys;
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    known_ops.insert(k->op);
    known_keys.insert(k->key);
  }
  for (const std::string& o : ops) {
    if (known_ops.count(o) || known_keys.count(o)) continue;
    throw Error(str_cat(who, ": unknown op '", o, "'", did_you_mean(o, known_ops), "; ops: ", join(known_ops, ", "),
                        " (or a key such as conv2d.backward_input)"));
  }
}

void print_kernel_table(std::FILE* out, const std::vector<std::string>& ops, const std::string& device) {
  check_ops_known(ops, "kernels --op");
  int only_device = -1;
  if (!device.empty() && device != "all") {
    MINIDL_CHECK(device == "cpu" || device == "cuda", "kernels --device: unknown device '", device,
                 "'; devices: cpu, cuda, all");
    only_device = static_cast<int>(device == "cpu" ? DeviceType::cpu : DeviceType::cuda);
  }
  KernelRegistry& registry = KernelRegistry::instance();
  // The rows first, in the order dispatch tries the kernels of each (key, device): the selected one, then
  // by priority. Then the columns as wide as their longest entry (or wider), so that a long kernel name or signature
  // never pushes the rest of its row out of line.
  struct Row {
    std::string op, stage, dev, kernel, prio, is_default, signature, description;
  };
  std::vector<Row> rows = {{"op", "stage", "dev", "kernel", "prio", "default", "signature", "description"}};
  std::set<std::pair<std::string, int>> printed;
  for (const KernelInfo* first : registry.all()) {
    const auto id = std::make_pair(first->key, static_cast<int>(first->device));
    if (printed.count(id)) continue;
    if (!ops.empty() && !key_selected(first->key, ops)) continue;
    if (only_device >= 0 && id.second != only_device) continue;
    printed.insert(id);
    const std::vector<const KernelInfo*>& order = registry.candidates(first->key, first->device);
    for (const KernelInfo* k : order) {
      const std::string stage = k->key.size() > k->op.size() ? k->key.substr(k->op.size() + 1) : "forward";
      rows.push_back({k->op, stage, device_type_name(k->device), k->name, std::to_string(k->priority),
                      k == order.front() ? "*" : "", signature_of(*k), k->description});
    }
  }
  size_t w[7] = {14, 16, 5, 20, 4, 7, 26};  // at least these widths, so that short tables keep one layout
  for (const Row& r : rows) {
    const std::string* cells[7] = {&r.op, &r.stage, &r.dev, &r.kernel, &r.prio, &r.is_default, &r.signature};
    for (int c = 0; c < 7; ++c) w[c] = std::max(w[c], cells[c]->size());
  }
  for (const Row& r : rows)  // prio is a number: right-aligned
    std::fprintf(out, "%-*s %-*s %-*s %-*s %*s %-*s %-*s %s\n", int(w[0]), r.op.c_str(), int(w[1]), r.stage.c_str(),
                 int(w[2]), r.dev.c_str(), int(w[3]), r.kernel.c_str(), int(w[4]), r.prio.c_str(), int(w[5]),
                 r.is_default.c_str(), int(w[6]), r.signature.c_str(), r.description.c_str());
  const size_t count = rows.size() - 1;
  if (count == 0)
    std::fprintf(out, "(no kernel of %s on %s in this build)\n", ops.empty() ? "any op" : "these ops", device.c_str());
  std::fprintf(out,
               "\n* = default: dispatch tries the kernels of a key in this order (highest priority first, unless\n"
               "MINIDL_KERNELS or --kernel OP=NAME selects another) and the first that accepts the call serves it.\n"
               "OP=NAME selects every stage of OP that has a kernel NAME; OP.STAGE=NAME one stage, as listed here\n"
               "(conv2d.backward_input=naive, conv2d.forward=naive).\n"
               "Signatures: ops/kernel_signatures.h. Adding a kernel: docs/adding-a-kernel.md.\n");
}

}  // namespace minidl
