// examples/course/worked_examples.cpp — the course's worked examples (examples/course/worked_examples.h).
// Each function runs real minidl code and returns what it prints. The regions between `// [doc:NAME]` and
// `// [/doc:NAME]` are quoted by the chapters (tests/test_course_docs.cpp checks the quotes), so the code a
// chapter shows is the code that produced its numbers.
#include "examples/course/worked_examples.h"

#include <unistd.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <map>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "examples/mnist/model.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tools/bench/case.h"
#include "tools/kernel_table.h"

using namespace minidl;

namespace course {

namespace {

// printf into a string.
struct Out {
  std::string text;
  void operator()(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    char buf[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buf, sizeof buf, format, args);
    va_end(args);
    text += buf;
  }
};

std::string dims(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string values(const Tensor& t) {
  std::string out;
  for (double v : t.to_vector<double>()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%g", out.empty() ? "" : " ", v);
    out += buf;
  }
  return out;
}

// Everything written to the file descriptor of stderr while body runs (the dispatch log goes there).
std::string capture_stderr(const std::function<void()>& body) {
  std::fflush(stderr);
  std::FILE* file = std::tmpfile();
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(::fileno(file), STDERR_FILENO);
  body();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::rewind(file);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, file)) text += buf;
  std::fclose(file);
  return text;
}

// What a FILE*-printing function prints.
std::string printed(const std::function<void(std::FILE*)>& body) {
  std::FILE* file = std::tmpfile();
  body(file);
  std::rewind(file);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, file)) text += buf;
  std::fclose(file);
  return text;
}

// ---------------------------------------------------------------- chapter 1: a real transpose
std::string tensors() {
  Out out;
  auto describe = [&](const char* name, const Tensor& t) {
    out("%-18s shape %-9s strides %-8s offset %lld  contiguous %-3s  values %s\n", name, dims(t.shape()).c_str(),
        dims(t.strides()).c_str(), static_cast<long long>(t.offset()), t.is_contiguous() ? "yes" : "no",
        values(t).c_str());
  };
  // [doc:tensors]
  const Tensor x = arange(6).view({2, 3});  // 0 1 2 / 3 4 5, float32
  const Tensor t = x.transpose(0, 1);       // a view: same memory, strides swapped
  const Tensor c = t.contiguous();          // a packed copy in t's row-major order
  const Tensor s = x.slice(1, 1, 3);        // columns 1 and 2: a view that starts at offset 1
  const Tensor e = x.slice(1, 0, 1).expand({2, 4});  // column 0 repeated: stride 0
  // [/doc:tensors]
  describe("x", x);
  describe("t = x.transpose", t);
  describe("t.contiguous()", c);
  describe("x.slice(1, 1, 3)", s);
  describe("column 0 expanded", e);
  out("t shares x's memory: %s; t.contiguous() does: %s\n", t.shares_storage_with(x) ? "yes" : "no",
      c.shares_storage_with(x) ? "yes" : "no");
  out("element (2, 1) of t is at offset 2*%lld + 1*%lld = %lld of x's memory, which holds %g\n",
      static_cast<long long>(t.strides()[0]), static_cast<long long>(t.strides()[1]),
      static_cast<long long>(2 * t.strides()[0] + 1 * t.strides()[1]),
      static_cast<double>(x.data<float>()[2 * t.strides()[0] + 1 * t.strides()[1]]));
  return out.text;
}

// ---------------------------------------------------------------- chapter 2: a graph by hand

// The graph below a node, one line per node, the nodes of its inputs indented; a node reached a second
// time is named, not walked again. labels says which tensor each node belongs to.
void print_graph(Out& out, const Node* node, int depth, const std::map<const Node*, std::string>& labels,
                 std::map<const Node*, bool>& seen) {
  const auto label = labels.find(node);
  const std::string what = label == labels.end() ? "" : "  (" + label->second + ")";
  if (seen[node]) {
    out("%*s%s%s again: the same node\n", 2 * depth, "", node->name.c_str(), what.c_str());
    return;
  }
  seen[node] = true;
  out("%*s%s%s\n", 2 * depth, "", node->name.c_str(), what.c_str());
  for (const auto& next : node->next)
    if (next) print_graph(out, next.get(), depth + 1, labels, seen);
}

