// tests/test_matmul.cpp — matmul and linear: every kernel against the naive reference (all transpose
// flags, odd and tile-crossing sizes, batches, broadcasting, 1-D operands, transposed views), float64
// gradient checks, and the error messages.
#include <catch2/catch.hpp>

#include <sstream>

#include "core/dispatch.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// The product computed with plain loops over the operands broadcast to full size (NumPy rules), built
// only from views and to_vector: an oracle independent of the matmul front end.
Tensor expected_matmul(const Tensor& a, const Tensor& b) {
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  const Shape batch = broadcast_shapes("expected_matmul", Shape(a2.shape().begin(), a2.shape().end() - 2),
                                       Shape(b2.shape().begin(), b2.shape().end() - 2));
  Shape full_a = batch, full_b = batch, out_shape = batch;
  full_a.insert(full_a.end(), {m, k});
  full_b.insert(full_b.end(), {k, n});
  const std::vector<double> va = a2.expand(full_a).contiguous().to_vector<double>();
  const std::vector<double> vb = b2.expand(full_b).contiguous().to_vector<double>();
  const int64_t count = shape_numel(batch);
  std::vector<double> out(count * m * n, 0.0);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < k; ++j) acc += va[(i * m + r) * k + j] * vb[(i * k + j) * n + c];
        out[(i * m + r) * n + c] = acc;
      }
  if (a.dim() >= 2) out_shape.push_back(m);
  if (b.dim() >= 2) out_shape.push_back(n);
  return from_vector(out, out_shape, a.dtype());
}

// The kernel call on packed operands, by the naive CPU kernel.
Tensor naive_kernel_product(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  SelectionReset reset;
  select_kernel("matmul", DeviceType::cpu, "naive");
  const int64_t m = ta ? a.shape()[2] : a.shape()[1], n = tb ? b.shape()[1] : b.shape()[2];
  Tensor out = empty({a.shape()[0], m, n}, a.options());
  dispatch<MatmulKernel>("matmul", Device::cpu(), a, b, out, ta, tb);
  CHECK(last_kernel("matmul", DeviceType::cpu) == "naive");
  return out;
}

// The all-kernels sweep of one matmul kernel: "" when kernel `name` on device d serves every plain
// product (float32, no transposes: odd sizes, a 1x1x1, tile edges, batches) with the naive kernel's
// result, and, on the inputs a kernel may refuse (a transposed operand, float64), either serves them
// correctly or declines them; otherwise the failures, one per line. Sizes: odd ones, a 1x1x1, leftovers of
// the blocked kernel's 4-row groups and of the packed kernels' 6x16 and 12x32 tiles, sizes crossing the
// blocked kernel's 128 (k) and 512 (n) tiles and the packed kernels' 256 (k) and 144/288 (m) blocks, and
// products big enough for openblas and packed_omp to thread them by batch entry, by columns and by rows.
std::string matmul_sweep(Device d, const std::string& name) {
  struct Size {
    int64_t batch, m, k, n;
  };
  const std::vector<Size> sizes = {{1, 7, 13, 5},    {3, 17, 33, 9},   {2, 1, 1, 1},    {1, 65, 130, 67},
                                   {2, 6, 300, 530}, {1, 301, 41, 70}, {3, 64, 50, 70}, {1, 13, 260, 33}};
  SelectionReset reset;
  std::ostringstream failures;
  for (DType dtype : {DType::float32, DType::float64})
    for (const Size& s : sizes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          std::ostringstream what;
          what << dtype_name(dtype) << " batch " << s.batch << " m " << s.m << " k " << s.k << " n " << s.n
               << " trans_a " << ta << " trans_b " << tb;
          const Tensor a = uniform({s.batch, ta ? s.k : s.m, ta ? s.m : s.k}, -1, 1, dtype);
          const Tensor b = uniform({s.batch, tb ? s.n : s.k, tb ? s.k : s.n}, -1, 1, dtype);
          const Tensor ref = naive_kernel_product(a, b, ta, tb);
          select_kernel("matmul", d.type, name);
          Tensor out = empty({s.batch, s.m, s.n}, TensorOptions(dtype, d));
          try {
            dispatch<MatmulKernel>("matmul", d, a.to(d), b.to(d), out, ta, tb);
          } catch (const Error& e) {
            failures << what.str() << ": " << e.what() << "\n";
            continue;
          }
          const bool may_decline = dtype != DType::float32 || ta || tb;  // ops/kernel_signatures.h
          if (!served_or_declined("matmul", d.type, name, may_decline)) {
            failures << what.str() << ": " << name << " declined (served by " << last_kernel("matmul", d.type)
                     << ")\n";
            continue;
          }
          if (last_kernel("matmul", d.type) != name) continue;  // a documented decline
          const Tolerance tol = dtype == DType::float32 ? matmul_tolerance(name, s.k, {1e-4, 1e-4})
                                                        : Tolerance{1e-10, 1e-10};
          const std::string diff = compare(out, ref, tol.rtol, tol.atol);
          if (!diff.empty()) failures << what.str() << ": " << diff;
        }
  return failures.str();
}

