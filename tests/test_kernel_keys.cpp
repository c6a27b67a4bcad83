// tests/test_kernel_keys.cpp — typed kernel keys (core/kernel_key.h) and named priorities (core/dispatch.h):
// a kernel of the wrong signature does not compile, a dispatch by key object finds the same list as one
// by name and caches its table slot, and two key objects of one name cannot carry two signatures.
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <utility>

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"
#include "ops/ops.h"
#include "tests/test_util.h"

using namespace minidl;

namespace {

// Whether register_kernel(keys::relu, ...) accepts a function of type F: only UnaryKernel compiles.
template <class F, class = void>
struct registers_as_relu : std::false_type {};
template <class F>
struct registers_as_relu<F, std::void_t<decltype(register_kernel(keys::relu, DeviceType::cpu, std::string(),
                                                                 Priority::reference, std::string(),
                                                                 std::declval<F*>()))>> : std::true_type {};
static_assert(registers_as_relu<UnaryKernel>::value, "a UnaryKernel registers under keys::relu");
static_assert(!registers_as_relu<BinaryKernel>::value, "a BinaryKernel must not register under keys::relu");

// Whether dispatch(keys::relu, ...) compiles with arguments Args.
template <class Void, class... Args>
struct dispatches_relu : std::false_type {};
template <class... Args>
struct dispatches_relu<std::void_t<decltype(dispatch(keys::relu, std::declval<Device>(), std::declval<Args>()...))>,
                       Args...> : std::true_type {};
static_assert(dispatches_relu<void, const Tensor&, Tensor&>::value, "relu's arguments dispatch");

// The named levels are today's integers: the default kernel of every key stays the same.
static_assert(static_cast<int>(Priority::reference) == 0 && static_cast<int>(Priority::portable) == 10 &&
                  static_cast<int>(Priority::tuned) == 20 && static_cast<int>(Priority::preferred) == 30,
              "priority levels");
static_assert(static_cast<int>(Priority::tuned + 3) == 23 && static_cast<int>(Priority::portable - 5) == 5,
              "priority offsets");

bool relu_other_signature(const Tensor& a, const Tensor& b, Tensor& out) {
  (void)a;
  (void)b;
  (void)out;
  return false;
}

}  // namespace

TEST_CASE("kernel keys: a key object names its key and dispatches like the name", "[dispatch][keys]") {
  testing::SelectionReset reset;
  CHECK(std::string(keys::relu.name()) == "relu");
  CHECK(std::string(keys::conv2d_backward_input.name()) == "conv2d.backward_input");
  CHECK(std::string(keys::copy.name()) == "copy");

  KernelRegistry& registry = KernelRegistry::instance();
  const Tensor x = from_vector({-1.0, 2.0}, {2}, DType::float32);
  Tensor out = empty({2}, DType::float32);
  dispatch(keys::relu, Device::cpu(), x, out);
  CHECK(out.to_vector<float>() == std::vector<float>{0, 2});
  CHECK(keys::relu.cached_slot(DeviceType::cpu) != nullptr);
  CHECK(&registry.candidates(keys::relu, DeviceType::cpu) == &registry.candidates("relu", DeviceType::cpu));
  CHECK(last_kernel(keys::relu, DeviceType::cpu) == last_kernel("relu", DeviceType::cpu));

  // A selection publishes a new list; the key object's path sees it, through its cached slot.
  const std::string last = testing::kernels_for("relu", DeviceType::cpu).back();
  select_kernel("relu", DeviceType::cpu, last);
  CHECK(registry.candidates(keys::relu, DeviceType::cpu).front()->name == last);
  dispatch(keys::relu, Device::cpu(), x, out);
  CHECK(last_kernel(keys::relu, DeviceType::cpu) == last);
}

TEST_CASE("kernel keys: two key objects of one name cannot carry two signatures", "[dispatch][keys]") {
  // The built-in kernels register on the table's first use: make that happen first, so "relu" already
  // holds its kernels (run alone, this case would otherwise register first and meet them afterwards).
  KernelRegistry::instance();
  const KernelKey<BinaryKernel> relu_as_binary{"relu"};
  CHECK_THROWS_WITH(register_kernel(relu_as_binary, DeviceType::cpu, "by_test", Priority::reference, "wrong",
                                    relu_other_signature),
                    Catch::Contains("has another signature"));
  CHECK(KernelRegistry::instance().remove("relu", DeviceType::cpu, "by_test") == false);
}
