// tests/test_elementwise.cpp — elementwise, reduction and shape ops: every kernel against the naive CPU
// reference (float32, odd sizes, views, broadcasting, sizes large enough for the threaded paths),
// float64 finite-difference gradchecks of every op, values checked by hand, and error messages.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/random.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

using UnaryOp = std::function<Tensor(const Tensor&)>;
using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;
using GradFn = std::function<Tensor(const std::vector<Tensor>&)>;

// f() computed with the naive CPU kernels of `op` (the reference); the selection is restored after.
Tensor naive_ref(const std::string& op, const std::function<Tensor()>& f) {
  SelectionReset reset;
  select_kernel(op, DeviceType::cpu, "naive");
  return f();
}

Tensor f32(const Shape& shape, double lo, double hi) { return uniform(shape, lo, hi, DType::float32); }

// A float64 CPU leaf that requires grad, values in [lo, hi).
Tensor leaf(const Shape& shape, double lo = -1, double hi = 1) {
  Tensor t = uniform(shape, lo, hi);
  t.requires_grad_();
  return t;
}

// A view to apply to a base tensor: the same view is built on the reference (CPU) and on each device.
struct Layout {
  std::string name;
  Shape base;
  UnaryOp view;
};

Tensor same(const Tensor& t) { return t; }

// Odd sizes; views with transposed, stepped and offset strides; a 0-d tensor; and sizes above the 32k
// elements where the fast kernels switch to threads.
std::vector<Layout> unary_layouts() {
  return {
      {"contiguous [37,41]", {37, 41}, same},
      {"transposed [41,37]", {37, 41}, [](const Tensor& t) { return t.transpose(0, 1); }},
      {"stepped slice of [13,3,29]", {13, 3, 29}, [](const Tensor& t) { return t.slice(2, 1, 28, 3).select(1, 2); }},
      {"0-d", {}, same},
      {"large contiguous [211,203]", {211, 203}, same},
      {"large transposed [203,211]", {211, 203}, [](const Tensor& t) { return t.transpose(0, 1); }},
  };
}

// The gradient of sum(op(x) * w) flows through the op's backward; used to exercise backward kernels.
Tensor weighted_grad(const Tensor& out, const Tensor& x, const Tensor& w) {
  sum(mul(out, w)).backward();
  return x.grad();
}

}  // namespace

// ------------------------------------------------------------------------------------------ kernels

TEST_CASE("elementwise: unary kernels match the naive reference", "[elementwise]") {
  manual_seed(11);
  struct Case {
    const char* key;
    UnaryOp op;
    double lo, hi;
  };
  const std::vector<Case> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, -5, 5},
      {"exp", [](const Tensor& x) { return minidl::exp(x); }, -5, 5},
      {"log", [](const Tensor& x) { return minidl::log(x); }, 0.01, 10},
      {"sqrt", [](const Tensor& x) { return minidl::sqrt(x); }, 0, 10},
      {"relu", [](const Tensor& x) { return relu(x); }, -5, 5},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -30, 30},
      {"tanh", [](const Tensor& x) { return minidl::tanh(x); }, -5, 5},
      {"add_scalar", [](const Tensor& x) { return add_scalar(x, 1.75); }, -5, 5},
      {"mul_scalar", [](const Tensor& x) { return mul_scalar(x, -0.3); }, -5, 5},
      {"pow_scalar", [](const Tensor& x) { return pow_scalar(x, 2.5); }, 0, 4},
  };
  for (const Case& c : cases) {
    for (const Layout& L : unary_layouts()) {
      INFO("op " << c.key << ", layout " << L.name);
      const Tensor base = f32(L.base, c.lo, c.hi);
      const Tensor ref = naive_ref(c.key, [&] { return c.op(L.view(base)); });
      for_each_kernel(c.key, [&](Device d, const std::string& name) {
        const Tensor x = L.view(base.to(d));
        const Tensor got = c.op(x);
        CHECK(served_or_declined(c.key, d.type, name, /*may_decline=*/!x.is_contiguous()));
        CHECK(compare(got, ref, 1e-6, 1e-6) == "");
      });
    }
  }
}

