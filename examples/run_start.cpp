// examples/run_start.cpp — --resume and --init-from for both training programs (examples/run_start.h).
#include "examples/run_start.h"

#include <algorithm>

#include "core/error.h"
#include "nn/checkpoint.h"

namespace examples {

using minidl::str_cat;

namespace {

// The file at `path`, refused in one line when it holds another kind of model than settings["model"].
minidl::Checkpoint read_model_file(const std::string& path, const Metadata& settings, const std::string& saved_by) {
  minidl::Checkpoint file = minidl::read_checkpoint(path);
  const auto model = settings.find("model");
  if (model != settings.end() && !saved_by.empty()) minidl::check_checkpoint_model(file, path, model->second, saved_by);
  return file;
}

}  // namespace

ResumedRun resume_run(const std::string& path, minidl::Module& model, minidl::Optimizer& optimizer,
                      const Metadata& settings, size_t sums, const std::vector<DataFingerprint>& fingerprints,
                      bool other_data_allowed, const std::string& saved_by, const MetadataDefaults& defaults) {
  const minidl::Checkpoint file = read_model_file(path, settings, saved_by);
  ResumedRun r;
  r.metadata = defaults ? defaults(file.metadata) : file.metadata;
  // The settings before the tensors: a file of another model is named by its flags, not by a shape.
  r.start = resume_position(path, r.metadata, settings, sums);
  minidl::load_checkpoint(file, path, model, &optimizer);
  const std::string data_note = check_data_fingerprints(path, r.metadata, fingerprints, other_data_allowed);
  if (!data_note.empty()) r.notes.push_back(data_note);
  r.length_note = run_length_note(r.metadata, settings);
  return r;
}

Metadata init_from(const std::string& path, minidl::Module& model, const Metadata& settings,
                   const std::vector<std::string>& model_keys, const std::string& saved_by,
                   const MetadataDefaults& defaults) {
  const minidl::Checkpoint file = read_model_file(path, settings, saved_by);
  const Metadata saved = defaults ? defaults(file.metadata) : file.metadata;
  const auto is_model_key = [&](const std::string& key) {
    return std::find(model_keys.begin(), model_keys.end(), key) != model_keys.end();
  };
  const std::string differences = setting_differences(saved, settings, is_model_key);
  MINIDL_CHECK(differences.empty(), "--init-from ", path, ": the saved model is not this run's (", differences,
               "); give the saved model's flags");
  minidl::load_checkpoint(file, path, model, nullptr);  // the optimizer's state in the file is not used
  return saved;
}

std::string init_from_note(const std::string& program, const std::string& path, const Metadata& file) {
  std::string what;
  const auto epoch = file.find("epoch"), run = file.find("run.data");
  if (epoch != file.end()) what += str_cat(" after epoch ", epoch->second);
  if (run != file.end()) what += str_cat(" of a run on ", run->second);
  return str_cat(program, ": --init-from ", path, ": the weights", what,
                 "; a new optimizer, learning-rate schedule and position (step 0)");
}

}  // namespace examples
