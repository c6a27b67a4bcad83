// nn/checkpoint_state.h — a model's and an optimizer's state in a checkpoint, and back.
//
// A checkpoint (nn/checkpoint_format.h) holds tensors "model/<name>" from model.state_dict() and
// "optimizer/<name>" from optimizer->state_dict(). Restoring checks the file's tensors against the model
// first (names, shapes, dtypes: an int32 tensor where the model has float32 is an error, not a silent
// conversion) and says in one line what does not fit; a file of another kind of model is named as such.
// Nothing is copied until everything fits, so a failed load leaves the model as it was.
#pragma once
#include <map>
#include <string>

#include "nn/checkpoint_format.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace minidl {

// Model and (optionally) optimizer in one file; metadata gets "optimizer" = the optimizer's type name.
void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     std::map<std::string, std::string> metadata = {});
// Restores the model (and the optimizer when given; then the file must hold optimizer state of the
// same type). Returns the metadata. The model must have been built with the same configuration.
std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model,
                                                   Optimizer* optimizer = nullptr);
// The same from a file already read (to look at its metadata before building the model); `path` is for
// messages. Before anything is copied, every tensor is checked: the model's and the file's names, shapes
// and dtypes must agree, and the optimizer's entries must have the dtypes of nn/optim.h, sane step and lr
// values, and belong to its parameters; an error lists at most a few names of each kind of misfit.
std::map<std::string, std::string> load_checkpoint(const Checkpoint& checkpoint, const std::string& path,
                                                   Module& model, Optimizer* optimizer = nullptr);

// Throws one line unless the file's metadata says model = `expected` (the programs record their model's
// name there): "'a.ckpt' holds a captcha_crnn model, not an mnist_cnn model saved by `mnist train --save`".
void check_checkpoint_model(const Checkpoint& checkpoint, const std::string& path, const std::string& expected,
                            const std::string& saved_by);

}  // namespace minidl