std::string autograd() {
  Out out;
  // [doc:autograd]
  Tensor a = full({}, 2.0).requires_grad_();
  Tensor b = full({}, 3.0).requires_grad_();
  Tensor c = a * b;  // 6
  Tensor d = c + a;  // 8: a is used twice
  Tensor L = d * d;  // 64
  // [/doc:autograd]
  out("a = %g, b = %g, c = a*b = %g, d = c + a = %g, L = d*d = %g\n", a.item<double>(), b.item<double>(),
      c.item<double>(), d.item<double>(), L.item<double>());
  const Node* nc = c.impl()->grad_fn.get();
  const Node* nd = d.impl()->grad_fn.get();
  const std::map<const Node*, std::string> labels = {{L.impl()->grad_fn.get(), "L = d*d"},
                                                     {nd, "d = c + a"},
                                                     {nc, "c = a*b"},
                                                     {nc->next[0].get(), "into a.grad"},
                                                     {nc->next[1].get(), "into b.grad"},
                                                     {nd->next[1].get(), "into a.grad"}};
  std::map<const Node*, bool> seen;
  out("the graph from L (each node, then the nodes of its inputs, in input order):\n");
  print_graph(out, L.impl()->grad_fn.get(), 1, labels, seen);
  {
    // The walk's first step by hand: L's node given dL/dL = 1 (backward() itself is below).
    NoGradGuard no_grad;
    const InputGradients sent = L.impl()->grad_fn->apply(full({}, 1.0));
    out("the walk's first step: L's node sends %g and %g to the two inputs of d*d, both d's node; pending adds them,\n"
        "  and d's node runs once, with %g\n",
        sent[0].item<double>(), sent[1].item<double>(), add(sent[0], sent[1]).item<double>());
  }
  // [doc:autograd_backward]
  L.backward();  // dL/dd = 2d = 16;  dL/dc = 16;  dL/da = 16 * b + 16 = 64;  dL/db = 16 * a = 32
  // [/doc:autograd_backward]
  out("after L.backward(): a.grad = %g, b.grad = %g\n", a.grad().item<double>(), b.grad().item<double>());
  // [doc:autograd_again]
  Tensor L2 = (a * b + a) * (a * b + a);  // the same function, a new graph
  L2.backward();                          // leaves accumulate: .grad += the new gradient
  // [/doc:autograd_again]
  out("after a second forward and backward: a.grad = %g, b.grad = %g (accumulated)\n", a.grad().item<double>(),
      b.grad().item<double>());
  a.zero_grad();
  b.zero_grad();
  out("after zero_grad: a.grad %s\n", a.grad().defined() ? "defined" : "undefined (the next backward starts afresh)");
  {
    NoGradGuard no_grad;
    const Tensor y = a * b;
    out("under NoGradGuard: (a*b).requires_grad() = %s, no node is recorded\n", y.requires_grad() ? "true" : "false");
  }
  return out.text;
}

// ---------------------------------------------------------------- chapter 3: the table, a decline, the log
std::string dispatch_example() {
  Out out;
  out("$ minidl kernels --op copy --device cpu\n");
  out("%s", printed([](std::FILE* f) { print_kernel_table(f, {"copy"}, "cpu"); }).c_str());
  const Tensor x = arange(12).view({3, 4});
  KernelRegistry::instance().set_log_level(1);
  const std::string log = capture_stderr([&] {
    // [doc:dispatch]
    Tensor packed = x.clone();                   // copy of a contiguous tensor: "memcpy" serves
    Tensor moved = x.transpose(0, 1).contiguous();  // a strided source: memcpy declines, "rows_omp" serves
    // [/doc:dispatch]
    (void)packed;
    (void)moved;
  });
  KernelRegistry::instance().set_log_level(0);
  out("\n$ MINIDL_LOG_DISPATCH=1 ...   (x.clone(), then x.transpose(0, 1).contiguous())\n%s", log.c_str());
  std::string declined;
  for (const std::string& name : last_declined_kernels("copy", DeviceType::cpu))
    declined += (declined.empty() ? "" : ", ") + name;
  out("last_kernel(\"copy\", cpu) = %s; declined first: %s\n", last_kernel("copy", DeviceType::cpu).c_str(),
      declined.c_str());
  return out.text;
}

