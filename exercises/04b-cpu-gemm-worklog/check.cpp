// exercises/04b-cpu-gemm-worklog/check.cpp — the checker of exercise 4b, the CPU GEMM worklog: each rung of
// gemm_rungs.cpp against minidl's naive matmul on odd sizes (edges of every tile, several slices of K,
// outputs that start as NaN, a guard after c), then the worklog's table: GFLOP/s of every rung that passed
// at 256^3, 512^3 and 1024^3 next to OpenBLAS's sgemm, with a hint where a rung is slower than the one
// before. Timing never decides pass or fail.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>
#include <vector>

#include "exercises/04b-cpu-gemm-worklog/gemm_rungs.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "tests/test_util.h"

#ifdef MINIDL_WITH_OPENBLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

// MINIDL_EXERCISE_VECTOR_FLAGS and MINIDL_EXERCISE_CPU_FEATURES: the flags CMake compiled the student's file with
// and the CPU features they use (exercises/CMakeLists.txt), for the table's heading and the run-time check.

using namespace minidl;

namespace {

using Gemm = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t);

struct Rung {
  int number;
  const char* name;      // the function in gemm_rungs.cpp
  const char* what;      // the table's row label
  Gemm fn;
  bool needs_avx2_fma;
  bool threaded;
  const char* if_slower;  // the hint when it is slower than the rung before
};

const Rung kRungs[] = {
    {1, "gemm_loop_order", "loop order m-k-n", worklog::gemm_loop_order, false, false, ""},
    {2, "gemm_cache_blocked", "+ cache blocking", worklog::gemm_cache_blocked, false, false,
     "Expected, and the reason for rung 3: rung 1's inner loop loads and stores c for every multiply-add, and "
     "tiles of b do not change that (the course measured it). The tiles pay once c stays in registers."},
    {3, "gemm_register_blocked", "+ register blocking", worklog::gemm_register_blocked, false, false,
     "The 4 x 16 accumulators must stay local variables for the whole slice of K (no load or store of c inside "
     "the k loop), and the loop over j must be the one vectorised: compile with -fopt-info-vec to see. GCC may "
     "vectorise along k instead (gathering b's column); `#pragma omp simd` on the j loop says which loop to use."},
    {4, "gemm_packed", "+ packing", worklog::gemm_packed, false, false,
     "Packing copies a and b once per block; it pays when the micro-kernel then runs from L1. Check that the "
     "micro-kernel reads a_pack and b_pack front to back, that b is packed once per (n0, k0), not per row, and "
     "that the micro-kernel's j loop is the one vectorised (-fopt-info-vec; `#pragma omp simd` on it)."},
    {5, "gemm_avx2_fma", "+ AVX2/FMA intrinsics", worklog::gemm_avx2_fma, true, false,
     "On a CPU with AVX-512, -march=native may already have compiled rung 4's plain loops into 16-float "
     "AVX-512 FMAs: hand-written 8-float AVX2 can then be slower. Compare with objdump -d (zmm against ymm)."},
    {6, "gemm_threaded", "+ threads", worklog::gemm_threaded, false, true,
     "Each thread needs its own packed panel of a; the packed block of b is shared and packed once, before the "
     "parallel loop. On a busy machine, or with OMP_NUM_THREADS=1, threads cannot help."},
};

const char* kFile = "exercises/04b-cpu-gemm-worklog/gemm_rungs.cpp";

