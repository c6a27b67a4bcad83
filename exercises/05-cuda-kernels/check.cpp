// exercises/05-cuda-kernels/check.cpp — the checker of exercise 5 (GPU): relu and row sums "student" on cuda
// against the CPU's naive kernels, on sizes that need the grid-stride loop and rows longer than a block,
// through the ops, then the bench next to minidl's own GPU kernels. Without a usable GPU it exits 77
// (skipped), after the build has compiled the student's file.
#include <cmath>

#include "exercises/05-cuda-kernels/cuda_kernels.h"
#include "exercises/common/exercise.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;
using exercise::kStudent;

namespace {

std::string check_relu(const Shape& shape) {
  const Tensor x = testing::uniform(shape, -1, 1, DType::float32);
  Tensor expected = empty(shape);
  exercise::call_kernel<UnaryKernel>("relu", DeviceType::cpu, "naive", x, expected);
  const Tensor xg = x.to(Device::cuda(0));
  Tensor out = full(shape, -777, TensorOptions(DType::float32, Device::cuda(0)));
  if (!exercise::call_kernel<UnaryKernel>("relu", DeviceType::cuda, kStudent, xg, out))
    return "your kernel declined a contiguous float32 tensor";
  const std::string diff = testing::compare(out, expected, 0, 0);
  return diff.empty() ? "" : str_cat("relu of ", shape_numel(shape), " elements (a grid of at most 1024 blocks of 256 "
                                     "threads = 262144 threads)\n", diff, "(-777: an element no thread wrote)");
}

std::string check_sum(int64_t rows, int64_t cols) {
  const Tensor x = testing::uniform({rows, cols}, -1, 1, DType::float32);
  Tensor expected = empty({rows});
  exercise::call_kernel<RowReduceKernel>("sum", DeviceType::cpu, "naive", x, expected);
  const Tensor xg = x.to(Device::cuda(0));
  Tensor out = full({rows}, -777, TensorOptions(DType::float32, Device::cuda(0)));
  if (!exercise::call_kernel<RowReduceKernel>("sum", DeviceType::cuda, kStudent, xg, out))
    return "your kernel declined a float32 [rows, cols]";
  const std::string diff = testing::compare(out, expected, 1e-5, 2e-5 * std::sqrt(static_cast<double>(cols)) + 1e-6);
  return diff.empty() ? "" : str_cat("x [", rows, ", ", cols, "], one block of 256 threads per row\n", diff);
}

}  // namespace

int main(int argc, char** argv) {
  exercise::Checker c(argc, argv, {5, "first CUDA kernels: relu and a row sum", "exercises/05-cuda-kernels/cuda_kernels.cu"});
  c.require_cuda();
  register_student_cuda_kernels();

  c.section("5a  relu on the GPU against the CPU's naive relu");
  c.check("registered for key \"relu\" on cuda",
          [] { return exercise::registered("relu", DeviceType::cuda, "register_student_cuda_kernels()"); });
  c.check("5 elements (one block, most threads idle)", [] { return check_relu({5}); });
  c.check("[64, 32, 26, 26] (1.4 M elements: more than the grid's 262144 threads)", [] { return check_relu({64, 32, 26, 26}); });
  c.check("4194305 elements (16 per thread, and one more)", [] { return check_relu({4194305}); });

  c.section("5b  row sums on the GPU against the CPU's naive sum");
  c.check("registered for key \"sum\" on cuda",
          [] { return exercise::registered("sum", DeviceType::cuda, "register_student_cuda_kernels()"); });
  c.check("[1, 1]", [] { return check_sum(1, 1); });
  c.check("[3, 5] (rows shorter than the block)", [] { return check_sum(3, 5); });
  c.check("[7, 1000] (each thread adds 3 or 4 columns)", [] { return check_sum(7, 1000); });
  c.check("[4096, 33]", [] { return check_sum(4096, 33); });
  c.check("[2, 100003]", [] { return check_sum(2, 100003); });

  c.section("through the ops, with your kernels selected");
  c.check("sum(relu(x), {1}) on cuda runs both of your kernels", [] {
    const Tensor x = testing::uniform({300, 500}, -1, 1, DType::float32);
    const Tensor expected = sum(relu(x), {1});
    exercise::Selected r("relu", DeviceType::cuda, kStudent), s("sum", DeviceType::cuda, kStudent);
    const Tensor got = sum(relu(x.to(Device::cuda(0))), {1});
    if (last_kernel("relu", DeviceType::cuda) != kStudent || last_kernel("sum", DeviceType::cuda) != kStudent)
      return str_cat("served by relu=", last_kernel("relu", DeviceType::cuda), ", sum=", last_kernel("sum", DeviceType::cuda));
    return testing::compare(got, expected, 1e-5, 1e-4);
  });

  c.bench({"relu"}, {kStudent, "v1_strided", "v2_vectorized", "cudnn"}, {"relu:64x32x26x26", "relu:33554432"}, "cuda");
  c.bench({"sum"}, {kStudent, "rows"}, {"sum:4096x1024", "sum:64x1048576"}, "cuda");
  return c.finish();
}