// Test kernels: the naive kernel behind a kernel that declines transposed operands, and one that
// declines everything.
bool naive_matmul(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb) {
  for (const KernelInfo* k : KernelRegistry::instance().candidates("matmul", DeviceType::cpu))
    if (k->name == "naive") return reinterpret_cast<MatmulKernel*>(k->fn)(a, b, out, ta, tb);
  return false;
}
bool declines_transposed(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb) {
  return !ta && !tb && naive_matmul(a, b, out, ta, tb);
}
bool declines_everything(const Tensor&, const Tensor&, Tensor&, bool, bool) { return false; }

}  // namespace

TEST_CASE("matmul: a hand-computed product", "[matmul]") {
  const Tensor a = from_vector({1, 2, 3, 4}, {2, 2});
  const Tensor b = from_vector({5, 6, 7, 8}, {2, 2});
  for_each_kernel("matmul", [&](Device d, const std::string& name) {
    CHECK(matmul(a.to(d), b.to(d)).to_vector<float>() == std::vector<float>{19, 22, 43, 50});
    CHECK(last_kernel("matmul", d.type) == name);
    CHECK(matmul(from_vector({1, 2}, {2}).to(d), b.to(d)).to_vector<float>() == std::vector<float>{19, 22});
  });
}

TEST_CASE("matmul kernels match the naive kernel for every transpose flag and dtype", "[matmul]") {
  for (Device d : test_devices())
    for (const std::string& name : kernels_for("matmul", d.type)) {
      INFO("device " << d.str() << ", kernel " << name);
      CHECK(matmul_sweep(d, name) == "");
    }
}

TEST_CASE("the matmul sweep accepts a kernel that declines transposed operands, not one that declines all",
          "[matmul][decline]") {
  {
    ScopedKernel<MatmulKernel> k("matmul", DeviceType::cpu, "test_declines_transposed", declines_transposed);
    CHECK(matmul_sweep(Device::cpu(), "test_declines_transposed") == "");
  }
  ScopedKernel<MatmulKernel> k("matmul", DeviceType::cpu, "test_declines_everything", declines_everything);
  const std::string failures = matmul_sweep(Device::cpu(), "test_declines_everything");
  CHECK_THAT(failures, Catch::Contains("float32 batch 1 m 7 k 13 n 5 trans_a 0 trans_b 0: "
                                       "test_declines_everything declined (served by "));
}

TEST_CASE("the guide's kernel, ikj, passes the sweep and declines float64 and a transposed b",
          "[matmul][guide]") {
  CHECK(matmul_sweep(Device::cpu(), "ikj") == "");
  SelectionReset reset;
  select_kernel("matmul", DeviceType::cpu, "ikj");
  const Tensor a = uniform({1, 3, 4}, -1, 1, DType::float32), b = uniform({1, 5, 4}, -1, 1, DType::float32);
  Tensor out = empty({1, 3, 5});
  dispatch<MatmulKernel>("matmul", Device::cpu(), a, b, out, false, /*trans_b=*/true);
  CHECK(last_declined_kernels("matmul", DeviceType::cpu) == std::vector<std::string>{"ikj"});
  Tensor out64 = empty({1, 3, 5}, DType::float64);
  dispatch<MatmulKernel>("matmul", Device::cpu(), a.to(DType::float64), b.to(DType::float64), out64, false, true);
  CHECK(last_declined_kernels("matmul", DeviceType::cpu) == std::vector<std::string>{"ikj"});
  dispatch<MatmulKernel>("matmul", Device::cpu(), a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous(),
                         out, /*trans_a=*/true, false);
  CHECK(last_kernel("matmul", DeviceType::cpu) == "ikj");
}

TEST_CASE("matmul with an empty inner dimension is zeros, and empty products are empty", "[matmul]") {
  Tensor a = empty({2, 3, 0}, DType::float64).requires_grad_(), b = empty({2, 0, 4}, DType::float64).requires_grad_();
  Tensor out = matmul(a, b);
  CHECK(compare(out, zeros({2, 3, 4}), 0, 0) == "");
  sum(out).backward();
  CHECK(a.grad().shape() == Shape{2, 3, 0});
  CHECK(b.grad().shape() == Shape{2, 0, 4});
  CHECK(matmul(zeros({0, 5}), zeros({5, 3})).shape() == Shape{0, 3});
  CHECK(linear(zeros({0, 5}), zeros({3, 5}), zeros({3})).shape() == Shape{0, 3});
}

