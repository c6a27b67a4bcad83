// tests/test_kernel_contract.cpp — partial kernels (core/kernel_contract.h) and the selection of one stage
// (core/selection_target.h). A forward-only conv2d kernel that declines stride != 1, with a contract
// saying so, passes the sweeps' checks (tests/kernel_contract_check.h): checked against naive where it
// accepts, its declines where its contract lists them, its backward stages skipped. Kernels that break
// their contract are reported by the verdict functions, naming the kernel and the shape. And
// `conv2d.backward_input=naive` selects that stage alone.
#include <catch2/catch.hpp>

#include "core/dispatch.h"
#include "core/kernel_contract.h"
#include "tests/kernel_contract_check.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// The naive CPU conv2d forward kernel, the reference every test kernel here wraps.
bool naive_conv2d(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  for (const KernelInfo* k : KernelRegistry::instance().candidates("conv2d", DeviceType::cpu))
    if (k->name == "naive") return reinterpret_cast<Conv2dKernel*>(k->fn)(x, w, y, p);
  FAIL("no naive conv2d kernel on the CPU");
  return false;
}

bool strided(const Conv2dParams& p) { return p.stride_h != 1 || p.stride_w != 1; }

// Forward only, stride 1 only: what its contract says.
bool conv2d_stride1(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  return !strided(p) && naive_conv2d(x, w, y, p);
}
// Serves every stride (its contract wrongly says it declines stride != 1).
bool conv2d_every_stride(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  return naive_conv2d(x, w, y, p);
}
// Declines padding as well, which its contract does not list.
bool conv2d_stride1_unpadded(const Tensor& x, const Tensor& w, Tensor& y, const Conv2dParams& p) {
  return p.pad_h == 0 && p.pad_w == 0 && conv2d_stride1(x, w, y, p);
}

// The contract of a forward-only kernel that declines stride != 1.
KernelContract<Conv2dKernel> forward_stride1_contract() {
  return {{"forward"},
          {{"stride != 1", [](const Tensor&, const Tensor&, Tensor&, const Conv2dParams& p) { return strided(p); }}}};
}

// A conv2d CPU kernel and its contract for the life of the object (priority `priority`, below every
// real kernel, so it serves only when selected).
class ContractedKernel {
 public:
  ContractedKernel(const std::string& name, int priority, Conv2dKernel* fn, KernelContract<Conv2dKernel> contract)
      : name_(name) {
    register_kernel<Conv2dKernel>("conv2d", DeviceType::cpu, name, priority, "registered by a test", fn);
    declare_kernel_contract(keys::conv2d, DeviceType::cpu, name, std::move(contract));
  }
  ~ContractedKernel() {
    reset_kernel_selection();
    forget_kernel_contract("conv2d", DeviceType::cpu, name_);
    KernelRegistry::instance().remove("conv2d", DeviceType::cpu, name_);
  }
  ContractedKernel(const ContractedKernel&) = delete;
  ContractedKernel& operator=(const ContractedKernel&) = delete;

 private:
  std::string name_;
};

Conv2dParams conv_params(int stride, int pad) {
  Conv2dParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return p;
}

// One forward call of kernel `name` (selected for conv2d on the CPU) under its contract, on x [2,3,9,8]
// and w [4,3,3,3] with p; `matches_naive` is set when the output is naive's, whoever served.
ContractCall forward_call(const std::string& name, const Conv2dParams& p, bool* matches_naive = nullptr) {
  const Tensor x = uniform({2, 3, 9, 8}, -1, 1, DType::float32), w = uniform({4, 3, 3, 3}, -1, 1, DType::float32);
  const Shape y_shape{2, 4, (9 + 2 * p.pad_h - 3) / p.stride_h + 1, (8 + 2 * p.pad_w - 3) / p.stride_w + 1};
  Tensor ref = empty(y_shape, x.options()), y = full(y_shape, 123.0, x.options());
  REQUIRE(naive_conv2d(x, w, ref, p));
  SelectionReset reset;
  select_kernel("conv2d", DeviceType::cpu, name);
  const ContractCall call = call_under_contract<Conv2dKernel>("conv2d", Device::cpu(), name, x, w, y, p);
  if (matches_naive) *matches_naive = compare(y, ref, 1e-5, 1e-6) == "";
  return call;
}

}  // namespace

