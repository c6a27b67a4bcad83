// examples/captcha/model_config.cpp — a captcha checkpoint's model description, read back strictly
// (model_config.h).
#include "examples/captcha/model_config.h"

#include <set>
#include <sstream>

#include "core/error.h"

using namespace minidl;

namespace captcha {

namespace {

std::string some_names(const std::vector<std::string>& names, size_t shown = 3) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += str_cat(" and ", names.size() - shown, " more");
  return out;
}

std::vector<int64_t> channels_from(const std::string& text, const std::string& path) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::optional<int64_t> v = parse_whole_number(item);
    MINIDL_CHECK(v && *v >= 1 && *v <= ModelLimits::kMaxChannels, "checkpoint '", path, "': metadata channels = '",
                 text.substr(0, 80), "' is not a list of channel counts 1..", ModelLimits::kMaxChannels,
                 " separated by commas");
    out.push_back(*v);
    MINIDL_CHECK(static_cast<int64_t>(out.size()) <= ModelLimits::kMaxBlocks, "checkpoint '", path,
                 "': metadata channels lists more than ", ModelLimits::kMaxBlocks, " blocks");
  }
  MINIDL_CHECK(!out.empty() && text.back() != ',', "checkpoint '", path, "': metadata channels = '", text.substr(0, 80),
               "' is not a list of channel counts separated by commas");
  return out;
}

// "4" -> (4, 4), "4-6" -> (4, 6); whole numbers only.
std::pair<int64_t, int64_t> length_from(const std::string& text, const std::string& path) {
  const size_t dash = text.find('-');
  const std::optional<int64_t> lo = parse_whole_number(text.substr(0, dash));
  const std::optional<int64_t> hi = dash == std::string::npos ? lo : parse_whole_number(text.substr(dash + 1));
  MINIDL_CHECK(lo && hi && *lo >= 1 && *lo <= *hi, "checkpoint '", path, "': metadata length = '", text.substr(0, 40),
               "' is not a label length N or A-B (1 <= A <= B)");
  return {*lo, *hi};
}

}  // namespace

std::map<std::string, std::string> model_metadata(const ModelConfig& c, const std::string& charset,
                                                  const std::string& length) {
  std::string channels;
  for (int64_t ch : c.channels) channels += (channels.empty() ? "" : ",") + std::to_string(ch);
  return {{"model", kModelName},
          {"charset", charset},
          {"length", length},
          {"width", std::to_string(c.width)},
          {"height", std::to_string(c.height)},
          {"channels", channels},
          {"convs_per_block", std::to_string(c.convs_per_block)},
          {"rnn", rnn_kind_name(c.rnn)},
          {"gru_hidden", std::to_string(c.gru_hidden)},
          {"gru_layers", std::to_string(c.gru_layers)},
          {"dropout", std::to_string(c.dropout)}};
}

SavedModel saved_model_from_metadata(const std::map<std::string, std::string>& metadata, const std::string& path) {
  const std::map<std::string, std::string> m = with_metadata_defaults(metadata);  // no "rnn": a GRU
  auto name = m.find("model");
  MINIDL_CHECK(name != m.end() && name->second == kModelName, "'", path,
               "' is not a captcha model saved by `captcha train --save` (its model is '",
               name == m.end() ? std::string("unnamed") : name->second.substr(0, 64), "')");
  using L = ModelLimits;
  SavedModel out;
  ModelConfig& c = out.config;
  c.width = static_cast<int>(metadata_int(m, "width", 1, L::kMaxSide, path));
  c.height = static_cast<int>(metadata_int(m, "height", 1, L::kMaxSide, path));
  c.channels = channels_from(metadata_text(m, "channels", path), path);
  c.convs_per_block = static_cast<int>(metadata_int(m, "convs_per_block", 1, L::kMaxConvsPerBlock, path));
  const std::string& rnn = metadata_text(m, "rnn", path);
  MINIDL_CHECK(rnn == "gru" || rnn == "lstm", "checkpoint '", path, "': metadata rnn = '", rnn.substr(0, 40),
               "' is not gru or lstm");
  c.rnn = parse_rnn_kind(rnn);
  c.gru_hidden = metadata_int(m, "gru_hidden", 1, L::kMaxGruHidden, path);
  c.gru_layers = static_cast<int>(metadata_int(m, "gru_layers", 1, L::kMaxGruLayers, path));
  c.dropout = metadata_real(m, "dropout", 0, 1, path);
  MINIDL_CHECK(c.dropout < 1, "checkpoint '", path, "': metadata dropout = 1 is outside [0, 1)");

  out.charset = metadata_text(m, "charset", path);
  std::set<char> seen;
  for (char ch : out.charset)
    MINIDL_CHECK(ch > ' ' && ch <= '~' && seen.insert(ch).second, "checkpoint '", path,
                 "': metadata charset has a character that is not printable ASCII or appears twice (byte ",
                 static_cast<int>(static_cast<unsigned char>(ch)), ")");
  MINIDL_CHECK(!out.charset.empty(), "checkpoint '", path, "': metadata charset is empty");
  c.classes = static_cast<int64_t>(out.charset.size()) + 1;
  try {
    check_model_config(c);
  } catch (const Error& e) {
    throw Error(str_cat("checkpoint '", path, "': its metadata describes an impossible model: ", e.what()));
  }
  out.length = metadata_text(m, "length", path);
  const auto [shortest, longest] = length_from(out.length, path);
  MINIDL_CHECK(longest <= c.time_steps(), "checkpoint '", path, "': metadata length = ", out.length,
               " is longer than the ", c.time_steps(), " time steps the model reads");
  (void)shortest;
  return out;
}