TEST_CASE("matmul front end: batches, broadcasting, 1-D operands and views on every kernel", "[matmul]") {
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 4}},    {{3, 5, 7}, {3, 7, 4}}, {{2, 1, 5, 7}, {3, 7, 4}},
      {{4, 5, 7}, {7, 3}}, {{5, 7}, {3, 7, 4}},    {{1, 5, 7}, {2, 2, 7, 3}},
      {{7}, {7, 4}},       {{5, 7}, {7}},          {{7}, {7}},
      {{7}, {2, 7, 3}},    {{2, 5, 7}, {7}},       {{1, 1, 5, 7}, {7, 3}},
  };
  for (const Case& c : cases) {
    INFO("a " << shape_str(c.a) << " b " << shape_str(c.b));
    const Tensor a = uniform(c.a, -1, 1, DType::float32), b = uniform(c.b, -1, 1, DType::float32);
    const Tensor ref = expected_matmul(a, b);
    for_each_kernel("matmul", [&](Device d, const std::string& name) {
      const Tensor out = matmul(a.to(d), b.to(d));
      CHECK(last_kernel("matmul", d.type) == name);
      const Tolerance tol = matmul_tolerance(name, 7, {1e-4, 1e-5});  // K = 7 in every case
      CHECK(compare(out, ref, tol.rtol, tol.atol) == "");
    });
  }
  // Transposed views go to the kernels as transpose flags; other strided views are packed first.
  const Tensor w = uniform({4, 7}, -1, 1, DType::float32), x = uniform({7, 5}, -1, 1, DType::float32);
  const Tensor batched = uniform({3, 7, 5}, -1, 1, DType::float32), wide = uniform({5, 14}, -1, 1, DType::float32);
  for_each_kernel("matmul", [&](Device d, const std::string& name) {
    const Tensor wd = w.to(d), xd = x.to(d), bd = batched.to(d), vd = wide.to(d);
    const Tolerance tol = matmul_tolerance(name, 7, {1e-4, 1e-5});  // K = 7 in every product
    CHECK(compare(matmul(xd.transpose(0, 1), wd.transpose(0, 1)), expected_matmul(x.transpose(0, 1), w.transpose(0, 1)),
                  tol.rtol, tol.atol) == "");
    CHECK(served_or_declined("matmul", d.type, name, /*may_decline=*/true));  // transposed operands
    CHECK(compare(matmul(bd.transpose(1, 2), xd), expected_matmul(batched.transpose(1, 2), x), tol.rtol, tol.atol) ==
          "");
    CHECK(compare(matmul(vd.slice(1, 0, 14, 2), xd), expected_matmul(wide.slice(1, 0, 14, 2), x), tol.rtol,
                  tol.atol) == "");
  });
}

TEST_CASE("linear on every kernel matches x W^T + b", "[matmul][linear]") {
  const Tensor x = uniform({6, 9}, -1, 1, DType::float32), w = uniform({5, 9}, -1, 1, DType::float32);
  const Tensor bias = uniform({5}, -1, 1, DType::float32), x3 = uniform({2, 3, 9}, -1, 1, DType::float32);
  const Tensor ref = add(expected_matmul(x, w.transpose(0, 1)), bias);
  const Tensor ref3 = expected_matmul(x3, w.transpose(0, 1));
  for_each_kernel("matmul", [&](Device d, const std::string& name) {
    const Tolerance tol = matmul_tolerance(name, 9, {1e-4, 1e-5});  // K = 9
    CHECK(compare(linear(x.to(d), w.to(d), bias.to(d)), ref, tol.rtol, tol.atol) == "");
    CHECK(served_or_declined("matmul", d.type, name, /*may_decline=*/true));  // linear passes W transposed
    CHECK(compare(linear(x3.to(d), w.to(d)), ref3, tol.rtol, tol.atol) == "");
  });
}

