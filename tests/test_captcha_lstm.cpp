// tests/test_captcha_lstm.cpp — the captcha recognizer with an LSTM (captcha_break's recipe,
// examples/captcha/model.h with RnnKind::lstm): its parameter count, its three LSTM paths computing the
// same model, a save and load round trip through a checkpoint whose metadata names the layer, and the
// reading of older files (no "rnn" key: a GRU).
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "core/autograd.h"
#include "core/random.h"
#include "examples/captcha/model.h"
#include "nn/checkpoint.h"
#include "tests/test_util.h"

using namespace minidl;
using namespace minidl::testing;

namespace {

// A small LSTM model (64x32 input, 16 steps, 5 classes) in eval mode.
captcha::ModelConfig small_lstm_config() {
  captcha::ModelConfig config;
  config.width = 64;
  config.height = 32;
  config.classes = 5;
  config.channels = {4, 8, 8};
  config.gru_hidden = 6;
  config.rnn = captcha::RnnKind::lstm;
  return config;
}

}  // namespace

TEST_CASE("captcha model with an LSTM: captcha_break's layer, its parameter count and output shape",
          "[captcha_model][lstm]") {
  manual_seed(11);
  captcha::ModelConfig config;  // the defaults (192x64, 36 characters + blank), with an LSTM
  config.rnn = captcha::RnnKind::lstm;
  captcha::CaptchaModel model(config);
  CHECK(model.rnn->describe() == "LSTM(512 -> 128, 2 layers, bidirectional, auto)");
  // By hand: convolutions 2,350,944, batch norms 2,944, LSTM layer 0 2 * (4*128*(512 + 128) + 2 * 512),
  // layer 1 2 * (4*128*(256 + 128) + 2 * 512), classifier 256 * 37 + 37.
  CHECK(model.parameter_count() == 2350944 + 2944 + 657408 + 395264 + 9509);
  CHECK(model.parameter_count() == 3416069);
  model.eval();
  NoGradGuard no_grad;
  CHECK(model(rand({2, 3, 64, 192})).shape() == Shape{12, 2, 37});
}

TEST_CASE("captcha model with an LSTM: the fused, composed and sequence paths compute the same model",
          "[captcha_model][lstm]") {
  manual_seed(12);
  captcha::CaptchaModel model(small_lstm_config());
  const Tensor x = rand({3, 3, 32, 64});
  std::vector<Tensor> outputs, grads;
  for (RnnPath path : {RnnPath::fused, RnnPath::composed, RnnPath::sequence}) {
    model.rnn->path = path;
    model.zero_grad();
    model.eval();  // no dropout: every pass sees the same network
    const Tensor y = model(x);
    sum(y * y).backward();
    outputs.push_back(y.detach());
    grads.push_back(model.rnn->weights[0].w_hh.grad());
  }
  CHECK(outputs[0].shape() == Shape{16, 3, 5});
  for (size_t p = 1; p < outputs.size(); ++p) {
    INFO("path " << p << " against fused");
    CHECK(compare(outputs[p], outputs[0], 1e-5, 1e-6) == "");
    CHECK(compare(grads[p], grads[0], 1e-4, 1e-6) == "");
  }
}

TEST_CASE("captcha model with an LSTM: saved and loaded through a checkpoint naming the layer",
          "[captcha_model][lstm]") {
  char tmpl[] = "/tmp/minidl_test_captcha_lstm_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string path = dir + "/lstm.ckpt";
  manual_seed(13);
  const captcha::ModelConfig config = small_lstm_config();
  captcha::CaptchaModel model(config);
  model.eval();
  const Tensor x = rand({2, 3, 32, 64});
  const Tensor y = model(x).detach();
  save_checkpoint(path, model, nullptr, {{"rnn", captcha::rnn_kind_name(config.rnn)}});

  // What `captcha eval` does: the layer from the metadata, then the weights.
  const std::map<std::string, std::string> meta = captcha::with_metadata_defaults(read_checkpoint(path).metadata);
  captcha::ModelConfig loaded_config = small_lstm_config();
  loaded_config.rnn = captcha::parse_rnn_kind(meta.at("rnn"));
  CHECK(loaded_config.rnn == captcha::RnnKind::lstm);
  manual_seed(14);  // other initial weights, all overwritten by the file
  captcha::CaptchaModel loaded(loaded_config);
  load_checkpoint(path, loaded);
  loaded.eval();
  CHECK(loaded.rnn->type_name() == "LSTM");
  CHECK(compare(loaded(x), y, 0, 0) == "");

  // The same file cannot fill a GRU model: its weights have 4H rows, not 3H.
  captcha::ModelConfig gru_config = small_lstm_config();
  gru_config.rnn = captcha::RnnKind::gru;
  captcha::CaptchaModel gru_model(gru_config);
  CHECK_THROWS(load_checkpoint(path, gru_model));
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("captcha checkpoints: a file without an \"rnn\" key holds a GRU", "[captcha_model][lstm]") {
  CHECK(captcha::with_metadata_defaults({{"model", "captcha_crnn"}}).at("rnn") == "gru");
  CHECK(captcha::with_metadata_defaults({{"rnn", "lstm"}}).at("rnn") == "lstm");
  CHECK(captcha::parse_rnn_kind("gru") == captcha::RnnKind::gru);
  CHECK_THROWS_WITH(captcha::parse_rnn_kind("rnn"), Catch::Contains("gru or lstm"));
  captcha::ModelConfig defaults;
  CHECK(defaults.rnn == captcha::RnnKind::gru);  // the default model is unchanged
}
