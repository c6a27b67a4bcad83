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
  // Reads and checks spec for key (a SpecReader's rules and the op's own, ops/op_checks.h) without
  // allocating anything, and returns the bytes of the tensors the case will hold (inputs, outputs, the
  // forward outputs a backward case reads, a sequence kernel's reserve, estimated); the harness compares
  // them with the device's free memory. Throws an Error naming the field at fault.
  std::function<double(const std::string& key, const std::string& spec)> check;
  // Builds the case for (key, spec) on device d, its inputs from the global seed (the harness seeds it
  // the same way on every device). Reads spec as check does (the same function), so throws the same Errors.
  std::function<BenchCase(const std::string& key, const std::string& spec, Device d)> make;
};

// Every family (tools/bench/cases.cpp), and the one serving `key` (nullptr when none does).
const std::vector<CaseFamily>& case_families();
const CaseFamily* find_case_family(const std::string& key);
// The entry of `key` in its family (nullptr when no family serves it).
const CaseKey* find_case_key(const std::string& key);
// The shape every kernel of `key` is checked on once, whatever shapes are timed: sizes that divide no
// tile (tools/bench/ragged.cpp). Its family's example for a key the table does not list; "" for a key
// no family serves.
std::string ragged_spec(const std::string& key);

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

// ---------------------------------------------------------------- reading a spec
// Every family reads its spec with a SpecReader, so that every spec follows the same rules and every
// refusal is one line naming the field at fault, before anything is allocated:
//   bench --shape conv2d:2x3x7x6,4x3x3x2,s0: stride 's0' must be at least 1 (syntax conv2d:NxCxHxW,...)
// The rules: parts are separated by commas (spaces around a part are ignored; an empty part, as after a
// trailing comma, is refused); a list of sizes "64x32x26x26" has exactly the sizes its syntax names, each
// a whole number from 1 to kMaxSize; an option is a letter and a number ("s2", "k2x1": a number per axis)
// or a word ("ta", "bi"), each given at most once; nothing may follow ("4x4x4abc" is refused).

// The largest size or option value: the kernels take some sizes as int (cuBLAS's m, n, k, conv strides).
constexpr int64_t kMaxSize = 2147483647;
// The most elements one tensor of a case may have (then its bytes, and sums of them, fit an int64).
constexpr int64_t kMaxCaseNumel = int64_t(1) << 58;

// A letter option as written: "s2x1" -> {'s', 2, 1, "s2x1"}; "p1" -> {'p', 1, 1, "p1"}.
struct LetterOption {
  char letter = 0;
  int64_t first = 0, second = 0;
  std::string text;
};

class SpecReader {
 public:
  SpecReader(std::string key, std::string spec, std::string syntax);

  // The comma-separated parts, spaces around each removed.
  size_t parts() const { return parts_.size(); }
  const std::string& part(size_t i) const { return parts_.at(i); }
  // Refuses fewer than `min` or more than `max` parts; `what` lists them ("x's shape, w's shape, options").
  void expect_parts(size_t min, size_t max, const std::string& what) const;

  // Part i as sizes "AxBxC", one per name ({"M", "N", "K"}), each 1..kMaxSize: all of them, or at least
  // min_count (the first ones).
  Shape sizes(size_t i, const std::vector<std::string>& names) const;
  Shape sizes(size_t i, const std::vector<std::string>& names, size_t min_count) const;
  // Part i as between min_count and max_count sizes, named prefix1, prefix2, ... ("D1", "D2").
  Shape sizes(size_t i, const std::string& prefix, size_t min_count, size_t max_count) const;

  // Whether part i is the word `word` ("ta", "bi"); a word given twice is refused.
  bool word(size_t i, const std::string& word);
  // Part i as letter options, each from `allowed` ("sp") and each given at most once in the whole spec;
  // two numbers ("k2x1") only where `two_axes`.
  std::vector<LetterOption> options(size_t i, const std::string& allowed, bool two_axes);

  // Refuses an option value below `min` ("stride 's0' must be at least 1"); names what the letter means.
  void at_least(const LetterOption& o, const std::string& meaning, int64_t min) const;
  // The number of elements of a tensor of `shape`, refused above kMaxCaseNumel ("x [..] has more than ...").
  int64_t numel(const Shape& shape, const std::string& what) const;
  // a * b for sizes of `what`, refused above kMaxCaseNumel.
  int64_t product(int64_t a, int64_t b, const std::string& what) const;

  // The error for this spec: "bench --shape KEY:SPEC: WHY (syntax KEY:SYNTAX)".
  [[noreturn]] void fail(const std::string& why) const;

 private:
  // Marks an option or word as given; refuses it the second time.
  void once(const std::string& name);
  // Part i as sizes, one per name; at least min_count of them.
  Shape read_sizes(size_t i, const std::vector<std::string>& names, size_t min_count) const;
  std::string key_, spec_, syntax_;
  std::vector<std::string> parts_;
  std::vector<std::string> given_;
};

// Bytes of `numel` float32 or int64 elements.
constexpr double kFloatBytes = 4, kIndexBytes = 8;
inline double float_bytes(int64_t numel) { return static_cast<double>(numel) * kFloatBytes; }

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

}  // namespace bench
}  // namespace minidl