TEST_CASE("elementwise: binary kernels match the naive reference, with broadcasting and views", "[elementwise]") {
  manual_seed(12);
  struct Pair {
    std::string name;
    Shape a, b;
    UnaryOp view_a, view_b;
  };
  const UnaryOp transpose = [](const Tensor& t) { return t.transpose(0, 1); };
  const std::vector<Pair> pairs = {
      {"same shape [37,41]", {37, 41}, {37, 41}, same, same},
      {"[5,1,7] with [3,1]", {5, 1, 7}, {3, 1}, same, same},
      {"transposed [37,41] with [41]", {41, 37}, {41}, transpose, same},
      {"[6,5] with a 0-d tensor", {6, 5}, {}, same, same},
      {"stepped slice with transposed",
       {9, 22},
       {11, 9},
       [](const Tensor& t) { return t.slice(1, 1, 22, 2); },
       transpose},
      {"[1,9] expanded against [9,1]", {1, 9}, {9, 1}, same, same},
      {"large [211,203] with [203]", {211, 203}, {203}, same, same},
      {"large same shape", {211, 203}, {211, 203}, same, same},
      {"large transposed with [211,1]", {203, 211}, {211, 1}, transpose, same},
  };
  struct Case {
    const char* key;
    BinaryOp op;
    double lo_b;  // b in [lo_b, 3): div keeps it away from zero
  };
  const std::vector<Case> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, -3},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, -3},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, -3},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, 0.25},
  };
  for (const Case& c : cases) {
    for (const Pair& p : pairs) {
      INFO("op " << c.key << ", inputs " << p.name);
      const Tensor a = f32(p.a, -3, 3), b = f32(p.b, c.lo_b, 3);
      const Tensor ref = naive_ref(c.key, [&] { return c.op(p.view_a(a), p.view_b(b)); });
      for_each_kernel(c.key, [&](Device d, const std::string& name) {
        const Tensor va = p.view_a(a.to(d)), vb = p.view_b(b.to(d));
        const Tensor got = c.op(va, vb);
        const bool plain = va.is_contiguous() && vb.is_contiguous() && va.shape() == vb.shape();
        CHECK(served_or_declined(c.key, d.type, name, /*may_decline=*/!plain));
        CHECK(compare(got, ref, 1e-6, 1e-6) == "");
      });
    }
  }
}

TEST_CASE("elementwise: relu_backward kernels match the naive reference", "[elementwise]") {
  manual_seed(13);
  for (const Layout& L : unary_layouts()) {
    INFO("layout " << L.name);
    const Tensor base = f32(L.base, -2, 2), w = f32(L.view(base).shape(), -1, 1);
    const Tensor ref = naive_ref("relu_backward", [&] {
      Tensor x = L.view(base).detach();
      x.requires_grad_();
      return weighted_grad(relu(x), x, w);
    });
    for_each_kernel("relu_backward", [&](Device d, const std::string& name) {
      Tensor x = L.view(base.to(d)).detach();
      x.requires_grad_();
      const Tensor got = weighted_grad(relu(x), x, w.to(d));
      CHECK(served_or_declined("relu_backward", d.type, name, /*may_decline=*/!x.is_contiguous()));
      CHECK(compare(got, ref, 0, 0) == "");
    });
  }
}

TEST_CASE("reduce: sum and mean kernels match the naive reference over every dim set", "[reduce]") {
  manual_seed(14);
  const std::vector<Layout> layouts = {
      {"contiguous [7,9,11]", {7, 9, 11}, same},
      {"permuted [11,7,9]",
       {7, 9, 11},
       [](const Tensor& t) {
         return t.permute({2, 0, 1});
       }},
      {"large [300,211]", {300, 211}, same},
  };
  const std::vector<std::vector<int>> dim_sets = {{}, {0}, {1}, {-1}, {0, -1}, {1, 0}};
  for (const Layout& L : layouts)
    for (const auto& dims : dim_sets)
      for (bool keepdim : {false, true}) {
        INFO("layout " << L.name << ", dims " << dims.size()
                       << (dims.empty() ? "" : " first " + std::to_string(dims[0])) << ", keepdim " << keepdim);
        const Tensor base = f32(L.base, -1, 1);
        const Tensor ref_sum = naive_ref("sum", [&] { return sum(L.view(base), dims, keepdim); });
        const Tensor ref_mean = naive_ref("sum", [&] { return mean(L.view(base), dims, keepdim); });
        for_each_kernel("sum", [&](Device d, const std::string& name) {
          const Tensor got = sum(L.view(base.to(d)), dims, keepdim);
          CHECK(last_kernel("sum", d.type) == name);
          CHECK(compare(got, ref_sum, 1e-4, 5e-3) == "");  // float sums of up to 63k values
          CHECK(compare(mean(L.view(base.to(d)), dims, keepdim), ref_mean, 1e-5, 1e-6) == "");
        });
      }
}