TEST_CASE("matmul and linear gradients (float64 finite differences, every CPU kernel)", "[matmul][gradcheck]") {
  SelectionReset reset;
  auto leaf = [](const Shape& s) { return uniform(s, -1, 1).requires_grad_(); };
  auto mm = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  for (const std::string& name : kernels_for("matmul", DeviceType::cpu)) {
    INFO("kernel " << name);
    select_kernel("matmul", DeviceType::cpu, name);
    CHECK(gradcheck(mm, {leaf({3, 4}), leaf({4, 5})}) == "");  // 2-D
    CHECK(served_or_declined("matmul", DeviceType::cpu, name, /*may_decline=*/true));  // float64
    CHECK(gradcheck(mm, {leaf({2, 3, 4}), leaf({2, 4, 5})}) == "");     // batched
    CHECK(gradcheck(mm, {leaf({2, 1, 3, 4}), leaf({3, 4, 2})}) == "");  // broadcast batch dims
    CHECK(gradcheck(mm, {leaf({3, 4}), leaf({2, 4, 5})}) == "");        // a broadcast over b's batch
    CHECK(gradcheck(mm, {leaf({2, 3, 4}), leaf({4, 5})}) == "");        // folded into one product
    CHECK(gradcheck(mm, {leaf({4}), leaf({4, 5})}) == "");              // 1-D first
    CHECK(gradcheck(mm, {leaf({3, 4}), leaf({4})}) == "");              // 1-D second
    CHECK(gradcheck(mm, {leaf({4}), leaf({4})}) == "");                 // dot product
    CHECK(gradcheck(mm, {leaf({4}), leaf({2, 4, 3})}) == "");           // 1-D against a batch
    // Transposed views (passed to the kernel with transpose flags).
    CHECK(gradcheck(
              [](const std::vector<Tensor>& in) { return matmul(in[0].transpose(-1, -2), in[1].transpose(-1, -2)); },
              {leaf({2, 4, 3}), leaf({2, 5, 4})}) == "");
    CHECK(gradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[1].transpose(0, 1)); },
                    {leaf({3, 4}), leaf({5, 4})}) == "");
    // linear, with and without bias, 2-D, 3-D and 1-D input.
    auto lin = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
    auto lin_nobias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
    CHECK(gradcheck(lin, {leaf({4, 6}), leaf({3, 6}), leaf({3})}) == "");
    CHECK(gradcheck(lin, {leaf({2, 3, 6}), leaf({3, 6}), leaf({3})}) == "");
    CHECK(gradcheck(lin_nobias, {leaf({4, 6}), leaf({3, 6})}) == "");
    CHECK(gradcheck(lin_nobias, {leaf({6}), leaf({3, 6})}) == "");
  }
}

TEST_CASE("linear computes only the gradients that are needed", "[matmul][linear]") {
  Tensor x = uniform({4, 6}, -1, 1);
  Tensor w = uniform({3, 6}, -1, 1).requires_grad_();
  Tensor b = uniform({3}, -1, 1);
  sum(linear(x, w, b)).backward();
  CHECK(w.grad().defined());
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(b.grad().defined());
  // dL/dW for L = sum(x W^T): every row of W gets the column sums of x.
  CHECK(compare(w.grad(), sum(x, {0}, true).expand({3, 6}), 1e-12, 1e-12) == "");
}

TEST_CASE("matmul and linear errors name the op and the shapes", "[matmul][errors]") {
  CHECK_THROWS_WITH(matmul(zeros({64, 9216}), zeros({128, 9216})),
                    "matmul: shapes [64,9216] and [128,9216] do not align; did you mean to transpose the second?");
  CHECK_THROWS_WITH(matmul(zeros({3, 4}), zeros({3, 5})),
                    "matmul: shapes [3,4] and [3,5] do not align; did you mean to transpose the first?");
  CHECK_THROWS_WITH(matmul(zeros({3, 4}), zeros({5, 3})),
                    "matmul: shapes [3,4] and [5,3] do not align; did you mean to transpose both?");
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 5})),
                    "matmul: shapes [2,3] and [4,5] do not align (3 columns against 4 rows)");
  CHECK_THROWS_WITH(matmul(zeros({4}), zeros({5})), Catch::StartsWith("matmul: shapes [4] and [5] do not align"));
  CHECK_THROWS_WITH(
      matmul(zeros({2, 3, 4}), zeros({3, 4, 5})),
      "matmul: the batch dimensions of shapes [2,3,4] and [3,4,5] cannot be broadcast together ([2] vs [3])");
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({3, 2}, DType::float64)), Catch::Contains("matmul: dtypes differ"));
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({3, 2}, DType::int64)),
                    Catch::Contains("matmul: needs a float32 or float64"));
  CHECK_THROWS_WITH(matmul(zeros({}), zeros({3})), Catch::Contains("matmul: operands need at least one dimension"));
  CHECK_THROWS_WITH(linear(zeros({64, 9217}), zeros({128, 9216})),
                    "linear: input of shape [64,9217] has 9217 features but the weight [128,9216] expects 9216");
  CHECK_THROWS_WITH(linear(zeros({4, 6}), zeros({3, 6}), zeros({4})), Catch::Contains("linear: bias of shape [4]"));
  CHECK_THROWS_WITH(linear(zeros({4, 6}), zeros({6})), Catch::Contains("linear: expected a 2-D tensor"));
}
