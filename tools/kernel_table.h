// tools/kernel_table.h — `minidl kernels`: the dispatch table, printed.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace minidl {

// Prints every registered kernel of `ops` (op names or keys; all when empty) on `device` ("cpu", "cuda";
// "" or "all" for every device type): op, stage, device, kernel, priority, default, signature and
// description, in the order dispatch tries them. Throws an Error listing the ops for an unknown op, and
// the device types for an unknown device.
void print_kernel_table(std::FILE* out, const std::vector<std::string>& ops, const std::string& device);

// Throws an Error unless every entry of `ops` is a registered op or key; the message lists the ops and
// names the closest one ("unknown op 'matmull' (did you mean 'matmul'?); ops: add, ...").
void check_ops_known(const std::vector<std::string>& ops, const std::string& who);

// True when `key` belongs to one of `ops` (an op name or the key itself).
bool key_selected(const std::string& key, const std::vector<std::string>& ops);

}  // namespace minidl