TEST_CASE("reduce: max / argmax kernels match the naive reference", "[reduce]") {
  manual_seed(15);
  const Tensor base = f32({7, 9, 11}, -1, 1);
  for (int dim : {0, 1, 2, -1})
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << ", keepdim " << keepdim);
      const Tensor view = base.permute({1, 2, 0});
      const Tensor ref_max = naive_ref("max", [&] { return max(view, dim, keepdim); });
      const Tensor ref_arg = naive_ref("max", [&] { return argmax(view, dim, keepdim); });
      for_each_kernel("max", [&](Device d, const std::string& name) {
        const Tensor x = base.to(d).permute({1, 2, 0});
        CHECK(compare(max(x, dim, keepdim), ref_max, 0, 0) == "");
        const Tensor arg = argmax(x, dim, keepdim);
        CHECK(last_kernel("max", d.type) == name);
        CHECK(arg.dtype() == DType::int64);
        CHECK(compare(arg, ref_arg, 0, 0) == "");
      });
    }
}

TEST_CASE("gather and its backward kernels match the naive reference", "[shape]") {
  manual_seed(16);
  const Tensor x = f32({5, 7, 3}, -1, 1);
  // Indices in [0, 7) along dim 1, with repeats so the backward must add.
  const Tensor index = mul_scalar(rand({5, 13, 3}), 7.0).to(DType::int64);
  const Tensor w = f32({5, 13, 3}, -1, 1);
  auto run = [&](Device d, Tensor& grad) {
    Tensor xd = x.to(d).detach();
    xd.requires_grad_();
    const Tensor out = gather(xd, 1, index.to(d));
    grad = weighted_grad(out, xd, w.to(d));
    return out;
  };
  Tensor ref_grad;
  const Tensor ref = naive_ref("gather", [&] { return run(Device::cpu(), ref_grad); });
  for_each_kernel("gather", [&](Device d, const std::string& name) {
    Tensor grad;
    const Tensor got = run(d, grad);
    CHECK(last_kernel("gather", d.type) == name);
    CHECK(last_kernel("gather.backward", d.type) == name);
    CHECK(compare(got, ref, 0, 0) == "");
    CHECK(compare(grad, ref_grad, 1e-6, 1e-6) == "");
  });
}

TEST_CASE("index_select kernels match the naive reference, every dtype, and its gradient adds up repeats",
          "[shape]") {
  manual_seed(18);
  // Indices into dim 1 of [4, 9, 5] with repeats (the backward must add) and an unpicked slice.
  const Tensor index = from_vector({8, 0, 3, 3, 8, 1, 2}, {7}, DType::int64);
  for (const DType dtype : {DType::float32, DType::float64, DType::int64}) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor x = dtype == DType::int64 ? mul_scalar(rand({4, 9, 5}), 1e6).to(DType::int64)
                                           : f32({4, 9, 5}, -1, 1).to(dtype);
    const Tensor ref = naive_ref("index_select", [&] { return index_select(x, 1, index); });
    for_each_kernel("index_select", [&](Device d, const std::string& name) {
      const Tensor got = index_select(x.to(d), 1, index.to(d));
      CHECK(last_kernel("index_select", d.type) == name);
      CHECK(got.dtype() == dtype);
      CHECK(compare(got, ref, 0, 0) == "");
    });
  }
  const Tensor x = f32({4, 9, 5}, -1, 1), w = f32({4, 7, 5}, -1, 1);
  auto run = [&](Device d, Tensor& grad) {
    Tensor xd = x.to(d).detach();
    xd.requires_grad_();
    const Tensor out = index_select(xd, 1, index.to(d));
    grad = weighted_grad(out, xd, w.to(d));
    return out;
  };
  Tensor ref_grad;
  run(Device::cpu(), ref_grad);
  for (const Device d : test_devices()) {
    Tensor grad;
    run(d, grad);
    CHECK(compare(grad, ref_grad, 1e-6, 1e-6) == "");
  }
  // On a GPU an index out of range cannot throw: the element's bits become all ones (NaN, or -1).
  for (const Device d : test_devices()) {
    if (d.is_cpu()) continue;
    const Tensor bad = from_vector({0, 9}, {2}, DType::int64).to(d);
    const std::vector<float> f = index_select(x.to(d), 1, bad).to_vector<float>();
    CHECK(!std::isnan(f[0]));
    CHECK(std::isnan(f[5]));
    const std::vector<int64_t> i = index_select(x.to(DType::int64).to(d), 1, bad).to_vector<int64_t>();
    CHECK(i[5] == -1);
  }
}

