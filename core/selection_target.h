// core/selection_target.h — what a kernel selection applies to. `--kernel conv2d=NAME` selects by op: every
// stage of conv2d that has a kernel NAME (conv2d, conv2d.backward_input, conv2d.backward_weight).
// `--kernel conv2d.backward_input=NAME` selects one stage, named as `minidl kernels` lists it, op.stage;
// the forward key ("conv2d") is the stage "conv2d.forward". A stage's own selection comes before its op's.
// Used by the selection (core/dispatch.cpp) and the tools that read a selection spec.
#pragma once
#include <string>

namespace minidl {

// The op of a key or target: "conv2d" for "conv2d.backward_input" and for "conv2d".
inline std::string op_of_key(const std::string& key) { return key.substr(0, key.find('.')); }

// Whether a target names one stage ("conv2d.backward_input", "conv2d.forward") rather than an op.
inline bool is_stage_target(const std::string& target) { return target.find('.') != std::string::npos; }

// The stage target of a key: "conv2d.backward_input" for itself, "conv2d.forward" for "conv2d".
inline std::string stage_target_of(const std::string& key) { return is_stage_target(key) ? key : key + ".forward"; }

// Whether a selection of `target` covers the kernels of `key`.
inline bool key_in_target(const std::string& key, const std::string& target) {
  return is_stage_target(target) ? stage_target_of(key) == target : op_of_key(key) == target;
}

}  // namespace minidl
