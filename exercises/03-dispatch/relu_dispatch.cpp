// exercises/03-dispatch/relu_dispatch.cpp — EXERCISE 3: a kernel in the dispatch table, with a priority and
// a rule for declining. Read first: docs/course/03-dispatch.md. Check your work: `make exercise N=3`.
//
// Every op finds its kernels in one table (core/dispatch.h): for each kernel key ("relu") and device there
// are several named kernels, each with a priority. dispatch() tries the selected kernel first (if the user
// selected one: --kernel relu=NAME), then the others by descending priority; a kernel that returns false
// has *declined* the call and the next one is tried. So a kernel may handle only the easy case and leave
// the rest to the others.
#include "exercises/03-dispatch/relu_dispatch.h"

#include "core/dispatch.h"
#include "ops/kernel_signatures.h"

namespace minidl {

namespace {

// EXERCISE 3a: the kernel of key "relu": out = max(x, 0) elementwise. Its signature is UnaryKernel
// (ops/kernel_signatures.h): x may be any strided view, out is contiguous and has x's shape.
// This kernel handles the easy case only. Serve float32 inputs that are contiguous, and decline (return
// false) everything else: a float64 x, and an x that is not contiguous (a transposed view, say), so that
// the next kernel by priority serves those calls.
bool relu_student(const Tensor& x, Tensor& out) {
  // EXERCISE: the two declines, then a loop over the x.numel() elements of x.data<float>().
  (void)x;
  (void)out;
  return false;
}

}  // namespace

// EXERCISE 3b: register relu_student as kernel "student" of key "relu" on the CPU, with a priority that
// makes it the CPU's default for relu: higher than every other CPU relu kernel's
// (`build/bin/minidl kernels --op relu` lists them with their priorities). One call:
//   register_kernel(keys::relu, DeviceType::cpu, name, priority, "a one-line description", relu_student);
// keys::relu is the key object declared next to UnaryKernel in ops/kernel_signatures.h; priority is a
// Priority (core/dispatch.h): a named level such as Priority::portable, or one plus an offset.
void register_student_relu() {
  // EXERCISE: the call (and remove the next line, which only keeps the compiler quiet until then).
  (void)relu_student;
}

}  // namespace minidl