TEST_CASE("copy, cast and fill kernels give the same values as the naive reference", "[shape]") {
  manual_seed(17);
  const Tensor base = f32({23, 31}, -1, 1);
  const Tensor ref_t = naive_ref("copy", [&] { return base.transpose(0, 1).contiguous(); });
  for_each_kernel("copy", [&](Device d, const std::string& name) {
    const Tensor x = base.to(d);
    const Tensor c = x.clone();
    CHECK(last_kernel("copy", d.type) == name);
    CHECK(compare(c, base, 0, 0) == "");
    CHECK(compare(x.transpose(0, 1).contiguous(), ref_t, 0, 0) == "");
  });
  for_each_kernel("cast", [&](Device d, const std::string& name) {
    const Tensor x = base.to(d).transpose(0, 1);
    const Tensor as64 = x.to(DType::float64);
    CHECK(served_or_declined("cast", d.type, name, /*may_decline=*/true));  // from a transposed view
    CHECK(compare(as64, ref_t, 0, 0) == "");
    const Tensor plain = x.contiguous().to(DType::float64);  // contiguous: every kernel must serve it
    CHECK(last_kernel("cast", d.type) == name);
    CHECK(compare(plain, ref_t, 0, 0) == "");
  });
  for_each_kernel("fill", [&](Device d, const std::string& name) {
    const Tensor t = zeros({5, 6}, TensorOptions(DType::float32, d));
    fill_(t.slice(1, 1, 6, 2), 2.5);
    CHECK(served_or_declined("fill", d.type, name, /*may_decline=*/true));  // a strided view
    const Tensor whole = zeros({4}, TensorOptions(DType::float32, d));
    fill_(whole, 1.5);  // contiguous: every kernel must serve it
    CHECK(last_kernel("fill", d.type) == name);
    CHECK(whole.to_vector<float>() == std::vector<float>{1.5, 1.5, 1.5, 1.5});
    CHECK(t.to_vector<float>() == std::vector<float>{0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5,
                                                     0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5});
  });
}

TEST_CASE("copy kernels: views of every dtype into strided destinations, against the naive kernel", "[shape]") {
  manual_seed(19);
  // Source views: transposed, permuted 3-D (the captcha CNN-to-RNN reshape), a stepped slice, a broadcast
  // (stride 0), a 0-d tensor, an empty one, and a large permutation (above the threads' threshold).
  struct Case {
    std::string name;
    Shape base;
    std::function<Tensor(const Tensor&)> view;
  };
  const std::vector<Case> cases = {
      {"transposed [31,23]", {23, 31}, [](const Tensor& t) { return t.transpose(0, 1); }},
      {"permuted [7,5,6] of [5,6,7]", {5, 6, 7}, [](const Tensor& t) { return t.permute({2, 0, 1}); }},
      {"stepped slice", {13, 3, 29}, [](const Tensor& t) { return t.slice(2, 1, 28, 3).select(1, 2); }},
      {"broadcast row", {1, 9}, [](const Tensor& t) { return t.expand({8, 9}); }},
      {"0-d", {}, [](const Tensor& t) { return t; }},
      {"empty", {0, 4}, [](const Tensor& t) { return t.transpose(0, 1); }},
      {"large permuted [48,128,512]", {128, 512, 48}, [](const Tensor& t) { return t.permute({2, 0, 1}); }},
  };
  for (const DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64})
    for (const Case& c : cases) {
      INFO(c.name << ", " << dtype_name(dtype));
      const Tensor base = mul_scalar(uniform(c.base, -1000, 1000), 1.0).to(dtype);
      const Tensor ref = naive_ref("copy", [&] { return c.view(base).contiguous(); });
      for_each_kernel("copy", [&](Device d, const std::string& name) {
        const Tensor view = c.view(base.to(d));
        // contiguous() of a contiguous view copies nothing: clone() copies it.
        const Tensor got = view.is_contiguous() ? view.clone() : view.contiguous();
        // memcpy declines a strided source; every other kernel must serve it.
        CHECK(served_or_declined("copy", d.type, name, view.is_contiguous() ? false : name == "memcpy"));
        CHECK(compare(got.to(DType::float64), ref.to(DType::float64), 0, 0) == "");
        // Into a strided destination: the transpose of a fresh tensor, written through copy_.
        if (view.dim() == 2 && view.numel() > 0) {
          Tensor target = zeros({view.size(1), view.size(0)}, TensorOptions(dtype, d));
          Tensor through = target.transpose(0, 1);
          copy_(through, view);
          CHECK(compare(target.transpose(0, 1).to(DType::float64), ref.to(DType::float64), 0, 0) == "");
        }
      });
    }
}

TEST_CASE("fill kernels: every dtype, zero and -0.0, sizes across many chunks, against the naive kernel",
          "[shape]") {
  // 300,007 float64 elements are 2.4 MB: many of fill_contiguous_omp's 128 KiB chunks, the last one partial.
  for (const DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64})
    for (const int64_t n : {int64_t(1), int64_t(1000), int64_t(300007)})
      for (const double value : {0.0, -0.0, 7.0, -2.5}) {
        INFO("dtype " << dtype_name(dtype) << ", n " << n << ", value " << value);
        const Tensor ref = naive_ref("fill", [&] {
          Tensor t = full({n}, 3.0, TensorOptions(dtype, Device::cpu()));
          fill_(t, value);
          return t;
        });
        for_each_kernel("fill", [&](Device d, const std::string& name) {
          Tensor got = full({n}, 3.0, TensorOptions(dtype, d));
          fill_(got, value);
          CHECK(last_kernel("fill", d.type) == name);
          CHECK(compare(got.to(DType::float64), ref.to(DType::float64), 0, 0) == "");
          if (dtype == DType::float64 && value == 0.0) {  // the sign of zero is kept (memset only for +0.0)
            const std::vector<double> v = got.to_vector<double>();
            CHECK(std::signbit(v.front()) == std::signbit(value));
            CHECK(std::signbit(v.back()) == std::signbit(value));
          }
        });
      }
}

