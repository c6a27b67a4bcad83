// examples/captcha/model.h — the captcha recognizer: CNN -> column sequence -> bidirectional GRU or
// LSTM -> CTC.
//
//   x [N, 3, H, W] pixels in [0, 1]
//   5 blocks of 2 x (conv 3x3 padding 1, BatchNorm2d, ReLU), channels 32, 64, 128, 256, 256; after each
//   block a max-pool: 2x2 for all but the last, 2x1 (kernel and stride (2, 1)) for the last, which halves
//   the height only: the width is the time axis and keeps its resolution
//   dropout -> [N, C, H', W'] read column by column: [W', N, C * H']        (192x64: 12 steps of 256 * 2)
//   (with bfloat16 activations, --activations bf16: the blocks run on a bfloat16 copy of x and their output
//   is cast back to float32 before the dropout; the parameters stay float32)
//   GRU or LSTM (C * H' -> 128, 2 layers, bidirectional) -> dropout -> Linear(256 -> classes) -> log_softmax
// classes = charset + 1, class 0 the CTC blank. Output log_probs [T = W', N, classes], trained by
// ctc_loss and read by greedy decoding. A label of L characters with r adjacent repeats needs
// T >= L + r steps; 12 steps carry 4 characters even when all four are the same (7 steps).
// 192x64 input, 36 characters: 3,152,901 parameters with the GRU (the default), 3,416,069 with the LSTM
// (captcha_break's PyTorch recipe).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/gru.h"
#include "nn/lstm.h"
#include "nn/layers.h"
#include "ops/memory_format.h"
#include "ops/ops.h"

namespace captcha {

// Stored in checkpoints' metadata ("model"), so `captcha eval` can tell its own files from others.
constexpr const char* kModelName = "captcha_crnn";

// The recurrent layer: stored in checkpoints' metadata ("rnn"); a file without the key holds a GRU.
enum class RnnKind { gru, lstm };
inline const char* rnn_kind_name(RnnKind kind) { return kind == RnnKind::lstm ? "lstm" : "gru"; }
inline RnnKind parse_rnn_kind(const std::string& name) {
  MINIDL_CHECK(name == "gru" || name == "lstm", "captcha model: the recurrent layer is gru or lstm, not '", name, "'");
  return name == "lstm" ? RnnKind::lstm : RnnKind::gru;
}

// A checkpoint's metadata with, where a key is missing, the value it means in files saved before the key
// existed: "rnn" -> "gru" (every captcha model had a GRU before the LSTM). What load_model and
// `train --resume` read.
inline std::map<std::string, std::string> with_metadata_defaults(std::map<std::string, std::string> metadata) {
  metadata.insert({"rnn", "gru"});  // insert keeps a value that is there
  return metadata;
}

// Limits far above any model this program trains (the default is 192x64, 5 blocks of at most 256
// channels, a GRU or LSTM of 128 x 2 layers): a larger value in a checkpoint is a corrupt or crafted file, and a
// flag asking for one is refused before anything is built.
struct ModelLimits {
  static constexpr int64_t kMaxSide = 4096;           // width, height
  static constexpr int64_t kMaxPixels = 1 << 20;      // width x height
  static constexpr int64_t kMaxBlocks = 12;           // channels.size()
  static constexpr int64_t kMaxChannels = 4096;       // each block's
  static constexpr int64_t kMaxConvsPerBlock = 16;
  static constexpr int64_t kMaxGruHidden = 4096;
  static constexpr int64_t kMaxGruLayers = 16;
  static constexpr int64_t kMaxClasses = 1024;
};

struct ModelConfig {
  int width = 192, height = 64;
  int64_t classes = 37;                                   // charset + 1 (the blank)
  std::vector<int64_t> channels = {32, 64, 128, 256, 256};  // one block each
  int convs_per_block = 2;
  RnnKind rnn = RnnKind::gru;
  // The recurrent layer's size, layers and implementation, GRU or LSTM (the names are from when it was
  // always a GRU; the checkpoint metadata keeps them, so older files load).
  int64_t gru_hidden = 128;
  int gru_layers = 2;
  double dropout = 0.1;
  minidl::RnnPath gru_path = minidl::RnnPath::automatic;

