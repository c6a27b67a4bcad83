// tests/test_util.cpp — the helpers of tests/test_util.h that report through Catch2 (a visible skip
// message, the kernel under test in each failure); the rest is in tests/check_util.cpp.
#include "tests/test_util.h"

#include <catch2/catch.hpp>

#include "tests/skips.h"

namespace minidl {
namespace testing {

std::vector<Device> test_devices() {
  std::vector<Device> out{Device::cpu()};
  const std::string why = cuda_unavailable_reason();
  if (why.empty())
    out.push_back(Device::cuda(0));
  else
    WARN("GPU cases skipped: " << why);
  return out;
}

bool have_gpu() {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) skip_test("no usable GPU: " + why);
  return why.empty();
}

void for_each_kernel(const std::string& key, const std::function<void(Device, const std::string&)>& body) {
  SelectionReset reset;
  const std::string op = key.substr(0, key.find('.'));
  for (Device d : test_devices()) {
    for (const std::string& name : kernels_for(key, d.type)) {
      reset_kernel_selection();
      select_kernel(op, d.type, name);
      INFO("device " << d.str() << ", kernel " << key << " = " << name);
      body(d, name);
    }
  }
}

}  // namespace testing
}  // namespace minidl
