#include "nn/split.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/philox.h"

namespace minidl {

Split stratified_split(const std::vector<int64_t>& labels, double fraction, uint64_t seed) {
  MINIDL_CHECK(fraction >= 0 && fraction < 1, "stratified_split: the fraction must be in [0, 1), got ", fraction);
  std::map<int64_t, std::vector<int64_t>> by_class;  // class -> its samples, in file order
  for (size_t i = 0; i < labels.size(); ++i) {
    MINIDL_CHECK(labels[i] >= 0, "stratified_split: sample ", i, " has the negative label ", labels[i]);
    by_class[labels[i]].push_back(static_cast<int64_t>(i));
  }
  std::vector<bool> held(labels.size(), false);
  const uint64_t key = seed + 0x5851F42D4C957F2Dull;  // a stream apart from the loaders' shuffles
  for (auto& [label, samples] : by_class) {
    // Fisher-Yates over this class's samples: the random word for position i of class c is
    // Philox(counter = c * 2^32 + i, key); the first round(fraction * n) after the shuffle are held out.
    for (int64_t i = static_cast<int64_t>(samples.size()) - 1; i > 0; --i) {
      const Philox4 r = philox4x32_10((static_cast<uint64_t>(label) << 32) + static_cast<uint64_t>(i), key);
      const uint64_t word = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
      std::swap(samples[i], samples[word % static_cast<uint64_t>(i + 1)]);
    }
    const auto n_held = static_cast<size_t>(std::llround(fraction * static_cast<double>(samples.size())));
    for (size_t k = 0; k < n_held; ++k) held[samples[k]] = true;
  }
  Split split;
  for (size_t i = 0; i < labels.size(); ++i) (held[i] ? split.validation : split.train).push_back(static_cast<int64_t>(i));
  return split;
}

}  // namespace minidl
