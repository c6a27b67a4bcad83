// core/kernel_profile.cpp — the MINIDL_PROFILE table and shape list (core/kernel_profile.h).
#include "core/kernel_profile.h"

#include <algorithm>
#include <map>

#include "core/profile_shapes.h"

namespace minidl {

void print_profile_table(std::vector<KernelRegistry::ProfileRow> rows, std::FILE* out) {
  double total = 0;
  for (const auto& r : rows) total += r.seconds;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  std::fprintf(out, "\n[minidl profile] %-44s %10s %10s %7s %10s  %s\n", "kernel (key device name)", "calls",
               "total ms", "share", "ms/call", "shape");
  for (const auto& t : rows)
    std::fprintf(out, "[minidl profile] %-44s %10lld %10.1f %6.1f%% %10.4f  %s\n", t.kernel.c_str(),
                 static_cast<long long>(t.calls), t.seconds * 1e3, total > 0 ? 100 * t.seconds / total : 0.0,
                 t.seconds * 1e3 / static_cast<double>(t.calls), t.shape.c_str());
  std::fprintf(out, "[minidl profile] %-44s %10s %10.1f\n", "all kernels", "", total * 1e3);
}

std::vector<std::string> profile_bench_shapes(const std::vector<KernelRegistry::ProfileRow>& rows) {
  std::map<std::string, double> seconds;  // "--shape KEY:SPEC" -> time of every row with it
  for (const auto& r : rows) {
    const std::string spec = bench_shape_spec(r.key, r.shape);
    if (!spec.empty()) seconds["--shape " + spec] += r.seconds;
  }
  std::vector<std::pair<std::string, double>> sorted(seconds.begin(), seconds.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> out;
  for (const auto& s : sorted) out.push_back(s.first);
  return out;
}

void write_profile_shapes(const std::vector<KernelRegistry::ProfileRow>& rows, const std::string& path,
                          std::FILE* out) {
  // The device the run spent most kernel time on: the one to bench.
  std::map<std::string, double> per_device;
  for (const auto& r : rows) per_device[r.device] += r.seconds;
  std::string device = "cpu";
  double most = -1;
  for (const auto& [name, seconds] : per_device)
    if (seconds > most) device = name, most = seconds;

  const std::vector<std::string> shapes = profile_bench_shapes(rows);
  if (!path.empty()) {
    std::FILE* file = std::fopen(path.c_str(), "w");
    if (!file) {
      std::fprintf(out, "[minidl profile] cannot write MINIDL_PROFILE_FILE %s\n", path.c_str());
      return;
    }
    for (const std::string& s : shapes) std::fprintf(file, "%s\n", s.c_str());
    std::fclose(file);
    std::fprintf(out, "[minidl profile] %zu shapes written to %s; bench them: minidl bench --device %s $(cat %s)\n",
                 shapes.size(), path.c_str(), device.c_str(), path.c_str());
    return;
  }
  std::string command = "minidl bench --device " + device;
  for (const std::string& s : shapes) command += " " + s;
  std::fprintf(out, "[minidl profile] %zu shapes; bench them: %s\n", shapes.size(), command.c_str());
}

}  // namespace minidl
