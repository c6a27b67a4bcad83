// core/kernel_profile.h — what MINIDL_PROFILE prints at exit: the table of kernel times, a row per (key,
// device, kernel, call shape), and with MINIDL_PROFILE=shapes the run's shapes as `minidl bench` arguments.
//
// The dispatcher gathers the rows (KernelRegistry::note_time, core/dispatch.h); this file only turns them
// into text. One kernel serving a layer of each size gets one row per size, so a table of a training run
// says which layer's call is slow, not only which kernel:
//
//   [minidl profile] kernel (key device name)         calls   total ms  share    ms/call  shape
//   [minidl profile] conv2d.backward_weight cpu im2col_blas  10  306.7  13.1%    30.6738  64x32x26x26,...
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "core/dispatch.h"

namespace minidl {

// The table, rows by total time, each with its share of all kernel time, calls, total and mean time.
void print_profile_table(std::vector<KernelRegistry::ProfileRow> rows, std::FILE* out);

// The distinct `--shape KEY:SPEC` arguments of the rows (core/profile_shapes.h), the most time first; rows
// whose key has no bench spec are left out.
std::vector<std::string> profile_bench_shapes(const std::vector<KernelRegistry::ProfileRow>& rows);

// MINIDL_PROFILE=shapes at exit: the arguments, one "--shape KEY:SPEC" a line, into the file at `path`
// ("" for `out`), and on `out` the `minidl bench` command that reads them, for the device of most time.
void write_profile_shapes(const std::vector<KernelRegistry::ProfileRow>& rows, const std::string& path,
                          std::FILE* out);

}  // namespace minidl
