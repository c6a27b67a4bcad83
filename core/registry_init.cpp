// core/registry_init.cpp — the one place where backends and kernels are registered.
//
// Backend conditionals (#ifdef MINIDL_WITH_CUDA) live here and in the registration files, never in
// op or layer logic.
#include <mutex>
#include <string>

#include "core/backend.h"
#include "core/dispatch.h"
#include "core/settings.h"
#include "cpu/register.h"

#ifdef MINIDL_WITH_CUDA
#include "cuda/register.h"
#endif

namespace minidl {

DeviceBackend* make_cpu_backend();  // core/cpu_backend.cpp

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_backend(DeviceType::cpu, make_cpu_backend());
    register_cpu_kernels();
#ifdef MINIDL_WITH_CUDA
    register_backend(DeviceType::cuda, make_cuda_backend());
    register_cuda_kernels();
#endif
  });
  // MINIDL_KERNELS (core/settings.h), once registration is complete. Apart from it: when the variable
  // names an unknown kernel this throws, and throws again on the next use, rather than registering
  // every kernel a second time.
  static std::once_flag selection;
  std::call_once(selection, [] {
    const std::string spec = settings::kernels.read();
    if (!spec.empty()) apply_kernel_spec(KernelRegistry::during_registration(), spec);
  });
}

}  // namespace minidl
