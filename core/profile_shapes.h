// core/profile_shapes.h — a profiled call shape as a `minidl bench --shape KEY:SPEC` argument, so the
// shapes of a real run (MINIDL_PROFILE=shapes) can be benchmarked directly:
//
//     MINIDL_PROFILE=shapes MINIDL_PROFILE_FILE=shapes.txt build/bin/mnist bench --device cpu --steps 3
//     build/bin/minidl bench --device cpu $(cat shapes.txt)
//
// The call shape is the dispatcher's description of a call's arguments (core/call_shape.h), the SPEC the
// syntax of the key's bench case (`minidl bench --help`, tools/bench/cases_*.cpp). This file knows, per
// key, which arguments of the signature (ops/kernel_signatures.h) the spec is made of: it is the one place
// to change when either side changes (tests/test_kernel_auto.cpp feeds what it writes to the bench's
// own spec reader). Text only: core does not include the bench (tools/), nor the bench core.
//
// Keys it writes: matmul, the conv2d and pooling stages, the unary, scalar and binary elementwise keys,
// copy, cast, fill, dropout_mask, bias_relu (and .backward), sum, max, the softmax family, cross_entropy
// (and .backward), and the batch_norm family. Not the others (gather, index_select, pack, the optimizer
// steps, CTC, the GRU and LSTM keys): their specs need what a call's shape leaves out (index counts, each
// parameter's shape, lengths). Nor float64 calls: the bench times float32.
#pragma once
#include <string>

namespace minidl {

// "conv2d:64x1x28x28,32x1x5x5,s1p0" for a call of `key` with shape `shape`; "" when the key has no bench
// spec here or the shape does not fit one (a float64 call, a dimension count the case does not take).
std::string bench_shape_spec(const std::string& key, const std::string& shape);

}  // namespace minidl
