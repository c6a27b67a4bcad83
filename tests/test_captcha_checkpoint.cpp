// tests/test_captcha_checkpoint.cpp — a captcha checkpoint's model description read back
// (examples/captcha/model_config.h): the writer's metadata round trips; every value is parsed whole and
// held to ModelLimits, so a crafted file (gru_layers = 100000, gru_hidden = "64abc", width = 100000) is
// refused in one line before any model is built; the tensors the description implies are compared with
// the file's own; the implied list is exactly a built model's state_dict().
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "core/autograd.h"
#include "core/random.h"
#include "examples/captcha/model_config.h"
#include "nn/checkpoint.h"
#include "ops/ops.h"

using namespace minidl;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_captcha_ckpt_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

// A model small enough to build in a test: 32x16 input, two blocks, a 1-layer GRU of 4.
captcha::ModelConfig tiny_config() {
  captcha::ModelConfig c;
  c.width = 32;
  c.height = 16;
  c.channels = {3, 5};
  c.convs_per_block = 2;
  c.gru_hidden = 4;
  c.gru_layers = 1;
  c.classes = 4;  // "abc" + blank
  return c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("captcha checkpoint: the implied tensors are exactly a built model's state_dict", "[captcha_model]") {
  manual_seed(3);
  std::vector<captcha::ModelConfig> configs = {captcha::ModelConfig(), tiny_config()};
  captcha::ModelConfig deep = tiny_config();
  deep.channels = {2, 3, 4};
  deep.convs_per_block = 3;
  deep.gru_layers = 3;
  deep.height = 32;
  configs.push_back(deep);
  deep.rnn = captcha::RnnKind::lstm;
  configs.push_back(deep);
  for (const captcha::ModelConfig& c : configs) {
    captcha::CaptchaModel model(c);
    std::vector<std::pair<std::string, Shape>> built;
    for (const auto& [name, t] : model.state_dict()) built.emplace_back(name, t.shape());
    std::vector<std::pair<std::string, Shape>> implied = captcha::model_state_shapes(c);
    std::sort(built.begin(), built.end());
    std::sort(implied.begin(), implied.end());
    CHECK(implied == built);
  }
}

TEST_CASE("captcha checkpoint: a saved model loads back from its metadata", "[captcha_model]") {
  TempDir dir;
  manual_seed(5);
  captcha::CaptchaModel model(tiny_config());
  save_checkpoint(dir.file("m.ckpt"), model, nullptr, captcha::model_metadata(tiny_config(), "abc", "2-3"));
  const Checkpoint file = read_checkpoint(dir.file("m.ckpt"));
  captcha::SavedModel saved;
  auto loaded = captcha::model_from_checkpoint(file, dir.file("m.ckpt"), saved);
  CHECK(saved.charset == "abc");
  CHECK(saved.length == "2-3");
  CHECK(saved.config.channels == std::vector<int64_t>{3, 5});
  CHECK(saved.config.classes == 4);
  model.eval();
  NoGradGuard no_grad;
  const Tensor x = rand({1, 3, 16, 32});
  CHECK(model(x).to_vector<float>() == (*loaded)(x).to_vector<float>());
}

TEST_CASE("captcha checkpoint: an LSTM model loads back as an LSTM, a file without 'rnn' as a GRU",
          "[captcha_model]") {
  TempDir dir;
  manual_seed(7);
  captcha::ModelConfig lstm_config = tiny_config();
  lstm_config.rnn = captcha::RnnKind::lstm;
  captcha::CaptchaModel lstm(lstm_config);
  save_checkpoint(dir.file("lstm.ckpt"), lstm, nullptr, captcha::model_metadata(lstm_config, "abc", "2"));
  captcha::SavedModel saved;
  auto loaded = captcha::model_from_checkpoint(read_checkpoint(dir.file("lstm.ckpt")), dir.file("lstm.ckpt"), saved);
  CHECK(saved.config.rnn == captcha::RnnKind::lstm);
  for (const auto& [name, t] : loaded->rnn->state_dict())
    if (name == "weight_ih_l0") CHECK(t.shape() == Shape{16, 20});  // 4 gates x hidden 4, from 5 x 4 features
  lstm.eval();
  NoGradGuard no_grad;
  const Tensor x = rand({1, 3, 16, 32});
  CHECK(lstm(x).to_vector<float>() == (*loaded)(x).to_vector<float>());

  // A GRU saved before the "rnn" key existed: no key, a GRU's tensors.
  captcha::CaptchaModel gru(tiny_config());
  std::map<std::string, std::string> old_metadata = captcha::model_metadata(tiny_config(), "abc", "2");
  old_metadata.erase("rnn");
  save_checkpoint(dir.file("old.ckpt"), gru, nullptr, old_metadata);
  auto old = captcha::model_from_checkpoint(read_checkpoint(dir.file("old.ckpt")), dir.file("old.ckpt"), saved);
  CHECK(saved.config.rnn == captcha::RnnKind::gru);
  gru.eval();
  CHECK(gru(x).to_vector<float>() == (*old)(x).to_vector<float>());
}

TEST_CASE("captcha checkpoint: a file whose 'rnn' names the other kind is refused by its gate count",
          "[captcha_model]") {
  TempDir dir;
  manual_seed(9);
  captcha::CaptchaModel gru(tiny_config());
  captcha::ModelConfig claimed = tiny_config();
  claimed.rnn = captcha::RnnKind::lstm;  // GRU tensors (3 gates), metadata saying LSTM (4)
  save_checkpoint(dir.file("gru_as_lstm.ckpt"), gru, nullptr, captcha::model_metadata(claimed, "abc", "2"));
  captcha::SavedModel saved;
  const std::string to_lstm = error_of([&] {
    captcha::model_from_checkpoint(read_checkpoint(dir.file("gru_as_lstm.ckpt")), dir.file("gru_as_lstm.ckpt"), saved);
  });
  CHECK_THAT(to_lstm, Catch::Contains("its tensors are not the model its metadata describes") &&
                          Catch::Contains("rnn.weight_ih_l0 (expected [16,20], got [12,20])"));
  claimed.rnn = captcha::RnnKind::lstm;
  captcha::CaptchaModel lstm(claimed);
  save_checkpoint(dir.file("lstm_as_gru.ckpt"), lstm, nullptr, captcha::model_metadata(tiny_config(), "abc", "2"));
  const std::string to_gru = error_of([&] {
    captcha::model_from_checkpoint(read_checkpoint(dir.file("lstm_as_gru.ckpt")), dir.file("lstm_as_gru.ckpt"), saved);
  });
  CHECK_THAT(to_gru, Catch::Contains("rnn.weight_ih_l0 (expected [12,20], got [16,20])"));
}

TEST_CASE("captcha checkpoint: crafted metadata is refused in one line, before anything is built",
          "[captcha_model]") {
  const std::map<std::string, std::string> good = captcha::model_metadata(tiny_config(), "abc", "4");
  REQUIRE_NOTHROW(captcha::saved_model_from_metadata(good, "m.ckpt"));
  auto with = [&](const std::string& key, const std::string& value) {
    std::map<std::string, std::string> m = good;
    m[key] = value;
    return error_of([&] { captcha::saved_model_from_metadata(m, "m.ckpt"); });
  };
  // The values of the issue: each was read (64abc as 64) or built (for minutes, gigabytes) before.
  CHECK(with("gru_layers", "100000") == "checkpoint 'm.ckpt': metadata gru_layers = 100000 is outside 1..16");
  CHECK(with("convs_per_block", "1000000") ==
        "checkpoint 'm.ckpt': metadata convs_per_block = 1000000 is outside 1..16");
  CHECK(with("gru_hidden", "64abc") == "checkpoint 'm.ckpt': metadata gru_hidden = '64abc' is not a whole number");
  CHECK(with("width", "100000") == "checkpoint 'm.ckpt': metadata width = 100000 is outside 1..4096");
  std::map<std::string, std::string> big = good;
  big["width"] = big["height"] = "2048";
  CHECK(error_of([&] { captcha::saved_model_from_metadata(big, "m.ckpt"); }) ==
        "checkpoint 'm.ckpt': its metadata describes an impossible model: captcha model: width x height 4194304 is "
        "outside 1..1048576");
  CHECK_THAT(with("height", "2"), Catch::Contains("input is too small for 2 pooling blocks"));
  CHECK_THAT(with("channels", "3,,5"), Catch::Contains("metadata channels = '3,,5' is not a list"));
  CHECK_THAT(with("channels", "3,5,"), Catch::Contains("is not a list"));
  CHECK_THAT(with("channels", "3,99999"), Catch::Contains("is not a list of channel counts 1..4096"));
  CHECK_THAT(with("dropout", "nan"), Catch::Contains("metadata dropout = 'nan' is not a number"));
  CHECK_THAT(with("dropout", "1"), Catch::Contains("dropout = 1 is outside [0, 1)"));
  CHECK_THAT(with("charset", "abca"), Catch::Contains("appears twice"));
  CHECK_THAT(with("charset", ""), Catch::Contains("metadata charset is empty"));
  CHECK_THAT(with("length", "4-2"), Catch::Contains("metadata length = '4-2' is not a label length"));
  CHECK_THAT(with("length", "40"), Catch::Contains("length = 40 is longer than the 16 time steps"));
  CHECK_THAT(with("rnn", "transformer"), Catch::Contains("metadata rnn = 'transformer' is not gru or lstm"));
  std::map<std::string, std::string> old_file = good;  // saved before the LSTM existed: a GRU
  old_file.erase("rnn");
  CHECK(captcha::saved_model_from_metadata(old_file, "m.ckpt").config.rnn == captcha::RnnKind::gru);
  CHECK_THAT(with("model", "mnist_cnn"), Catch::Contains("is not a captcha model") && Catch::Contains("mnist_cnn"));
  std::map<std::string, std::string> no_height = good;
  no_height.erase("height");
  CHECK_THAT(error_of([&] { captcha::saved_model_from_metadata(no_height, "m.ckpt"); }),
             Catch::Contains("checkpoint 'm.ckpt' has no 'height' in its metadata"));
}

TEST_CASE("captcha checkpoint: metadata that does not describe the file's tensors is refused before building",
          "[captcha_model]") {
  TempDir dir;
  manual_seed(5);
  captcha::CaptchaModel model(tiny_config());
  // The metadata claims 16 GRU layers and a wider GRU; the tensors are those of the 1-layer model.
  captcha::ModelConfig claimed = tiny_config();
  claimed.gru_layers = 16;
  claimed.gru_hidden = 4096;
  save_checkpoint(dir.file("m.ckpt"), model, nullptr, captcha::model_metadata(claimed, "abc", "4"));
  const Checkpoint file = read_checkpoint(dir.file("m.ckpt"));
  captcha::SavedModel saved;
  const std::string e = error_of([&] { captcha::model_from_checkpoint(file, dir.file("m.ckpt"), saved); });
  CHECK_THAT(e, Catch::Contains("m.ckpt': its tensors are not the model its metadata describes (") &&
                    Catch::Contains("missing: rnn.weight_ih_l1") && Catch::Contains("shape mismatch: rnn.weight_ih_l0 "
                                                                                      "(expected [12288,20], got [12,20])"));
  // The model those values would build: never allocated.
  CHECK(e.find('\n') == std::string::npos);
}