TEST_CASE("a forward-only conv2d kernel that declines stride != 1 keeps its contract", "[contract][conv]") {
  ContractedKernel kernel("test_forward_stride1", -100, conv2d_stride1, forward_stride1_contract());
  CHECK(stages_verdict("conv2d", DeviceType::cpu, "test_forward_stride1") == "");
  CHECK(declared_stages("conv2d", DeviceType::cpu, "test_forward_stride1") == std::vector<std::string>{"forward"});
  CHECK_FALSE(serves_stage("conv2d.backward_input", DeviceType::cpu, "test_forward_stride1"));
  for (const Conv2dParams& p : {conv_params(1, 0), conv_params(1, 1), conv_params(2, 0), conv_params(2, 1)}) {
    INFO("stride " << p.stride_h << " pad " << p.pad_h);
    bool matches_naive = false;
    const ContractCall call = forward_call("test_forward_stride1", p, &matches_naive);
    CHECK(call.verdict == "");
    CHECK(call.served == !strided(p));  // checked where it accepts, declines where its contract says
    CHECK(matches_naive);               // its own output, or the next kernel's after its decline
  }
  // Its backward stages are not its own: the front end's backward runs the default kernels there, and
  // the verdict skips those stages instead of failing on the name.
  SelectionReset reset;
  select_kernel("conv2d", DeviceType::cpu, "test_forward_stride1");
  Tensor x = uniform({2, 3, 6, 6}, -1, 1, DType::float32).requires_grad_();
  Tensor w = uniform({4, 3, 3, 3}, -1, 1, DType::float32).requires_grad_();
  sum(conv2d(x, w)).backward();
  CHECK(last_kernel("conv2d", DeviceType::cpu) == "test_forward_stride1");
  CHECK(last_kernel("conv2d.backward_input", DeviceType::cpu) != "test_forward_stride1");
  CHECK(contract_verdict("conv2d.backward_input", DeviceType::cpu, "test_forward_stride1", "", "6x6") == "");
}

TEST_CASE("the contract verdicts report a kernel that breaks its contract, naming it and the shape",
          "[contract][conv]") {
  SECTION("a decline the contract does not list") {
    ContractedKernel kernel("test_declines_padding", -100, conv2d_stride1_unpadded, forward_stride1_contract());
    CHECK(forward_call("test_declines_padding", conv_params(1, 0)).verdict == "");
    CHECK(forward_call("test_declines_padding", conv_params(2, 1)).verdict == "");  // stride 2: listed
    const std::string verdict = forward_call("test_declines_padding", conv_params(1, 1)).verdict;
    CHECK_THAT(verdict, Catch::Contains("kernel 'test_declines_padding' of conv2d on cpu declined "
                                        "2x3x9x8,4x3x3x3,2x4x9x8,s1p1, which its contract does not list "
                                        "(declines listed: stride != 1)"));
  }
  SECTION("a call served that the contract says it declines") {
    ContractedKernel kernel("test_every_stride", -100, conv2d_every_stride, forward_stride1_contract());
    const std::string verdict = forward_call("test_every_stride", conv_params(2, 0)).verdict;
    CHECK(verdict == "kernel 'test_every_stride' of conv2d on cpu served 2x3x9x8,4x3x3x3,2x4x4x3,s2p0, which its "
                     "contract says it declines (stride != 1)");
  }
  SECTION("a contract that lists no decline: the kernel must serve every call") {
    ContractedKernel kernel("test_lists_none", -100, conv2d_stride1, {});
    CHECK(forward_call("test_lists_none", conv_params(1, 0)).verdict == "");
    CHECK_THAT(forward_call("test_lists_none", conv_params(2, 0)).verdict,
               Catch::Contains("declined") && Catch::Contains("(declines listed: none)"));
  }
  SECTION("stages declared that are not registered") {
    ContractedKernel kernel("test_claims_backward", -100, conv2d_stride1,
                            {{"forward", "backward_input"}, forward_stride1_contract().declines});
    CHECK(stages_verdict("conv2d", DeviceType::cpu, "test_claims_backward") ==
          "kernel 'test_claims_backward' of conv2d on cpu: its contract says it serves forward, backward_input; it "
          "is registered for forward");
  }
}

TEST_CASE("every registered kernel that declares its stages is registered for exactly those", "[contract]") {
  for (const KernelInfo* k : KernelRegistry::instance().all())
    CHECK(stages_verdict(k->op, k->device, k->name) == "");
}

