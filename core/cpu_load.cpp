// core/cpu_load.cpp — the cores, load and threads of core/cpu_load.h.
#include "core/cpu_load.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace minidl {

double CpuLoad::free_cores() const {
  if (!load_known()) return cores;
  return std::max(0.0, cores - load1);
}

CpuLoad read_cpu_load(const std::string& loadavg_path) {
  CpuLoad l;
  l.cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
#ifdef _OPENMP
  l.threads = omp_get_max_threads();
#endif
  std::ifstream in(loadavg_path);
  double one = 0, five = 0, fifteen = 0;
  if (in >> one >> five >> fifteen && one >= 0 && five >= 0 && fifteen >= 0) {
    l.load1 = one;
    l.load5 = five;
    l.load15 = fifteen;
  }
  return l;
}

std::string describe_load(const CpuLoad& l) {
  char buf[128];
  if (l.load_known())
    std::snprintf(buf, sizeof buf, "load average %.2f %.2f %.2f on %d cores", l.load1, l.load5, l.load15, l.cores);
  else
    std::snprintf(buf, sizeof buf, "load average unknown on %d cores", l.cores);
  return buf;
}

std::string oversubscription_warning(const CpuLoad& l) {
  if (!l.load_known() || l.threads <= l.free_cores() + kLoadSlack) return "";
  // The most threads that fit: the free cores, rounded as the test above rounds them, and at least one.
  const int fit = std::max(1, static_cast<int>(std::floor(l.free_cores() + kLoadSlack)));
  const std::string advice = fit < l.threads
                                 ? "set OMP_NUM_THREADS=" + std::to_string(fit) + " or run on an idle machine"
                                 : "run on an idle machine";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%d OpenMP thread(s) but %d cores with a 1-minute load of %.2f (%.2f free): threads wait for cores, "
                "so times measured now vary and understate this code; %s",
                l.threads, l.cores, l.load1, l.free_cores(), advice.c_str());
  return buf;
}

}  // namespace minidl
