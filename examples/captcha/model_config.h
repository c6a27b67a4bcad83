// examples/captcha/model_config.h — a captcha checkpoint's model description read back strictly, and the
// tensors it implies, so that `captcha eval` and `captcha predict` check a file before building its model.
//
// The metadata written by model_metadata() (common.h) describes the model (sizes, channels, GRU) and the
// data (charset, label length). A crafted file with a valid checksum can say anything there:
// gru_layers = 100000 would have the program build a model of billions of parameters before any size
// check; "64abc" would be read as 64. So every value is parsed as a whole and held to the ranges of
// ModelLimits (model.h), and the tensors the configuration implies are compared, by name and shape,
// with the file's own tensors before anything is built: the model that is then built is never larger
// than the file.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "examples/captcha/model.h"
#include "nn/checkpoint.h"

namespace captcha {

// The metadata `captcha train` saves with the model: "model" = captcha_crnn, its configuration ("width",
// "height", "channels" as "32,64,...", "convs_per_block", "rnn" = gru or lstm, "gru_hidden", "gru_layers"
// (the recurrent layer's, whichever it is), "dropout"), the "charset" and the label "length" ("4" or "4-6").
std::map<std::string, std::string> model_metadata(const ModelConfig& config, const std::string& charset,
                                                  const std::string& length);

// What a captcha checkpoint's metadata says: the model configuration, the charset (classes = its size + 1)
// and the label length ("4" or "4-6").
struct SavedModel {
  ModelConfig config;
  std::string charset, length;
};

// Reads and checks the metadata of `path`: model = captcha_crnn; width, height, channels,
// convs_per_block, gru_hidden, gru_layers whole numbers within ModelLimits; rnn gru or lstm (gru when the
// key is missing: files from before the LSTM); dropout in [0, 1); a charset
// of distinct printable ASCII characters; a length N or A-B with 1 <= A <= B <= the model's time steps.
// Throws one line naming the file and the key.
SavedModel saved_model_from_metadata(const std::map<std::string, std::string>& metadata, const std::string& path);

// Names and shapes of CaptchaModel(config).state_dict(), computed without building the model.
std::vector<std::pair<std::string, minidl::Shape>> model_state_shapes(const ModelConfig& config);

// Throws one line unless the file's model tensors ("model/<name>") are exactly model_state_shapes(config).
void check_tensors_match_config(const minidl::Checkpoint& file, const ModelConfig& config, const std::string& path);

// All of the above, then the model built and loaded from the file (on the CPU, in eval mode).
std::shared_ptr<CaptchaModel> model_from_checkpoint(const minidl::Checkpoint& file, const std::string& path,
                                                    SavedModel& saved);

}  // namespace captcha