// Mirrors CaptchaModel's constructor (model.h): per block, convs_per_block x (Conv2d without bias,
// BatchNorm2d, ReLU) and a MaxPool2d, then a Dropout, all in the Sequential "cnn" (children "0", "1", ...);
// the bidirectional GRU or LSTM "rnn" (nn/rnn.h: per layer and direction weight_ih, weight_hh, bias_ih,
// bias_hh, of 3 gate blocks for the GRU, 4 for the LSTM); the Linear "classifier". A test compares this
// list with a built model's state_dict().
std::vector<std::pair<std::string, Shape>> model_state_shapes(const ModelConfig& c) {
  std::vector<std::pair<std::string, Shape>> out;
  int64_t in = 3, child = 0;
  for (int64_t channels : c.channels) {
    for (int k = 0; k < c.convs_per_block; ++k, in = channels) {
      out.emplace_back(str_cat("cnn.", child++, ".weight"), Shape{channels, in, 3, 3});
      const std::string bn = str_cat("cnn.", child++, ".");
      for (const char* name : {"weight", "bias", "running_mean", "running_var"}) out.emplace_back(bn + name, Shape{channels});
      ++child;  // ReLU
    }
    ++child;  // MaxPool2d
  }
  const int64_t h = c.gru_hidden, gates = c.rnn == RnnKind::lstm ? 4 : 3;
  for (int layer = 0; layer < c.gru_layers; ++layer) {
    const int64_t layer_in = layer == 0 ? in * c.feature_height() : 2 * h;
    for (const char* direction : {"", "_reverse"}) {
      const std::string sfx = str_cat("_l", layer, direction);
      out.emplace_back("rnn.weight_ih" + sfx, Shape{gates * h, layer_in});
      out.emplace_back("rnn.weight_hh" + sfx, Shape{gates * h, h});
      out.emplace_back("rnn.bias_ih" + sfx, Shape{gates * h});
      out.emplace_back("rnn.bias_hh" + sfx, Shape{gates * h});
    }
  }
  out.emplace_back("classifier.weight", Shape{c.classes, 2 * h});
  out.emplace_back("classifier.bias", Shape{c.classes});
  return out;
}

void check_tensors_match_config(const Checkpoint& file, const ModelConfig& c, const std::string& path) {
  const std::string prefix = "model/";
  std::map<std::string, Shape> in_file;
  int64_t file_values = 0;
  for (const auto& [name, t] : file.tensors)
    if (name.compare(0, prefix.size(), prefix) == 0) {
      in_file[name.substr(prefix.size())] = t.shape();
      file_values += t.numel();
    }
  std::vector<std::string> missing, other_shape;
  std::set<std::string> expected;
  int64_t expected_values = 0;
  for (const auto& [name, shape] : model_state_shapes(c)) {
    expected.insert(name);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    expected_values += n;
    auto it = in_file.find(name);
    if (it == in_file.end())
      missing.push_back(name);
    else if (it->second != shape)
      other_shape.push_back(str_cat(name, " (expected ", shape_str(shape), ", got ", shape_str(it->second), ")"));
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, shape] : in_file)
    if (!expected.count(name)) unexpected.push_back(name);
  if (missing.empty() && other_shape.empty() && unexpected.empty()) return;
  std::string msg = str_cat("checkpoint '", path, "': its tensors are not the model its metadata describes (",
                            expected.size(), " tensors of ", expected_values, " values; the file has ", in_file.size(),
                            " of ", file_values, ")");
  if (!missing.empty()) msg += str_cat("; missing: ", some_names(missing));
  if (!unexpected.empty()) msg += str_cat("; unexpected: ", some_names(unexpected));
  if (!other_shape.empty()) msg += str_cat("; shape mismatch: ", some_names(other_shape));
  throw Error(msg);
}

std::shared_ptr<CaptchaModel> model_from_checkpoint(const Checkpoint& file, const std::string& path,
                                                    SavedModel& saved) {
  saved = saved_model_from_metadata(file.metadata, path);
  check_tensors_match_config(file, saved.config, path);
  auto model = std::make_shared<CaptchaModel>(saved.config);
  load_checkpoint(file, path, *model);
  model->eval();
  return model;
}

}  // namespace captcha