// One rung on [M, K] x [K, N] against minidl's naive kernel. c starts as NaN and is followed by a guard of
// kGuard floats that must stay untouched.
std::string check_rung(const Rung& rung, int64_t M, int64_t N, int64_t K) {
  constexpr int64_t kGuard = 64;
  constexpr float kGuardValue = 12345.0f;
  const Tensor a = testing::uniform({1, M, K}, -1, 1, DType::float32);
  const Tensor b = testing::uniform({1, K, N}, -1, 1, DType::float32);
  Tensor expected_t = empty({1, M, N});
  exercise::call_kernel<MatmulKernel>("matmul", DeviceType::cpu, "naive", a, b, expected_t, false, false);
  const std::vector<float> expected = expected_t.to_vector<float>();
  std::vector<float> c(M * N + kGuard, NAN);
  std::fill(c.begin() + M * N, c.end(), kGuardValue);
  rung.fn(a.data<float>(), b.data<float>(), c.data(), M, N, K);
  for (int64_t i = M * N; i < M * N + kGuard; ++i)
    if (c[i] != kGuardValue)
      return str_cat("wrote past the end of c (c[", i, "], ", i - M * N + 1,
                     " floats after its last element, was changed): a row or column index past M or N at an edge tile?");
  const double atol = 1e-5 + 2e-7 * static_cast<double>(K), rtol = 1e-4;
  int64_t bad = 0, first = -1;
  double max_err = 0;
  for (int64_t i = 0; i < M * N; ++i) {
    const double err = std::fabs(static_cast<double>(c[i]) - expected[i]);
    if (!(err <= atol + rtol * std::fabs(expected[i]))) {  // written so that NaN counts as wrong
      if (first < 0) first = i;
      ++bad;
      max_err = std::isnan(err) ? err : std::max(max_err, err);
    }
  }
  if (bad == 0) return "";
  std::string where;
  for (int64_t i = first, shown = 0; i < M * N && shown < 4; ++i) {
    const double err = std::fabs(static_cast<double>(c[i]) - expected[i]);
    if (err <= atol + rtol * std::fabs(expected[i])) continue;
    where += str_cat("  c[", i / N, ", ", i % N, "] = ", c[i], ", expected ", expected[i], "\n");
    ++shown;
  }
  bool any_nan = false, wrong_all_zero = true;
  for (int64_t i = 0; i < M * N; ++i) {
    any_nan = any_nan || std::isnan(c[i]);
    const double err = std::fabs(static_cast<double>(c[i]) - expected[i]);
    if (!(err <= atol + rtol * std::fabs(expected[i]))) wrong_all_zero = wrong_all_zero && c[i] == 0.0f;
  }
  const std::string hint =
      any_nan ? "NaN: c starts as NaN here, so an element never written (an edge row or column skipped) stays NaN, "
                "and so does one added into (+=) before c was zeroed."
      : wrong_all_zero
          ? "Every wrong element is 0: zeroed but never updated. An edge tile skipped (the rows after the last "
            "full tile of 4 or 6, the columns after the last full 16), or a loop bound one short?"
          : "Wrong values: an index mixed up (a row stride, a tile's corner, a packed offset), or a slice of K "
            "counted twice or skipped?";
  return str_cat("c [", M, ", ", N, "] = a [", M, ", ", K, "] b [", K, ", ", N, "]: ", bad, " of ", M * N,
                 " elements wrong (the first below)\n", where, hint);
}

double gflops(double seconds, int64_t n) { return 2.0 * n * n * n / seconds / 1e9; }

// Seconds of one product n x n x n by `work` (the median of a few, after a warm-up and cache flushes).
double time_product(const std::function<void(const float*, const float*, float*, int64_t)>& work, int64_t n,
                    bool quick) {
  const Tensor a = testing::uniform({n, n}, -1, 1, DType::float32), b = testing::uniform({n, n}, -1, 1, DType::float32);
  std::vector<float> c(n * n);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  return exercise::median_seconds([&] { work(pa, pb, c.data(), n); }, Device::cpu(), quick ? 1 : 5);
}

