// core/did_you_mean.h — the "(did you mean 'matmul'?)" of error messages about a misspelled name: the
// candidate nearest in edit distance, when it is near enough to be a typo. `minidl kernels --op`,
// `--kernel OP=NAME` and MINIDL_KERNELS use it (tools/kernel_table.cpp, core/dispatch.cpp).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace minidl {

// Levenshtein distance: the fewest single-character insertions, deletions and substitutions that turn a
// into b. One row of the dynamic-programming table at a time.
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean 'matmul'?)" for the candidate nearest to `word`, if it is at most 2 edits away (the
// first of equally near ones); "" otherwise, and for a word that is itself a candidate.
template <class Range>
std::string did_you_mean(const std::string& word, const Range& candidates) {
  std::string closest;
  size_t best = 3;  // suggest only near misses
  for (const auto& candidate : candidates) {
    const std::string name(candidate);
    const size_t d = edit_distance(word, name);
    if (d == 0) return "";
    if (d < best) best = d, closest = name;
  }
  return closest.empty() ? "" : " (did you mean '" + closest + "'?)";
}

}  // namespace minidl
