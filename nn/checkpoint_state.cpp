// nn/checkpoint_state.cpp — matching a model's and an optimizer's state to a checkpoint's tensors
// (nn/checkpoint_state.h).
#include "nn/checkpoint_state.h"

#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "core/error.h"
#include "nn/checkpoint_metadata.h"

namespace minidl {

namespace {
const std::string kModelPrefix = "model/", kOptimizerPrefix = "optimizer/";

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
}  // namespace

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     std::map<std::string, std::string> metadata) {
  Checkpoint ck;
  ck.metadata = std::move(metadata);
  for (const auto& [name, t] : model.state_dict()) ck.tensors.emplace_back(kModelPrefix + name, t);
  if (optimizer) {
    ck.metadata["optimizer"] = optimizer->type_name();
    for (const auto& [name, t] : optimizer->state_dict()) ck.tensors.emplace_back(kOptimizerPrefix + name, t);
  }
  write_checkpoint(path, ck);
}

namespace {

// "a, b, c and 5 more": a list in an error message stays one readable line.
std::string some_names(const std::vector<std::string>& names, size_t shown = 3) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += str_cat(" and ", names.size() - shown, " more");
  return out;
}

// The file's model tensors against the model's state: one line naming what does not fit (missing,
// unexpected, other shapes, other dtypes), or, when no name is shared at all, that the file holds another
// kind of model.
void check_model_state(const NamedTensors& file_state, const Module& model, const Checkpoint& ck,
                       const std::string& what) {
  const NamedTensors mine = model.state_dict();
  std::map<std::string, Tensor> given(file_state.begin(), file_state.end());
  std::vector<std::string> missing, unexpected, other_shape, other_dtype;
  std::set<std::string> known;
  for (const auto& [name, dst] : mine) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (it->second.shape() != dst.shape()) {
      other_shape.push_back(str_cat(name, " (expected ", shape_str(dst.shape()), ", got ", shape_str(it->second.shape()), ")"));
    } else if (it->second.dtype() != dst.dtype()) {
      other_dtype.push_back(str_cat(name, " (expected ", dtype_name(dst.dtype()), ", got ", dtype_name(it->second.dtype()), ")"));
    }
  }
  for (const auto& [name, t] : file_state)
    if (!known.count(name)) unexpected.push_back(name);
  if (!mine.empty() && !file_state.empty() && missing.size() == mine.size()) {
    auto kind = ck.metadata.find("model");
    throw Error(str_cat(what, ": holds another kind of model",
                        kind == ck.metadata.end() ? std::string() : " ('" + kind->second + "')", ", not a ",
                        model.type_name(), ": none of its ", file_state.size(), " model tensors (", some_names(unexpected, 2),
                        ") is one of this model's ", mine.size(), " (", some_names(missing, 2), ")"));
  }
  if (missing.empty() && unexpected.empty() && other_shape.empty() && other_dtype.empty()) return;
  std::string msg = str_cat(what, ": does not fit this ", model.type_name());
  if (!missing.empty()) msg += str_cat("; missing: ", some_names(missing));
  if (!unexpected.empty()) msg += str_cat("; unexpected: ", some_names(unexpected));
  if (!other_shape.empty()) msg += str_cat("; shape mismatch: ", some_names(other_shape));
  if (!other_dtype.empty()) msg += str_cat("; dtype mismatch: ", some_names(other_dtype));
  throw Error(msg);
}

// The optimizer's entries against nn/optim.h's table: "step" and "param.<i>.step" int64 [1] and at least
// 0 (a step count), "lr" float64 [1] finite and at least 0, and "param.<i>.<buffer>" float32 of parameter
// i's shape, for i below the optimizer's parameter count. The optimizer checks names and counts itself.
void check_optimizer_state(const NamedTensors& file_state, const Optimizer& optimizer, const std::string& what) {
  const std::vector<Tensor>& params = optimizer.params();
  std::vector<std::string> problems;
  for (const auto& [name, t] : file_state) {
    const bool is_step = name == "step" || (starts_with(name, "param.") && name.size() > 5 &&
                                            name.compare(name.size() - 5, 5, ".step") == 0);
    const bool is_lr = name == "lr";
    if (is_step || is_lr) {
      const DType want = is_step ? DType::int64 : DType::float64;
      if (t.dtype() != want || t.numel() != 1) {
        problems.push_back(str_cat(name, " is ", dtype_name(t.dtype()), " ", shape_str(t.shape()), ", not ",
                                   dtype_name(want), " [1]"));
        continue;
      }
      const double v = t.item<double>();
      if (!std::isfinite(v) || v < 0) problems.push_back(str_cat(name, " is ", v));
      continue;
    }
    if (!starts_with(name, "param.")) continue;  // the optimizer names it as unexpected
    const std::optional<int64_t> index = parse_whole_number(name.substr(6, name.find('.', 6) - 6));
    if (!index || *index < 0 || *index >= static_cast<int64_t>(params.size())) {
      problems.push_back(str_cat(name, " is for no parameter (the optimizer has ", params.size(), ")"));
    } else if (t.dtype() != DType::float32 || t.shape() != params[*index].shape()) {
      problems.push_back(str_cat(name, " is ", dtype_name(t.dtype()), " ", shape_str(t.shape()), ", not float32 ",
                                 shape_str(params[*index].shape())));
    }
  }
  MINIDL_CHECK(problems.empty(), what, ": the ", optimizer.type_name(), " state does not fit: ", some_names(problems));
}

}  // namespace

std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer) {
  return load_checkpoint(read_checkpoint(path), path, model, optimizer);
}

std::map<std::string, std::string> load_checkpoint(const Checkpoint& ck, const std::string& path, Module& model,
                                                   Optimizer* optimizer) {
  const std::string what = str_cat("checkpoint '", path, "'");
  NamedTensors model_state, optimizer_state;
  for (const auto& [name, t] : ck.tensors) {
    if (starts_with(name, kModelPrefix))
      model_state.emplace_back(name.substr(kModelPrefix.size()), t);
    else if (starts_with(name, kOptimizerPrefix))
      optimizer_state.emplace_back(name.substr(kOptimizerPrefix.size()), t);
    else
      throw Error(str_cat(what, ": tensor '", name, "' belongs to neither the model nor the optimizer"));
  }
  check_model_state(model_state, model, ck, what);
  if (optimizer) {
    auto it = ck.metadata.find("optimizer");
    MINIDL_CHECK(it != ck.metadata.end(), what, ": holds no optimizer state");
    MINIDL_CHECK(it->second == optimizer->type_name(), what, ": holds ", it->second, " state, not ",
                 optimizer->type_name());
    check_optimizer_state(optimizer_state, *optimizer, what);
  }
  try {
    model.load_state_dict(model_state);
    if (optimizer) optimizer->load_state_dict(optimizer_state);
  } catch (const Error& e) {
    throw Error(str_cat(what, ": ", e.what()));
  }
  return ck.metadata;
}

void check_checkpoint_model(const Checkpoint& ck, const std::string& path, const std::string& expected,
                            const std::string& saved_by) {
  auto it = ck.metadata.find("model");
  MINIDL_CHECK(it != ck.metadata.end() && it->second == expected, "'", path, "' holds ",
               it == ck.metadata.end() ? std::string("no model name in its metadata")
                                       : str_cat("a '", it->second.substr(0, 64), "' model"),
               ", not a ", expected, " model saved by ", saved_by);
}

}  // namespace minidl
