// exercises/03-dispatch/check.cpp — the checker of exercise 3: the relu kernel "student" is registered, is
// the CPU's default for relu, computes relu on what it accepts, declines float64 and strided views (which
// the next kernel then serves), and the dispatch log (MINIDL_LOG_DISPATCH=1) shows both.
#include <algorithm>
#include <sstream>

#include "exercises/03-dispatch/relu_dispatch.h"
#include "exercises/common/exercise.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

// The CPU relu kernels with their priorities, in the order dispatch tries them.
std::string relu_table() {
  std::ostringstream os;
  for (const KernelInfo* k : KernelRegistry::instance().candidates("relu", DeviceType::cpu))
    os << "  " << k->name << " (priority " << k->priority << ")\n";
  return os.str();
}

// relu's reference values: the naive kernel, called directly.
Tensor reference_relu(const Tensor& x) {
  Tensor out = empty(x.shape(), x.options());
  exercise::call_kernel<UnaryKernel>("relu", DeviceType::cpu, "naive", x, out);
  return out;
}

// Calls relu(x) through the op and checks which kernel served and which declined.
std::string served_by(const Tensor& x, bool student_should_serve) {
  Tensor y;
  try {
    y = relu(x);
  } catch (const Error& e) {
    return str_cat("relu(x ", dtype_name(x.dtype()), ") threw: ", e.what(),
                   "\nA kernel must check what it cannot handle before it touches the data, and return false: "
                   "data<float>() on a float64 tensor is an error, not a decline.");
  }
  const std::string served = last_kernel("relu", DeviceType::cpu);
  const std::vector<std::string> declined = last_declined_kernels("relu", DeviceType::cpu);
  bool student_declined = false;
  for (const std::string& d : declined) student_declined = student_declined || d == kStudent;
  const std::string what = str_cat("x ", dtype_name(x.dtype()), " ", shape_str(x.shape()), " with strides ",
                                   shape_str(x.strides()), x.is_contiguous() ? " (contiguous)" : " (not contiguous)");
  if (student_should_serve) {
    if (served != kStudent)
      return str_cat("relu(", what, ") was served by \"", served, "\", not by your kernel",
                     student_declined ? ": your kernel declined it (returned false)" : "",
                     ".\nThe order dispatch tries the CPU relu kernels in:\n", relu_table());
  } else {
    if (served == kStudent)
      return str_cat("your kernel served relu(", what, "); the exercise asks it to decline such a call (return false "
                     "before touching the data), so that the next kernel serves it");
    if (!student_declined)
      return str_cat("relu(", what, ") was served by \"", served, "\" without your kernel being tried first: is it the "
                     "default? The order:\n", relu_table());
  }
  return testing::compare(y, reference_relu(x), 0, 0);
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {3, "a relu kernel in the dispatch table", "exercises/03-dispatch/relu_dispatch.cpp"});
  register_student_relu();

  c.section("3b  registration");
  c.check("registered for key \"relu\" on the CPU", [] {
    return exercise::registered("relu", DeviceType::cpu, "register_student_relu()");
  });
  c.check("it is the CPU's default for relu (the first kernel dispatch tries)", [] {
    const auto& order = KernelRegistry::instance().candidates("relu", DeviceType::cpu);
    if (!order.empty() && order.front()->name == kStudent) return std::string();
    int highest_other = 0;
    for (const KernelInfo* k : order)
      if (k->name != kStudent) highest_other = std::max(highest_other, k->priority);
    return str_cat("dispatch tries the CPU relu kernels in this order:\n", relu_table(),
                   "Kernels of equal priority keep their registration order, and minidl's own are registered before "
                   "yours: give yours a priority above ", highest_other, ".");
  });

  c.section("3a  the kernel, through the op relu(x) (no selection: the priorities decide)");
  c.check("serves contiguous float32 [64, 33] (negatives, zeros, positives) and computes relu", [] {
    std::vector<double> v(64 * 33);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<int>(i * 37 % 11) - 5) / 4;
    return served_by(from_vector(v, {64, 33}), true);
  });
  c.check("serves an empty [0, 7]", [] { return served_by(empty({0, 7}), true); });
  c.check("declines float64 (the next kernel serves it)", [] {
    return served_by(testing::uniform({5, 6}, -1, 1, DType::float64), false);
  });
  c.check("declines a transposed view (not contiguous; the next kernel serves it)", [] {
    return served_by(testing::uniform({6, 5}, -1, 1, DType::float32).transpose(0, 1), false);
  });

  c.section("3c  the dispatch log (MINIDL_LOG_DISPATCH=1): which kernel served each call, and who declined first");
  std::string relu_lines;
  c.check("the log shows your kernel serving, then declining a view that \"vectorized\" serves", [&] {
    const Tensor x = testing::uniform({4, 4}, -1, 1, DType::float32);
    KernelRegistry::instance().set_log_level(1);
    const std::string log = exercise::capture_stderr([&] {
      relu(x);
      relu(x.transpose(0, 1));
    });
    KernelRegistry::instance().set_log_level(0);
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);)
      if (line.find(" relu ") != std::string::npos) relu_lines += line + "\n";
    const bool served = relu_lines.find("-> student\n") != std::string::npos;
    const bool declined = relu_lines.find("(after student declined)") != std::string::npos;
    if (served && declined) return std::string();
    return str_cat(served ? "" : "no line says \"relu cpu -> student\" (your kernel serving the contiguous call)\n",
                   declined ? "" : "no line says \"(after student declined)\" (your kernel declining the transposed view)\n");
  });
  c.note("the relu lines of the log:\n" + (relu_lines.empty() ? std::string("(none)") : relu_lines));

  c.bench({"relu"}, {kStudent, "naive", "vectorized"}, {"relu:64x32x26x26", "relu:33554432"});
  return c.finish();
}