TEST_CASE("one stage can be selected alone: conv2d.backward_input=naive", "[contract][dispatch]") {
  SelectionReset reset;
  const std::string forward_default = KernelRegistry::instance().candidates("conv2d", DeviceType::cpu).front()->name;
  const std::string weight_default =
      KernelRegistry::instance().candidates("conv2d.backward_weight", DeviceType::cpu).front()->name;
  REQUIRE(forward_default != "naive");  // else the test could not tell the stage's selection from the op's
  REQUIRE(weight_default != "naive");
  auto run = [] {
    Tensor x = uniform({2, 3, 7, 7}, -1, 1, DType::float32).requires_grad_();
    Tensor w = uniform({4, 3, 3, 3}, -1, 1, DType::float32).requires_grad_();
    sum(conv2d(x, w, Tensor(), 1, 1)).backward();
  };
  SECTION("from a spec (--kernel, MINIDL_KERNELS)") {
    select_kernels_from_spec("conv2d.backward_input=naive");
    run();
    CHECK(last_kernel("conv2d.backward_input", DeviceType::cpu) == "naive");
    CHECK(last_kernel("conv2d", DeviceType::cpu) == forward_default);
    CHECK(last_kernel("conv2d.backward_weight", DeviceType::cpu) == weight_default);
    CHECK(KernelRegistry::instance().selected("conv2d.backward_input", DeviceType::cpu) == "naive");
    CHECK(KernelRegistry::instance().selected("conv2d", DeviceType::cpu) == "");
    // is_selected: the kernel of the stage's own selection, for that stage's key only.
    CHECK(KernelRegistry::instance().is_selected("conv2d.backward_input", DeviceType::cpu, "naive"));
    CHECK_FALSE(KernelRegistry::instance().is_selected("conv2d.backward_weight", DeviceType::cpu, "naive"));
    CHECK_FALSE(KernelRegistry::instance().is_selected("conv2d", DeviceType::cpu, "naive"));
    CHECK_FALSE(KernelRegistry::instance().is_selected("conv2d.backward_input", DeviceType::cuda, "naive"));
  }
  SECTION("from the API, and the forward stage by its listed name") {
    select_kernel("conv2d.forward", DeviceType::cpu, "naive");
    run();
    CHECK(last_kernel("conv2d", DeviceType::cpu) == "naive");
    CHECK(last_kernel("conv2d.backward_weight", DeviceType::cpu) == weight_default);
  }
  SECTION("a stage's own selection comes before its op's, whatever the order") {
    select_kernels_from_spec("conv2d.backward_weight=naive,conv2d=" + forward_default);
    run();
    CHECK(last_kernel("conv2d.backward_weight", DeviceType::cpu) == "naive");
    CHECK(last_kernel("conv2d", DeviceType::cpu) == forward_default);
    // is_selected answers as the dispatch does: the stage's selection, else its op's.
    CHECK(KernelRegistry::instance().is_selected("conv2d.backward_weight", DeviceType::cpu, "naive"));
    CHECK_FALSE(KernelRegistry::instance().is_selected("conv2d.backward_weight", DeviceType::cpu, forward_default));
    CHECK(KernelRegistry::instance().is_selected("conv2d", DeviceType::cpu, forward_default));
    CHECK(KernelRegistry::instance().is_selected("conv2d.backward_input", DeviceType::cpu, forward_default));
  }
  SECTION("reset_kernel_selection clears stage selections") {
    select_kernel("conv2d.backward_input", DeviceType::cpu, "naive");
    reset_kernel_selection();
    run();
    CHECK(last_kernel("conv2d.backward_input", DeviceType::cpu) != "naive");
  }
}

TEST_CASE("an unknown stage or a kernel a stage lacks is refused, listing what exists", "[contract][dispatch]") {
  SelectionReset reset;
  CHECK_THROWS_WITH(select_kernels_from_spec("conv2d.nonsense=naive"),
                    Catch::Contains("unknown stage 'conv2d.nonsense'") &&
                        Catch::Contains("stages of conv2d: conv2d.backward_input, conv2d.backward_weight, "
                                        "conv2d.forward (or conv2d for all of them)"));
  CHECK_THROWS_WITH(select_kernel("conv2d.backward_inptu", DeviceType::cpu, "naive"),
                    Catch::Contains("(did you mean 'conv2d.backward_input'?)"));
  CHECK_THROWS_WITH(select_kernels_from_spec("conv2dd.forward=naive"),
                    Catch::Contains("unknown op 'conv2dd.forward' (did you mean 'conv2d.forward'?); ops: "));
  CHECK_THROWS_WITH(select_kernels_from_spec("conv2d.backward_input=naiv"),
                    Catch::Contains("stage 'conv2d.backward_input' has no kernel 'naiv' (did you mean 'naive'?); "
                                    "kernels: ") &&
                        Catch::Contains("naive@cpu"));
  // A kernel of the op that does not serve the stage is not a kernel of the stage.
  ContractedKernel kernel("test_forward_stride1", -100, conv2d_stride1, forward_stride1_contract());
  CHECK_THROWS_WITH(select_kernel("conv2d.backward_input", DeviceType::cpu, "test_forward_stride1"),
                    Catch::Contains("has no kernel 'test_forward_stride1' on cpu"));
  CHECK_NOTHROW(select_kernel("conv2d.forward", DeviceType::cpu, "test_forward_stride1"));
}