// ------------------------------------------------------------------------------------------ values

TEST_CASE("elementwise: values against the C library and broadcasting by hand", "[elementwise]") {
  const Tensor x = from_vector({-2.0, -0.5, 0.0, 0.5, 3.0}, {5}, DType::float64);
  const std::vector<double> v = x.to_vector<double>();
  const std::vector<double> e = minidl::exp(x).to_vector<double>(), t = minidl::tanh(x).to_vector<double>();
  const std::vector<double> s = sigmoid(x).to_vector<double>(), r = relu(x).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    CHECK(e[i] == Approx(std::exp(v[i])));
    CHECK(t[i] == Approx(std::tanh(v[i])));
    CHECK(s[i] == Approx(1.0 / (1.0 + std::exp(-v[i]))));
    CHECK(r[i] == (v[i] > 0 ? v[i] : 0.0));
  }
  // sigmoid saturates without overflow or NaN.
  const std::vector<float> sat = sigmoid(from_vector({-1000, 1000}, {2})).to_vector<float>();
  CHECK(sat == std::vector<float>{0.0f, 1.0f});

  // [2,1] - [3] -> [2,3]: out[i][j] = a[i] - b[j]
  const Tensor a = from_vector({10, 20}, {2, 1}), b = from_vector({1, 2, 3}, {3});
  CHECK(sub(a, b).shape() == Shape{2, 3});
  CHECK(sub(a, b).to_vector<float>() == std::vector<float>{9, 8, 7, 19, 18, 17});
  CHECK(div(b, a).to_vector<float>() == std::vector<float>{0.1f, 0.2f, 0.3f, 0.05f, 0.1f, 0.15f});
  CHECK(pow_scalar(b, 2).to_vector<float>() == std::vector<float>{1, 4, 9});
  CHECK((b * 2.0 + 1.0).to_vector<float>() == std::vector<float>{3, 5, 7});
  CHECK(broadcast_shapes("test", {4, 1, 3}, {5, 1}) == Shape{4, 5, 3});

  // x^0 is constant: its gradient is 0 everywhere, x = 0 included (not 0 * 0^-1 = NaN).
  Tensor z = from_vector({0.0, 2.0}, {2}, DType::float64);
  z.requires_grad_();
  sum(pow_scalar(z, 0.0)).backward();
  CHECK(z.grad().to_vector<double>() == std::vector<double>{0.0, 0.0});
}

TEST_CASE("reduce: values by hand, keepdim and first-maximum ties", "[reduce]") {
  const Tensor x = from_vector({1, 5, 3, 4, 2, 6}, {2, 3});
  CHECK(sum(x).item<float>() == 21.0f);
  CHECK(sum(x, {0}).to_vector<float>() == std::vector<float>{5, 7, 9});
  CHECK(sum(x, {1}, true).shape() == Shape{2, 1});
  CHECK(sum(x, {-1}).to_vector<float>() == std::vector<float>{9, 12});
  CHECK(mean(x, {1}).to_vector<float>() == std::vector<float>{3, 4});
  CHECK(max(x, 1).to_vector<float>() == std::vector<float>{5, 6});
  CHECK(max(x, 0, true).shape() == Shape{1, 3});
  CHECK(argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(argmax(x, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});

  // Ties: the first maximum wins, and only it receives the gradient.
  Tensor t = from_vector({2, 7, 7, 1}, {1, 4}, DType::float64);
  t.requires_grad_();
  CHECK(argmax(t, 1).item<int64_t>() == 1);
  sum(max(t, 1)).backward();
  CHECK(t.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 0});

  // sum's gradient broadcasts back; mean's divides by the count.
  Tensor y = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::float64);
  y.requires_grad_();
  sum(mean(y, {0})).backward();
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
}

