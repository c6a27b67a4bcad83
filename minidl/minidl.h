// minidl/minidl.h — the whole public API of minidl in one include, for programs that use it as a library:
//
//   #include <minidl/minidl.h>      // with an installed minidl: pkg-config --cflags minidl, or
//                                   // find_package(minidl) and target_link_libraries(... minidl::minidl)
//
// Installed, every header sits under <prefix>/include/minidl/ (<minidl/core/tensor.h>, <minidl/nn/layers.h>
// ...), so its folder names cannot collide with a program's own core/ or nn/. Each header below can be
// included alone too. Not here: dist/ (data-parallel training, which needs MPI or NCCL headers:
// <minidl/dist/data_parallel.h>) and the kernels (cpu/, cuda/), which a program reaches through the
// dispatch table (core/dispatch.h).
#pragma once

// Tensors, devices, random numbers, autograd, the dispatch table
#include "core/autograd.h"
#include "core/backend.h"      // choose_device, why_no_gpu
#include "core/determinism.h"
#include "core/device.h"
#include "core/dispatch.h"     // select_kernel, last_kernel
#include "core/dtype.h"
#include "core/error.h"
#include "core/info.h"         // the report of `minidl info`
#include "core/random.h"       // manual_seed
#include "core/tensor.h"       // Tensor, zeros, from_vector ...

// Ops: elementwise and comparisons, reductions, matmul, convolution, pooling, losses, RNN cells
#include "ops/ops.h"

// Layers, optimizers, schedules, data, checkpoints and weights files
#include "nn/augment.h"
#include "nn/checkpoint.h"
#include "nn/ctc_decode.h"
#include "nn/data.h"
#include "nn/gru.h"
#include "nn/idx.h"
#include "nn/image.h"
#include "nn/image_csv.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/lr_schedule.h"
#include "nn/lstm.h"
#include "nn/metrics.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/progress.h"
#include "nn/safetensors.h"
#include "nn/split.h"
