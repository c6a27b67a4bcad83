// tools/bench/case.h — what `minidl bench` knows about one kernel key: how to build a problem of a given
// shape (its inputs, from a fixed seed), how many FLOPs and bytes it counts, and how to call any kernel
// registered for the key on it. The per-op definitions are in tools/bench/cases_*.cpp; the harness that
// times them is tools/bench/harness.cpp.
//
// Counting conventions (every FLOP and byte model in cases_*.cpp follows them):
//   - FLOPs: the arithmetic the key's formula needs (ops/kernel_signatures.h): an add, multiply, compare
//     or divide is 1, an FMA 2, and exp, log, tanh, sigmoid and sqrt are 1 each (they cost more, but a
//     count per call is what makes kernels of one key comparable). 0 for keys that only move data.
//   - bytes: compulsory traffic: every input read once and every output written once. A kernel that
//     reads its input twice (two-pass statistics) moves more; the GB/s column is then a lower bound.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace minidl {
namespace bench {

// One problem of one key at one shape, built on one device.
struct BenchCase {
  double flops = 0;  // counted arithmetic of one call
  double bytes = 0;  // compulsory memory traffic of one call
  // Puts the case's state back before a call, untimed: optimizer buffers restored, a fresh GRU reserve
  // made by the forward kernel of the same name. Returns "" or why kernel k cannot run the case.
  std::function<std::string(const KernelInfo& k)> prepare;
  // Calls kernel k (cast to the key's signature) on the case's tensors; false when k declines.
  std::function<bool(const KernelInfo& k)> run;
  // The tensors a call writes, compared with the reference kernel's.
  std::function<std::vector<Tensor>()> outputs;
};

// A shape the bench times by default, and where it comes from ("MNIST conv2", "large").
struct DefaultShape {
  DefaultShape(std::string spec_, std::string label_, std::string device_ = "")
      : spec(std::move(spec_)), label(std::move(label_)), device(std::move(device_)) {}
  std::string spec;
  std::string label;
  std::string device;  // "cpu" or "cuda" for a shape sized for one device type only; "" for both
};

// A key a family serves, with its kernels' signature: the alias of ops/kernel_signatures.h and its type.
struct CaseKey {
  std::string key;
  std::string signature;  // "MatmulKernel"
  std::type_index signature_type = typeid(void);
};
// keys_of<UnaryKernel>("UnaryKernel", {"neg", "exp"}); MINIDL_BENCH_KEYS(UnaryKernel, {"neg", "exp"}) spells
// the signature once.
template <class Fn>
std::vector<CaseKey> keys_of(const char* signature, std::initializer_list<const char*> keys) {
  std::vector<CaseKey> out;
  for (const char* k : keys) out.push_back({k, signature, typeid(Fn)});
  return out;
}
#define MINIDL_BENCH_KEYS(Signature, ...) ::minidl::bench::keys_of<Signature>(#Signature, __VA_ARGS__)
inline std::vector<CaseKey> concat(std::vector<CaseKey> a, const std::vector<CaseKey>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The keys that share a shape syntax and a case maker (the seven unary keys, the three conv2d stages).
struct CaseFamily {
  std::vector<CaseKey> keys;
  std::string syntax;       // the --shape syntax, "MxNxK[,ta][,tb][,bB]"
  std::string syntax_help;  // one line saying what the letters mean
  std::string example;      // a tiny shape in this syntax (the tests run every key at it)
  std::vector<DefaultShape> defaults;
  // Builds the case for (key, spec) on device d, its inputs from the global seed (the harness seeds it
  // the same way on every device). Throws an Error naming the syntax when spec does not follow it.
  std::function<BenchCase(const std::string& key, const std::string& spec, Device d)> make;
};

// Every family (tools/bench/cases.cpp), and the one serving `key` (nullptr when none does).
const std::vector<CaseFamily>& case_families();
const CaseFamily* find_case_family(const std::string& key);
// The entry of `key` in its family (nullptr when no family serves it).
const CaseKey* find_case_key(const std::string& key);

// The families of each file of cases.
void add_elementwise_cases(std::vector<CaseFamily>& families);  // cases_elementwise.cpp
void add_row_cases(std::vector<CaseFamily>& families);          // cases_rows.cpp
void add_dense_cases(std::vector<CaseFamily>& families);        // cases_dense.cpp
void add_norm_optim_cases(std::vector<CaseFamily>& families);   // cases_norm_optim.cpp
void add_sequence_cases(std::vector<CaseFamily>& families);     // cases_sequence.cpp

// ---------------------------------------------------------------- helpers for the case definitions

// Calls k's function as Fn (a signature of ops/kernel_signatures.h) after checking it was registered so.
template <class Fn, class... Args>
bool call_as(const KernelInfo& k, Args&&... args) {
  MINIDL_CHECK(k.signature == typeid(Fn), "bench: kernel '", k.name, "' of '", k.key,
               "' was registered with another signature than its bench case calls");
  return reinterpret_cast<Fn*>(k.fn)(std::forward<Args>(args)...);
}

// The parts of a shape spec: "128x64x32x32,128x64x3x3,s1p1" -> {"128x64x32x32", "128x64x3x3", "s1p1"}.
std::vector<std::string> split_spec(const std::string& spec);
// "64x32x26x26" -> {64, 32, 26, 26}; throws Error(what) unless every number is a positive integer.
Shape parse_dims(const std::string& text, const std::string& what);
// Letter options: "s2p1" -> {'s': {2, 2}, 'p': {1, 1}}, "k2x1" -> {'k': {2, 1}}; a letter without a
// number is {1, 1} ("bi"-style words are not options: check them before calling). Throws Error(what).
struct LetterOption {
  int64_t first = 1, second = 1;
};
std::vector<std::pair<char, LetterOption>> parse_letters(const std::string& text, const std::string& what);
// The error for a spec that does not follow the family's syntax.
[[noreturn]] void bad_spec(const std::string& key, const std::string& spec, const std::string& syntax,
                           const std::string& why);

// Inputs: float32 tensors from the global seed, made on the CPU and copied to d, so the reference (on the
// CPU) and the timed kernels (on d) see the same numbers.
Tensor uniform_input(const Shape& shape, double lo, double hi, Device d);
Tensor normal_input(const Shape& shape, Device d);
// int64 values in [lo, hi).
Tensor index_input(const Shape& shape, int64_t lo, int64_t hi, Device d);
// float32 outputs, uninitialised.
Tensor output(const Shape& shape, Device d);

// Runs the naive kernel of `key` on the CPU (used to make inputs that are a forward's outputs, such as a
// softmax y for softmax.backward). Fn is the key's signature.
template <class Fn, class... Args>
void run_naive_cpu(const std::string& key, Args&&... args) {
  for (const KernelInfo* k : KernelRegistry::instance().candidates(key, DeviceType::cpu))
    if (k->name == "naive") {
      MINIDL_CHECK(call_as<Fn>(*k, std::forward<Args>(args)...), "bench: the naive kernel of ", key,
                   " declined to make an input");
      return;
    }
  throw Error(str_cat("bench: ", key, " has no naive CPU kernel to make inputs with"));
}

constexpr double kFloatBytes = 4, kIndexBytes = 8;

}  // namespace bench
}  // namespace minidl
