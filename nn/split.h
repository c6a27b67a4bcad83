// nn/split.h — holding part of a labelled data set out for validation.
//
// Stratified: each class gives the same fraction of its samples to the validation part (rounded per
// class: round(fraction * n_c) of its n_c samples), so both parts keep the class proportions of the
// whole, however small the data. Which samples of a class are held out is decided by a Fisher-Yates
// shuffle of that class's samples driven by Philox (core/philox.h) keyed by `seed`: the split is a pure
// function of (labels, fraction, seed), the same on every machine and in every process, independent of
// the global random stream.
#pragma once
#include <cstdint>
#include <vector>

namespace minidl {

struct Split {
  std::vector<int64_t> train, validation;  // sample indices, each in increasing order; together all of them
};

// labels: the class of each sample (any non-negative integers). 0 <= fraction < 1.
Split stratified_split(const std::vector<int64_t>& labels, double fraction, uint64_t seed);

}  // namespace minidl
