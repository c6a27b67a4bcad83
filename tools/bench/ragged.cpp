// tools/bench/ragged.cpp — the ragged shape of each key: sizes that divide no tile, on which `minidl bench`
// checks every kernel once against the naive CPU kernel, whatever shapes it times.
//
// Why: a tiled kernel has two paths, the full tiles and the partial ones at the edges. The shapes the
// bench times (powers of two, the models' layers) often fill whole tiles, so a kernel that is wrong only
// on a remainder (a loop bound rounded down to the tile, a missing guard) passes their error column. The
// sizes here are odd primes or products of them (37, 53, 29, 17, 19): no tile of 2^k elements divides
// them, each is larger than the usual tiles (16 or 32 in a dimension), and each dimension is different, so
// a swapped index fails too. They stay small (well under a million FLOPs) so that the naive reference is
// instant on any case.
#include <map>

#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

// By op (the key's name before '.': every stage of an op shares its shape); each is a --shape SPEC.
const std::map<std::string, std::string>& ragged_shapes() {
  static const std::map<std::string, std::string> shapes = {
      {"matmul", "37x53x29"},  // M, N, K: 2 tiles of 16 and 5 rows, 3 and 5, 1 and 13
      {"conv2d", "3x5x17x19,7x5x3x3,s1p1"},
      {"conv2d_bias_relu", "3x5x17x19,7x5x3x3,s1p1"},
      {"max_pool2d", "3x5x17x19,k3s2p1"},
      {"avg_pool2d", "3x5x17x19,k3s2p1"},
      // Elementwise: 1961 elements, not a multiple of any vector width or block.
      {"neg", "37x53"}, {"exp", "37x53"}, {"log", "37x53"}, {"sqrt", "37x53"}, {"relu", "37x53"},
      {"sigmoid", "37x53"}, {"tanh", "37x53"}, {"add_scalar", "37x53"}, {"mul_scalar", "37x53"},
      {"pow_scalar", "37x53"}, {"add", "37x53"}, {"sub", "37x53"}, {"mul", "37x53"}, {"div", "37x53"},
      {"relu_backward", "37x53"}, {"eq", "37x53"}, {"ne", "37x53"}, {"gt", "37x53"}, {"ge", "37x53"},
      {"lt", "37x53"}, {"le", "37x53"}, {"cast", "37x53"}, {"fill", "37x53"}, {"dropout_mask", "37x53"},
      {"copy", "37x53,t"},  // from a transposed view: the transposing kernels tile 32 x 32
      {"pack", "37x53x29"},
      {"bias_relu", "3x37x53"},
      // Rows: 37 rows of 53 columns.
      {"sum", "37x53"}, {"max", "37x53"}, {"softmax", "37x53"}, {"log_softmax", "37x53"},
      {"cross_entropy", "37x53"},
      {"gather", "3x37x5,k29"}, {"index_select", "3x37x5,k29"},
      {"batch_norm", "5x37x53"}, {"batch_norm_relu", "5x37x53"},
      {"sgd_step", "37x53,29"}, {"adam_step", "37x53,29"},
      {"ctc_loss", "13x3x37,s5"},
      {"gru_cell", "5x37"}, {"lstm_cell", "5x37"},
      {"gru_sequence", "5x3x37,h29,l2,bi"}, {"lstm_sequence", "5x3x37,h29,l2,bi"},
  };
  return shapes;
}

}  // namespace

std::string ragged_spec(const std::string& key) {
  const auto it = ragged_shapes().find(key.substr(0, key.find('.')));
  if (it != ragged_shapes().end()) return it->second;
  const CaseFamily* family = find_case_family(key);
  return family ? family->example : "";
}

}  // namespace bench
}  // namespace minidl
