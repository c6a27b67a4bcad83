// examples/torch_weights.cpp — weights to and from PyTorch's names (examples/torch_weights.h).
#include "examples/torch_weights.h"

#include <algorithm>
#include <set>

#include "core/autograd.h"
#include "core/error.h"

using namespace minidl;

namespace examples {

namespace {

const std::string kRunningMean = "running_mean";
const std::string kBatchesTracked = "num_batches_tracked";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// "a, b, c and 4 more" from the first few names.
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 4);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += str_cat(" and ", names.size() - shown, " more");
  return out;
}

}  // namespace

SafetensorsFile torch_state_of(const Module& model, std::map<std::string, std::string> metadata) {
  SafetensorsFile file;
  metadata["format"] = "pt";
  file.metadata = std::move(metadata);
  for (const auto& [name, t] : model.state_dict()) {
    file.tensors.emplace_back(name, t);
    if (ends_with(name, kRunningMean)) {
      const std::string prefix = name.substr(0, name.size() - kRunningMean.size());
      file.tensors.emplace_back(prefix + kBatchesTracked, zeros({}, DType::int64));
    }
  }
  return file;
}

void load_torch_state(Module& model, const SafetensorsFile& file, const std::string& path, const std::string& hint) {
  std::map<std::string, Tensor> given;
  for (const auto& [name, t] : file.tensors)
    if (!ends_with(name, kBatchesTracked)) given[name] = t;
  const NamedTensors wanted = model.state_dict();
  std::vector<std::string> missing, unexpected, misshapen;
  std::set<std::string> known;
  for (const auto& [name, t] : wanted) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end())
      missing.push_back(name);
    else if (it->second.shape() != t.shape())
      misshapen.push_back(str_cat(name, " ", shape_str(it->second.shape()), " (the model's ", shape_str(t.shape()),
                                  ")"));
    else if (!is_floating(it->second.dtype()))
      misshapen.push_back(str_cat(name, " of ", dtype_name(it->second.dtype()), " (the model's ",
                                  dtype_name(t.dtype()), ")"));
  }
  for (const auto& [name, t] : given)
    if (!known.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !misshapen.empty()) {
    std::string why;
    if (!missing.empty()) why += str_cat("; missing: ", some_names(missing));
    if (!unexpected.empty()) why += str_cat("; not in the model: ", some_names(unexpected));
    if (!misshapen.empty()) why += str_cat("; other shapes or dtypes: ", some_names(misshapen));
    throw Error(str_cat("'", path, "' does not hold this model's weights", why, " (", hint, ")"));
  }
  NoGradGuard no_grad;
  for (const auto& [name, t] : wanted) copy_(t, given.at(name).to(t.dtype()).to(t.device()));
}

void write_sample(const std::string& path, Module& model, const Tensor& input) {
  model.eval();
  NoGradGuard no_grad;
  const Tensor output = model(input);
  SafetensorsFile file;
  file.metadata["format"] = "pt";
  file.tensors = {{"input", input}, {"output", output}};
  write_safetensors(path, file);
}

}  // namespace examples