// ---------------------------------------------------------------- chapter 7: im2col by hand
std::string im2col() {
  Out out;
  // [doc:im2col]
  const Tensor x = add_scalar(arange(9), 1).view({1, 1, 3, 3});  // one 3x3 image: 1 .. 9
  const Tensor w = from_vector({1, 2, 3, 4}, {1, 1, 2, 2});       // one 2x2 kernel
  // col [4, 4]: row (i, j) of the kernel window holds the pixels that kernel entry meets at each of the
  // 2x2 output positions: the window x[i : i+2, j : j+2], flattened.
  std::vector<Tensor> rows;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) rows.push_back(x.slice(2, i, i + 2).slice(3, j, j + 2).reshape({1, 4}));
  const Tensor col = concat(rows, 0);
  const Tensor y_gemm = matmul(w.view({1, 4}), col).view({1, 1, 2, 2});  // W [O, C*KH*KW] . col
  const Tensor y_conv = conv2d(x, w);
  // [/doc:im2col]
  out("x (1 channel, 3x3):\n");
  const std::vector<double> xv = x.to_vector<double>();
  for (int r = 0; r < 3; ++r) out("  %g %g %g\n", xv[r * 3], xv[r * 3 + 1], xv[r * 3 + 2]);
  out("w (2x2): 1 2 / 3 4\ncol [4, 4] (row r = (i, j), column = output position p*2 + q):\n");
  const std::vector<double> cv = col.to_vector<double>();
  for (int r = 0; r < 4; ++r) out("  (%d, %d):  %g %g %g %g\n", r / 2, r % 2, cv[r * 4], cv[r * 4 + 1], cv[r * 4 + 2], cv[r * 4 + 3]);
  out("W . col  = %s\nconv2d   = %s\n", values(y_gemm).c_str(), values(y_conv).c_str());
  return out.text;
}

// ---------------------------------------------------------------- chapter 8: the MNIST model
std::string mnist_model() {
  Out out;
  manual_seed(1);
  // [doc:mnist_model]
  std::shared_ptr<Sequential> model = mnist::make_model();
  Tensor h = zeros({64, 1, 28, 28});  // a batch of 64 images
  for (size_t i = 0; i < model->size(); ++i) h = (*model)[i](h);  // layer by layer
  // [/doc:mnist_model]
  out("%s", model->summary().c_str());
  out("total: %lld parameters\n\nshapes, layer by layer, for a batch of 64:\n",
      static_cast<long long>(model->parameter_count()));
  Tensor x = zeros({64, 1, 28, 28});
  out("  %-50s %s\n", "input", dims(x.shape()).c_str());
  for (size_t i = 0; i < model->size(); ++i) {
    x = (*model)[i](x);
    out("  %-50s %s\n", (*model)[i].describe().c_str(), dims(x.shape()).c_str());
  }
  return out.text;
}