TEST_CASE("shape ops: values, storage sharing and copies", "[shape]") {
  const Tensor x = from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  CHECK(x.flatten().shape() == Shape{12});
  CHECK(x.flatten(1).shape() == Shape{2, 6});
  CHECK(x.flatten(0, 1).shape() == Shape{6, 2});
  CHECK(x.permute({2, 0, 1}).contiguous().to_vector<float>() ==
        std::vector<float>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11});
  CHECK(x.slice(1, 0, 3, 2).contiguous().to_vector<float>() == std::vector<float>{0, 1, 4, 5, 6, 7, 10, 11});
  CHECK(x.slice(1, -2, 3).shape() == Shape{2, 2, 2});
  CHECK(x.select(2, -1).to_vector<float>() == std::vector<float>{1, 3, 5, 7, 9, 11});
  CHECK(x.select(1, 1).shares_storage_with(x));

  // clone copies; contiguous of a contiguous tensor does not.
  const Tensor c = x.clone();
  CHECK_FALSE(c.shares_storage_with(x));
  CHECK(x.contiguous().shares_storage_with(x));
  fill_(c, 3);
  CHECK(x.to_vector<float>()[0] == 0.0f);

  // A transposed tensor reshaped must be copied in its logical order.
  CHECK(x.transpose(0, 2).reshape({12}).to_vector<float>() == std::vector<float>{0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11});

  const Tensor a = from_vector({1, 2, 3, 4}, {2, 2}), b = from_vector({5, 6}, {2, 1});
  CHECK(concat({a, b}, 1).to_vector<float>() == std::vector<float>{1, 2, 5, 3, 4, 6});
  CHECK(concat({a, b.transpose(0, 1)}, 0).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(concat({a, b}, -1).shape() == Shape{2, 3});

  const Tensor g = from_vector({10, 11, 12, 20, 21, 22}, {2, 3});
  const Tensor idx = from_vector({2, 0, 1, 1}, {2, 2}, DType::int64);
  CHECK(gather(g, 1, idx).to_vector<float>() == std::vector<float>{12, 10, 21, 21});
  CHECK(gather(g, 0, from_vector({1, 0, 1}, {1, 3}, DType::int64)).to_vector<float>() ==
        std::vector<float>{20, 11, 22});
  const Tensor rows = from_vector({1, 1, 0}, {3}, DType::int64);
  CHECK(index_select(g, 0, rows).shape() == Shape{3, 3});
  CHECK(index_select(g, 0, rows).to_vector<float>() == std::vector<float>{20, 21, 22, 20, 21, 22, 10, 11, 12});
  CHECK(index_select(g, 1, from_vector({2, 0}, {2}, DType::int64)).to_vector<float>() ==
        std::vector<float>{12, 10, 22, 20});
  const Tensor labels = from_vector({7, 3, 9}, {3}, DType::int64);
  CHECK(index_select(labels, 0, from_vector({2, 2, 1}, {3}, DType::int64)).to_vector<int64_t>() ==
        std::vector<int64_t>{9, 9, 3});
}

// ------------------------------------------------------------------------------------------ gradients