int omp_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void set_omp_threads(int n) {
#ifdef _OPENMP
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// "load average 0.52 on 4 cores": other work on the machine slows every row, the threaded ones most.
std::string machine_load() {
  std::ifstream file("/proc/loadavg");
  double one_minute = -1;
  file >> one_minute;
  const unsigned cores = std::thread::hardware_concurrency();
  if (one_minute < 0) return str_cat(cores, " cores");
  return str_cat("load average ", one_minute, " on ", cores, " cores",
                 one_minute > 0.5 * cores ? ": the machine is busy, so times vary and understate your code" : "");
}

void print_row(const std::string& label, const std::vector<double>& values, const std::string& threads) {
  std::printf("  %-34s", label.c_str());
  for (double v : values) {
    if (v > 0)
      std::printf(" %9.1f", v);
    else
      std::printf(" %9s", "-");
  }
  std::printf("   %s\n", threads.c_str());
}

// The worklog's table: each passed rung, then OpenBLAS on one thread and on its default thread count.
void print_table(const std::vector<bool>& passed, bool quick) {
  const std::vector<int64_t> sizes = quick ? std::vector<int64_t>{256} : std::vector<int64_t>{256, 512, 1024};
  const bool avx2_fma = worklog::cpu_has_avx2_fma();
  std::printf("\nthe worklog's table: GFLOP/s of c = a b, float32, M = N = K (median of %d after a warm-up, cache "
              "flushed)\nyour file compiled with: %s\n%s\n\n",
              quick ? 1 : 5, MINIDL_EXERCISE_VECTOR_FLAGS[0] ? MINIDL_EXERCISE_VECTOR_FLAGS : "(no vector flags: baseline)",
              machine_load().c_str());
  std::printf("  %-34s", "rung");
  for (int64_t n : sizes) std::printf(" %9s", str_cat(n, "^3").c_str());
  std::printf("   threads\n");
  std::vector<double> previous;
  const Rung* previous_rung = nullptr;
  std::vector<std::string> hints;
  for (size_t i = 0; i < std::size(kRungs); ++i) {
    const Rung& r = kRungs[i];
    const std::string label = str_cat(r.number, " ", r.what);
    const std::string threads = r.threaded ? str_cat(omp_threads(), " (OMP_NUM_THREADS=", env_or("OMP_NUM_THREADS", "unset"), ")") : "1";
    if (r.needs_avx2_fma && !avx2_fma) {
      print_row(label, std::vector<double>(sizes.size(), 0), "skipped: this CPU has no AVX2/FMA");
      continue;
    }
    if (!passed[i]) {
      print_row(label, std::vector<double>(sizes.size(), 0), "not timed: its check failed");
      continue;
    }
    std::vector<double> row;
    for (int64_t n : sizes)
      row.push_back(gflops(time_product([&](const float* a, const float* b, float* c, int64_t s) { r.fn(a, b, c, s, s, s); },
                                        n, quick),
                           n));
    print_row(label, row, threads);
    if (previous_rung != nullptr && !previous.empty() && row.back() < previous.back())
      hints.push_back(str_cat("hint: rung ", r.number, " (", r.name, ") is slower than rung ", previous_rung->number, " at ",
                              sizes.back(), "^3 (", static_cast<int>(row.back()), " against ",
                              static_cast<int>(previous.back()), " GFLOP/s). ", r.if_slower));
    previous = row;
    previous_rung = &r;
  }
#ifdef MINIDL_WITH_OPENBLAS
  const int blas_threads = openblas_get_num_threads();
  auto sgemm = [](const float* a, const float* b, float* c, int64_t n) {
    const int s = static_cast<int>(n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, s, s, 1.0f, a, s, b, s, 0.0f, c, s);
  };
  std::vector<double> one, all;
  openblas_set_num_threads(1);
  for (int64_t n : sizes) one.push_back(gflops(time_product(sgemm, n, quick), n));
  openblas_set_num_threads(blas_threads);
  for (int64_t n : sizes) all.push_back(gflops(time_product(sgemm, n, quick), n));
  print_row(str_cat("OpenBLAS sgemm (", openblas_get_corename(), ")"), one, "1");
  print_row(str_cat("OpenBLAS sgemm (", openblas_get_corename(), ")"), all,
            str_cat(blas_threads, " (OPENBLAS_NUM_THREADS=", env_or("OPENBLAS_NUM_THREADS", "unset"), ")"));
  const std::string core = openblas_get_corename();
  std::printf("\n  OpenBLAS picked its \"%s\" kernels for this CPU (OPENBLAS_CORETYPE, which chooses them: %s).\n",
              core.c_str(), env_or("OPENBLAS_CORETYPE", "unset").c_str());
  // Pre-AVX kernel families: on some virtual machines OpenBLAS does not recognise the CPU and falls back to them.
  bool old_kernels = false;
  for (const char* name : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai", "Northwood", "Banias"})
    old_kernels = old_kernels || core == name;
  if (old_kernels && avx2_fma)
    hints.push_back(str_cat("hint: OpenBLAS chose its pre-AVX \"", core, "\" kernels on a CPU with AVX2 and FMA, so its row ",
                            "understates it: run again with OPENBLAS_CORETYPE=Haswell (AVX2) or SkylakeX (AVX-512)."));
#else
  std::printf("  %-34s (this build has no OpenBLAS: install libopenblas-dev and reconfigure)\n", "OpenBLAS sgemm");
#endif
  for (const std::string& h : hints) std::printf("\n%s\n", h.c_str());
  std::printf("\nCopy the table into your worklog with the date, your CPU (lscpu) and the flags above; hints never "
              "fail the exercise.\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {"4b", "the CPU GEMM worklog", kFile});
  c.require_cpu_features(MINIDL_EXERCISE_CPU_FEATURES, MINIDL_EXERCISE_VECTOR_FLAGS);
  const bool avx2_fma = worklog::cpu_has_avx2_fma();
  std::printf("your file is compiled with: %s\nthis CPU %s AVX2 and FMA (rung 5 %s)\n",
              MINIDL_EXERCISE_VECTOR_FLAGS[0] ? MINIDL_EXERCISE_VECTOR_FLAGS : "(no vector flags: baseline)",
              avx2_fma ? "has" : "does not have", avx2_fma ? "runs" : "is skipped");

  // Odd sizes: leftover rows and columns of every tile (4 x 16, 6 x 16, 128 x 256), several slices of K
  // (256) and blocks of N (512).
  struct Size {
    int64_t M, N, K;
    const char* why;
  };
  const Size sizes[] = {{1, 1, 1, "one element"},
                        {7, 13, 5, "smaller than every tile"},
                        {65, 257, 129, "one more than a tile in every dimension"},
                        {131, 67, 301, "two slices of K, ragged"},
                        {37, 531, 259, "N past one block of 512, K past one slice"}};
  std::vector<bool> passed;
  for (const Rung& r : kRungs) {
    c.section(str_cat("rung ", r.number, ": ", r.name, " (", r.what, ") against the naive reference"));
    if (r.needs_avx2_fma && !avx2_fma) {
      c.note("skipped: this CPU has no AVX2 and FMA (cpuid says so), so these instructions would stop the program "
             "(SIGILL). The other rungs are checked as usual.");
      passed.push_back(false);
      continue;
    }
    bool all = true;
    for (const Size& s : sizes) {
      std::string problem = "did not finish (an exception)";
      c.check(str_cat("rung ", r.number, ", ", s.M, " x ", s.N, " x ", s.K, " (M x N x K: ", s.why, ")"), [&] {
        if (!r.threaded) return problem = check_rung(r, s.M, s.N, s.K);
        // The threaded rung runs with at least 4 threads, three times: a race (two threads writing one
        // packed panel) must get the chance to show even where OMP_NUM_THREADS=1 or on a 2-core machine.
        const int threads_before = omp_threads();
        set_omp_threads(std::max(threads_before, 4));
        for (int run = 0; run < 3 && (problem = check_rung(r, s.M, s.N, s.K)).empty(); ++run) {
        }
        // And once on a product with many panels per thread, where two threads' packing overlaps in time.
        if (problem.empty() && &s == std::end(sizes) - 1) problem = check_rung(r, 606, 520, 300);
        set_omp_threads(threads_before);
        if (!problem.empty())
          problem += " (with 4 or more threads: if it passes with one thread, threads share something they each "
                     "write, such as one packed panel of a: a race)";
        return problem;
      });
      all = all && problem.empty();
      if (!all) {
        c.note(str_cat("(the other sizes of rung ", r.number, " are checked once this one passes)"));
        break;
      }
    }
    passed.push_back(all);
  }

  if (c.timing_requested()) print_table(passed, c.quick());
  return c.finish();
}
