// core/cpu_load.h — how busy the CPU is when a program measures something: its cores, the load average
// of /proc/loadavg and the OpenMP threads this process uses, and a one-line warning when those threads
// exceed the free cores (cores minus the 1-minute load). Then threads wait for a core, and a time or a
// speed measured now says more about the machine than about the code. `minidl bench` (tools/bench/
// machine.cpp) and the programs' `train` and `bench` (examples/run_environment.h) print it.
#pragma once
#include <string>

namespace minidl {

struct CpuLoad {
  int cores = 1;     // online processors (sysconf _SC_NPROCESSORS_ONLN)
  double load1 = -1, load5 = -1, load15 = -1;  // the load averages of /proc/loadavg; -1: unknown
  int threads = 1;   // OpenMP threads a parallel loop of this process uses (omp_get_max_threads; 1 without OpenMP)
  bool load_known() const { return load1 >= 0; }
  // cores - the 1-minute load, at least 0; all cores when the load is unknown.
  double free_cores() const;
};

// This machine and process now. `loadavg_path` is for tests, which pass a file of their own.
CpuLoad read_cpu_load(const std::string& loadavg_path = "/proc/loadavg");

// "load average 0.52 0.61 0.70 on 2 cores" ("load average unknown on 2 cores" without /proc/loadavg).
std::string describe_load(const CpuLoad& load);

// A half-busy core (daemons, a terminal) is not a reason to warn: threads count as too many only when
// they exceed the free cores by more than this.
constexpr double kLoadSlack = 0.5;

// "" when the threads fit the free cores (threads <= free cores + kLoadSlack, or the load is unknown);
// otherwise one line, e.g. "4 OpenMP threads but 2 cores with a 1-minute load of 1.62 (0.38 free): threads
// wait for cores, so times measured now vary and understate this code; set OMP_NUM_THREADS=1 or run on an
// idle machine" (the OMP_NUM_THREADS advice only when fewer threads would fit).
std::string oversubscription_warning(const CpuLoad& load);

}  // namespace minidl