TEST_CASE("gradcheck: elementwise ops (float64, with broadcasting)", "[elementwise][gradcheck]") {
  manual_seed(21);
  struct Case {
    const char* name;
    GradFn f;
    std::vector<Tensor> inputs;
  };
  const std::vector<Case> cases = {
      {"add broadcast", [](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {leaf({3, 4}), leaf({4})}},
      {"add [2,1,3]+[4,1]",
       [](const std::vector<Tensor>& in) { return add(in[0], in[1]); },
       {leaf({2, 1, 3}), leaf({4, 1})}},
      {"sub broadcast", [](const std::vector<Tensor>& in) { return sub(in[0], in[1]); }, {leaf({3, 1}), leaf({3, 5})}},
      {"mul broadcast",
       [](const std::vector<Tensor>& in) { return mul(in[0], in[1]); },
       {leaf({2, 3, 4}), leaf({3, 1})}},
      {"mul same tensor twice", [](const std::vector<Tensor>& in) { return mul(in[0], in[0]); }, {leaf({5})}},
      {"div broadcast",
       [](const std::vector<Tensor>& in) { return div(in[0], in[1]); },
       {leaf({3, 4}), leaf({4}, 0.5, 2)}},
      {"div by 0-d", [](const std::vector<Tensor>& in) { return div(in[0], in[1]); }, {leaf({3}), leaf({}, 0.5, 2)}},
      {"add_scalar", [](const std::vector<Tensor>& in) { return add_scalar(in[0], 2.5); }, {leaf({3, 2})}},
      {"mul_scalar", [](const std::vector<Tensor>& in) { return mul_scalar(in[0], -1.5); }, {leaf({3, 2})}},
      {"pow_scalar 2.5", [](const std::vector<Tensor>& in) { return pow_scalar(in[0], 2.5); }, {leaf({3, 2}, 0.2, 2)}},
      {"pow_scalar 3", [](const std::vector<Tensor>& in) { return pow_scalar(in[0], 3); }, {leaf({4}, -2, 2)}},
      {"neg", [](const std::vector<Tensor>& in) { return neg(in[0]); }, {leaf({4})}},
      {"exp", [](const std::vector<Tensor>& in) { return minidl::exp(in[0]); }, {leaf({2, 3}, -2, 2)}},
      {"log", [](const std::vector<Tensor>& in) { return minidl::log(in[0]); }, {leaf({2, 3}, 0.2, 3)}},
      {"sqrt", [](const std::vector<Tensor>& in) { return minidl::sqrt(in[0]); }, {leaf({2, 3}, 0.2, 3)}},
      {"relu", [](const std::vector<Tensor>& in) { return relu(in[0]); }, {leaf({3, 4}, -2, 2)}},
      {"sigmoid", [](const std::vector<Tensor>& in) { return sigmoid(in[0]); }, {leaf({3, 4}, -4, 4)}},
      {"tanh", [](const std::vector<Tensor>& in) { return minidl::tanh(in[0]); }, {leaf({3, 4}, -2, 2)}},
      {"chain",
       [](const std::vector<Tensor>& in) { return mul(sigmoid(in[0]), minidl::exp(neg(in[1]))); },
       {leaf({2, 3}), leaf({3})}},
  };
  for (const Case& c : cases) {
    INFO("op " << c.name);
    CHECK(gradcheck(c.f, c.inputs) == "");
  }
}

TEST_CASE("gradcheck: reductions (float64)", "[reduce][gradcheck]") {
  manual_seed(22);
  const Tensor x = leaf({3, 4, 5});
  for (const std::vector<int>& dims : std::vector<std::vector<int>>{{}, {0}, {1}, {-1}, {0, 2}})
    for (bool keepdim : {false, true}) {
      INFO("dims count " << dims.size() << ", keepdim " << keepdim);
      CHECK(gradcheck([&](const std::vector<Tensor>& in) { return sum(in[0], dims, keepdim); }, {x}) == "");
      CHECK(gradcheck([&](const std::vector<Tensor>& in) { return mean(in[0], dims, keepdim); }, {x}) == "");
    }
  for (int dim : {0, 1, 2, -1})
    for (bool keepdim : {false, true}) {
      INFO("max dim " << dim << ", keepdim " << keepdim);
      CHECK(gradcheck([&](const std::vector<Tensor>& in) { return max(in[0], dim, keepdim); }, {x}) == "");
    }
  // A reduction of a non-contiguous view.
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return sum(in[0].transpose(0, 2), {1}); }, {x}) == "");
}

TEST_CASE("gradcheck: shape and indexing ops (float64)", "[shape][gradcheck]") {
  manual_seed(23);
  const Tensor x = leaf({2, 3, 4});
  struct Case {
    const char* name;
    GradFn f;
  };
  const std::vector<Case> cases = {
      {"reshape",
       [](const std::vector<Tensor>& in) {
         return in[0].reshape({4, -1});
       }},
      {"view",
       [](const std::vector<Tensor>& in) {
         return in[0].view({6, 4});
       }},
      {"reshape of a transpose", [](const std::vector<Tensor>& in) { return in[0].transpose(0, 2).reshape({24}); }},
      {"permute",
       [](const std::vector<Tensor>& in) {
         return in[0].permute({2, 0, 1});
       }},
      {"transpose", [](const std::vector<Tensor>& in) { return in[0].transpose(-1, 0); }},
      {"slice", [](const std::vector<Tensor>& in) { return in[0].slice(2, 1, 3); }},
      {"slice with step", [](const std::vector<Tensor>& in) { return in[0].slice(2, 0, 4, 3); }},
      {"slice of a slice", [](const std::vector<Tensor>& in) { return in[0].slice(1, 1, 3).slice(2, 1, 4, 2); }},
      {"select", [](const std::vector<Tensor>& in) { return in[0].select(1, -1); }},
      {"expand",
       [](const std::vector<Tensor>& in) {
         return in[0].slice(1, 0, 1).expand({3, 2, 5, 4});
       }},
      {"unsqueeze", [](const std::vector<Tensor>& in) { return in[0].unsqueeze(1); }},
      {"squeeze", [](const std::vector<Tensor>& in) { return in[0].slice(1, 2, 3).squeeze(1); }},
      {"contiguous", [](const std::vector<Tensor>& in) { return in[0].transpose(0, 1).contiguous(); }},
      {"clone", [](const std::vector<Tensor>& in) { return in[0].clone(); }},
      {"flatten", [](const std::vector<Tensor>& in) { return in[0].flatten(1); }},
      {"view used twice", [](const std::vector<Tensor>& in) { return add(in[0].select(0, 0), in[0].select(0, 1)); }},
  };
  for (const Case& c : cases) {
    INFO("op " << c.name);
    CHECK(gradcheck(c.f, {x}) == "");
  }

  const Tensor a = leaf({2, 3}), b = leaf({2, 5}), b0 = leaf({4, 3});
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return concat({in[0], in[1]}, 1); }, {a, b}) == "");
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return concat({in[0], in[1], in[0]}, 0); }, {a, b0}) == "");

  const Tensor index = from_vector({0, 2, 2, 1, 1, 1, 0, 0}, {2, 4}, DType::int64);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 1, index); }, {a}) == "");
  const Tensor index0 = from_vector({1, 0, 1, 1, 1, 0}, {2, 3}, DType::int64);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 0, index0); }, {a}) == "");
  // index_select: a row picked twice, one never (its gradient is zero), along either dim.
  const Tensor picks = from_vector({1, 1, 0, 1}, {4}, DType::int64);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return index_select(in[0], 0, picks); }, {a}) == "");
  const Tensor columns = from_vector({2, 0, 2}, {3}, DType::int64);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return index_select(in[0], 1, columns); }, {a}) == "");
}