  // The feature map the CNN leaves: each block halves the height, all but the last halve the width.
  int64_t feature_height() const { return height >> channels.size(); }
  int64_t time_steps() const { return width >> (channels.size() - 1); }
};

// The recurrent layer's implementation on `device`, for progress output: "fused", "auto: sequence".
inline std::string rnn_path_shown(const ModelConfig& c, const minidl::Device& device) {
  return c.rnn == RnnKind::lstm ? minidl::describe_lstm_path(c.gru_path, device)
                                : minidl::describe_gru_path(c.gru_path, device);
}

// Throws "captcha model: <setting> <value> is outside <range>" for a configuration beyond ModelLimits, or
// one whose input is too small for its pooling blocks.
inline void check_model_config(const ModelConfig& c) {
  using L = ModelLimits;
  auto in_range = [](const char* what, int64_t v, int64_t lo, int64_t hi) {
    MINIDL_CHECK(v >= lo && v <= hi, "captcha model: ", what, " ", v, " is outside ", lo, "..", hi);
  };
  in_range("width", c.width, 1, L::kMaxSide);
  in_range("height", c.height, 1, L::kMaxSide);
  in_range("width x height", int64_t(c.width) * c.height, 1, L::kMaxPixels);
  in_range("the number of blocks (channels)", static_cast<int64_t>(c.channels.size()), 1, L::kMaxBlocks);
  for (int64_t ch : c.channels) in_range("channels", ch, 1, L::kMaxChannels);
  in_range("convs_per_block", c.convs_per_block, 1, L::kMaxConvsPerBlock);
  in_range("gru_hidden", c.gru_hidden, 1, L::kMaxGruHidden);
  in_range("gru_layers", c.gru_layers, 1, L::kMaxGruLayers);
  in_range("classes", c.classes, 2, L::kMaxClasses);
  MINIDL_CHECK(c.dropout >= 0 && c.dropout < 1, "captcha model: dropout ", c.dropout, " is outside [0, 1)");
  MINIDL_CHECK(c.feature_height() >= 1 && c.time_steps() >= 1, "captcha model: a ", c.width, "x", c.height,
               " input is too small for ", c.channels.size(), " pooling blocks");
}

class CaptchaModel : public minidl::Module {
 public:
  explicit CaptchaModel(const ModelConfig& c) : config(c) {
    using namespace minidl;
    check_model_config(c);
    cnn = register_module("cnn", std::make_shared<Sequential>());
    int64_t in = 3;
    for (size_t b = 0; b < c.channels.size(); ++b) {
      for (int k = 0; k < c.convs_per_block; ++k, in = c.channels[b]) {
        cnn->push_back(std::make_shared<Conv2d>(in, c.channels[b], 3, 1, 1, /*bias=*/false));
        cnn->push_back(std::make_shared<BatchNorm2d>(c.channels[b]));
        cnn->push_back(std::make_shared<ReLU>());
      }
      Pool2dParams pool;  // 2x2 ...
      if (b + 1 == c.channels.size()) pool.kernel_w = pool.stride_w = 1;  // ... and 2x1 for the last block
      cnn->push_back(std::make_shared<MaxPool2d>(pool));
    }
    // The dropout after the blocks is a module of its own (not the Sequential's last) so that the blocks'
    // bfloat16 output is cast to float32 between them; it has no state, so checkpoints do not see it.
    cnn_dropout = register_module("cnn_dropout", std::make_shared<Dropout>(c.dropout));
    const int64_t features = in * c.feature_height();
    if (c.rnn == RnnKind::lstm)
      rnn = register_module("rnn", std::make_shared<LSTM>(features, c.gru_hidden, c.gru_layers, true, c.gru_path));
    else
      rnn = register_module("rnn", std::make_shared<GRU>(features, c.gru_hidden, c.gru_layers, true, c.gru_path));
    rnn_dropout = register_module("rnn_dropout", std::make_shared<Dropout>(c.dropout));
    classifier = register_module("classifier", std::make_shared<Linear>(2 * c.gru_hidden, c.classes));
  }

  // x [N, 3, H, W] -> log_probs [T, N, classes]
  minidl::Tensor forward(const minidl::Tensor& x) override {
    using namespace minidl;
    MINIDL_CHECK(x.dim() == 4 && x.size(1) == 3 && x.size(2) == config.height && x.size(3) == config.width,
                 "captcha model: expected images [N, 3, ", config.height, ", ", config.width, "], got ",
                 shape_str(x.shape()));
    const Tensor input = cast(to_memory_format(x, memory_format), activation_dtype);
    const Tensor features = (*cnn_dropout)(cast((*cnn)(input), DType::float32));  // [N, C, H', W']
    const int64_t steps = features.size(3), batch = features.size(0);
    // Whatever the features' memory format, the reshape copies them into the sequence's layout.
    const Tensor sequence = features.permute({3, 0, 1, 2}).reshape({steps, batch, -1});  // [W', N, C * H']
    const Tensor h = (*rnn_dropout)((*rnn)(sequence));             // [T, N, 2 * hidden]
    return log_softmax((*classifier)(h), -1);
  }

  std::string type_name() const override { return "CaptchaModel"; }

  ModelConfig config;
  // The CNN's activations in NCHW or channels-last memory (--memory-format, core/memory_format.h): the
  // input is converted once, the layers keep the format. Not a model setting: no checkpoint stores it.
  minidl::MemoryFormat memory_format = minidl::MemoryFormat::contiguous;
  // The dtype of the CNN's activations: float32, or bfloat16 (--activations, examples/flags.h). Not a model
  // setting either: the parameters are float32 whatever it is.
  minidl::DType activation_dtype = minidl::DType::float32;
  std::shared_ptr<minidl::Sequential> cnn;
  std::shared_ptr<minidl::Dropout> cnn_dropout;
  std::shared_ptr<minidl::RnnLayer> rnn;  // a GRU or an LSTM (config.rnn), bidirectional
  std::shared_ptr<minidl::Dropout> rnn_dropout;
  std::shared_ptr<minidl::Linear> classifier;
};

}  // namespace captcha