// ---------------------------------------------------------------- chapter 9: CTC on 3 steps
std::string ctc() {
  Out out;
  const char* names = "-ab";
  // [doc:ctc]
  // T = 3 steps, classes (blank, a, b); the target is "ab"; one sample.
  const std::vector<double> p = {0.5, 0.4, 0.1,   // t = 0: P(-), P(a), P(b)
                                 0.4, 0.3, 0.3,   // t = 1
                                 0.5, 0.1, 0.4};  // t = 2
  const Tensor log_probs = log(from_vector(p, {3, 1, 3}, DType::float64));
  const Tensor targets = from_vector({1, 2}, {1, 2}, DType::int64);
  const Tensor lengths_in = from_vector({3}, {1}, DType::int64), lengths_out = from_vector({2}, {1}, DType::int64);
  Tensor nll = empty({1}, DType::float64), log_alpha = empty({1, 3, 5}, DType::float64);
  dispatch<CtcLossKernel>("ctc_loss", Device::cpu(), log_probs, targets, lengths_in, lengths_out, int64_t{0}, false, nll,
                          log_alpha);
  // [/doc:ctc]
  out("l' = (-, a, -, b, -), s = 0 .. 4\nalpha_t(s) as probabilities (exp of the kernel's log_alpha), kernel %s:\n",
      last_kernel("ctc_loss", DeviceType::cpu).c_str());
  out("        s=0 (-)   s=1 (a)   s=2 (-)   s=3 (b)   s=4 (-)\n");
  const std::vector<double> a = log_alpha.to_vector<double>();
  for (int t = 0; t < 3; ++t) {
    out("  t=%d", t);
    for (int s = 0; s < 5; ++s) out("  %8.4f", std::exp(a[t * 5 + s]));
    out("\n");
  }
  out("p(ab) = alpha_2(4) + alpha_2(3) = %.4f;  loss = -log p = %.4f\n", std::exp(-nll.item<double>()), nll.item<double>());
  out("check by brute force, all 27 paths of 3 classes; those that collapse to \"ab\":\n");
  double total = 0;
  for (int k = 0; k < 27; ++k) {
    const int path[3] = {k / 9, (k / 3) % 3, k % 3};
    std::string collapsed;
    for (int t = 0; t < 3; ++t)
      if (path[t] != 0 && (t == 0 || path[t] != path[t - 1])) collapsed += names[path[t]];
    if (collapsed != "ab") continue;
    const double prob = p[path[0]] * p[3 + path[1]] * p[6 + path[2]];
    total += prob;
    out("  %c%c%c  %.3f\n", names[path[0]], names[path[1]], names[path[2]], prob);
  }
  out("  sum  %.3f\n", total);
  // The backward kernel's gradient at t = 1 against the posterior of each class there, by brute force.
  Tensor grad = empty({3, 1, 3}, DType::float64);
  dispatch<CtcLossBackwardKernel>("ctc_loss.backward", Device::cpu(), log_probs, targets, lengths_in, lengths_out,
                                  log_alpha, full({1}, 1.0, DType::float64), int64_t{0}, false, grad);
  const std::vector<double> g = grad.to_vector<double>();
  double posterior[3] = {0, 0, 0};
  for (int k = 0; k < 27; ++k) {
    const int path[3] = {k / 9, (k / 3) % 3, k % 3};
    std::string collapsed;
    for (int t = 0; t < 3; ++t)
      if (path[t] != 0 && (t == 0 || path[t] != path[t - 1])) collapsed += names[path[t]];
    if (collapsed == "ab") posterior[path[1]] += p[path[0]] * p[3 + path[1]] * p[6 + path[2]] / total;
  }
  bool minus = true;
  out("at t = 1, class by class (-, a, b):\n  the backward kernel's d loss / d lp_1(k):");
  for (int k = 0; k < 3; ++k) out("  %.4f", g[3 + k]);
  out("\n  the posterior, P(the alignment emits k at t = 1 | it spells \"ab\"):");
  for (int k = 0; k < 3; ++k) {
    out("  %.4f", posterior[k]);
    minus = minus && std::fabs(g[3 + k] + posterior[k]) < 1e-12;
  }
  out("\n  the gradient is minus the posterior: %s\n", minus ? "yes" : "no");
  return out.text;
}

// ---------------------------------------------------------------- chapter 10: arithmetic intensity
std::string roofline() {
  Out out;
  out("%-14s %-30s %12s %12s %12s\n", "key", "shape", "FLOP", "bytes", "FLOP/byte");
  // [doc:roofline]
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"add", "64x32x26x26"},  {"relu", "64x32x26x26"},
      {"matmul", "64x128x9216,tb"}, {"matmul", "1024x1024x1024"},
      {"conv2d", "64x32x26x26,64x32x3x3"}};
  for (const auto& [key, shape] : cases) {
    manual_seed(1);
    const bench::BenchCase c = bench::find_case_family(key)->make(key, shape, Device::cpu());  // minidl bench's model
    out("%-14s %-30s %12.4g %12.4g %12.3g\n", key.c_str(), shape.c_str(), c.flops, c.bytes, c.flops / c.bytes);
  }
  // [/doc:roofline]
  return out.text;
}

const std::map<std::string, std::function<std::string()>>& examples() {
  static const std::map<std::string, std::function<std::string()>> all = {
      {"tensors", tensors}, {"autograd", autograd}, {"dispatch", dispatch_example}, {"im2col", im2col},
      {"mnist_model", mnist_model}, {"ctc", ctc}, {"roofline", roofline}};
  return all;
}

}  // namespace

std::vector<std::string> worked_example_names() {
  return {"tensors", "autograd", "dispatch", "im2col", "mnist_model", "ctc", "roofline"};
}

std::string run_worked_example(const std::string& name) {
  const auto it = examples().find(name);
  if (it == examples().end()) {
    std::string known;
    for (const std::string& n : worked_example_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(str_cat("no worked example '", name, "'; there are: ", known));
  }
  return it->second();
}

}  // namespace course