// ------------------------------------------------------------------------------------------ errors

TEST_CASE("elementwise, reduce and shape ops report errors naming the op and shapes", "[elementwise][errors]") {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_WITH(add(a, b), Catch::Contains("add: shapes [2,3] and [4] cannot be broadcast"));
  CHECK_THROWS_WITH(mul(zeros({5, 2}), zeros({3, 1})),
                    Catch::Contains("mul") && Catch::Contains("[5,2]") && Catch::Contains("[3,1]"));
  CHECK_THROWS_WITH(add(a, zeros({2, 3}, DType::float64)), Catch::Contains("add: dtypes differ"));
  CHECK_THROWS_WITH(minidl::exp(zeros({2}, DType::int64)), Catch::Contains("exp: needs a float32 or float64"));
  CHECK_THROWS_WITH(sum(a, {2}), Catch::Contains("sum: dim 2 out of range"));
  CHECK_THROWS_WITH(sum(a, {1, -1}), Catch::Contains("appears twice"));
  CHECK_THROWS_WITH(mean(zeros({0, 3}), {0}), Catch::Contains("mean: reducing over zero elements"));
  CHECK_THROWS_WITH(argmax(zeros({0}), 0), Catch::Contains("argmax: empty tensor"));
  CHECK_THROWS_WITH(a.permute({0}), Catch::Contains("permute"));
  CHECK_THROWS_WITH(a.permute({1, 1}), Catch::Contains("repeated"));
  CHECK_THROWS_WITH(a.slice(1, 0, 2, 0), Catch::Contains("step must be positive"));
  CHECK_THROWS_WITH(a.select(0, 2), Catch::Contains("select: index 2 out of range"));
  CHECK_THROWS_WITH(a.squeeze(1), Catch::Contains("squeeze: dim 1 has size 3"));
  CHECK_THROWS_WITH(a.flatten(1, 0), Catch::Contains("flatten"));
  CHECK_THROWS_WITH(concat({a, zeros({2, 3, 1})}, 0), Catch::Contains("concat") && Catch::Contains("ranks"));
  CHECK_THROWS_WITH(concat({a, zeros({3, 3})}, 1), Catch::Contains("differ outside dim 1"));
  CHECK_THROWS_WITH(gather(a, 1, zeros({2, 3}, DType::int32)), Catch::Contains("gather: index must be int64"));
  CHECK_THROWS_WITH(gather(a, 1, zeros({3, 3}, DType::int64)), Catch::Contains("must match input shape [2,3]"));
  CHECK_THROWS_WITH(gather(a, 1, full({2, 1}, 3, DType::int64)), Catch::Contains("index 3 out of range [0, 3)"));
  CHECK_THROWS_WITH(index_select(a, 0, zeros({2}, DType::int32)), Catch::Contains("index_select: index must be int64"));
  CHECK_THROWS_WITH(index_select(a, 0, zeros({2, 1}, DType::int64)), Catch::Contains("index must be 1-D"));
  CHECK_THROWS_WITH(index_select(a, 2, zeros({1}, DType::int64)), Catch::Contains("index_select: dim 2 out of range"));
  CHECK_THROWS_WITH(index_select(a, 0, full({1}, 2, DType::int64)), Catch::Contains("index 2 out of range [0, 2)"));
  CHECK_THROWS_WITH(index_select(a, 0, full({1}, -1, DType::int64)), Catch::Contains("index -1 out of range"));
  CHECK_THROWS_WITH(index_select(zeros({2}, DType::int32), 0, zeros({1}, DType::int64)),
                    Catch::Contains("float32, float64 or int64 input, got int32"));
}
