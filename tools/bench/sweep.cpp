// tools/bench/sweep.cpp — the sizes and shapes of a --shape-sweep (tools/bench/sweep.h).
#include "tools/bench/sweep.h"

#include <map>

#include "core/error.h"
#include "core/strings.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

// "64:1024:x2" -> {"64", "1024", "x2"}.
std::vector<std::string> split_colons(const std::string& text) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == ':')
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

// A whole number from 1 to kMaxSize, as written in `range`; throws naming `what` otherwise.
int64_t read_count(const std::string& text, const std::string& what, const std::string& range) {
  auto fail = [&](const std::string& why) {
    throw Error(str_cat("bench --shape-sweep '", range, "': ", what, " '", text, "' ", why,
                        " (syntax LO:HI:xF or LO:HI:+S, e.g. 64:1024:x2)"));
  };
  if (text.empty()) fail("is empty");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') fail("is not a whole number");
    if (v > kMaxSize) fail(str_cat("is larger than ", kMaxSize));
    v = v * 10 + (c - '0');
  }
  if (v > kMaxSize) fail(str_cat("is larger than ", kMaxSize));
  if (v < 1) fail("must be at least 1");
  return v;
}

}  // namespace

std::vector<int64_t> sweep_sizes(const std::string& range) {
  const std::vector<std::string> parts = split_colons(range);
  MINIDL_CHECK(parts.size() == 3, "bench --shape-sweep '", range,
               "': expected LO:HI:xF or LO:HI:+S (e.g. 64:1024:x2, 32:256:+32)");
  const int64_t lo = read_count(parts[0], "LO", range), hi = read_count(parts[1], "HI", range);
  MINIDL_CHECK(hi >= lo, "bench --shape-sweep '", range, "': HI ", hi, " is below LO ", lo);
  const std::string& step = parts[2];
  MINIDL_CHECK(!step.empty() && (step[0] == 'x' || step[0] == '+'), "bench --shape-sweep '", range,
               "': the step '", step, "' must be xF (multiply by F) or +S (add S)");
  const bool multiply = step[0] == 'x';
  const int64_t by = read_count(step.substr(1), multiply ? "the factor" : "the step", range);
  MINIDL_CHECK(!multiply || by >= 2, "bench --shape-sweep '", range, "': the factor must be at least 2");
  std::vector<int64_t> sizes;
  for (int64_t n = lo; n <= hi;) {
    sizes.push_back(n);
    MINIDL_CHECK(sizes.size() <= kMaxSweepSizes, "bench --shape-sweep '", range, "': more than ", kMaxSweepSizes,
                 " sizes (a larger step, or a shorter range)");
    if (multiply ? n > hi / by : n > hi - by) break;  // the next size would pass HI (or overflow)
    n = multiply ? n * by : n + by;
  }
  return sizes;
}

std::string default_sweep_spec(const std::string& op) {
  static const std::map<std::string, std::string> specs = {
      {"matmul", "nxnxn"},
      {"conv2d", "8xnx16x16,nxnx3x3,s1p1"},
  };
  const auto it = specs.find(op.substr(0, op.find('.')));
  return it == specs.end() ? "" : it->second;
}

std::string sweep_shape(const std::string& spec, int64_t size) {
  std::string out;
  for (char c : spec) out += c == 'n' ? std::to_string(size) : std::string(1, c);
  return out;
}

SweepPlan plan_sweep(const BenchOptions& o) {
  MINIDL_CHECK(o.ops.size() == 1, "bench --shape-sweep: name the one op (or key) to sweep with --op (given: ",
               o.ops.empty() ? std::string("none") : join(o.ops, ", "), ")");
  MINIDL_CHECK(o.shapes.empty(), "bench --shape-sweep: the sweep makes the shapes; --shape cannot be given too");
  SweepPlan plan;
  plan.op = o.ops.front();
  plan.spec = o.sweep_spec.empty() ? default_sweep_spec(plan.op) : o.sweep_spec;
  MINIDL_CHECK(!plan.spec.empty(), "bench --shape-sweep: ", plan.op,
               " has no default sweep spec; give --sweep-spec, a --shape SPEC with n where the size goes "
               "(e.g. --sweep-spec nx1024; `minidl bench --help` lists the syntax of each key)");
  MINIDL_CHECK(plan.spec.find('n') != std::string::npos, "bench --sweep-spec '", plan.spec,
               "': no n where the size goes (e.g. nxnxn for matmul)");
  plan.sizes = sweep_sizes(o.sweep);
  for (int64_t n : plan.sizes) {
    plan.shapes.push_back(plan.op + ":" + sweep_shape(plan.spec, n));
    check_shape_flag(plan.shapes.back());  // the --shape reader's errors, naming the size's shape
  }
  return plan;
}

}  // namespace bench
}  // namespace minidl
