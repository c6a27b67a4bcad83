// nn/init.h — in-place parameter initialisers, drawing from the global seeded RNG (core/random.h), so a
// model built after manual_seed(s) is the same on every run and every device.
//
// Fans of a weight: fan_in = size(1) * receptive field, fan_out = size(0) * receptive field, where the
// receptive field is the product of dims 2.. (KH*KW for a conv weight [O, C, KH, KW], 1 for Linear).
//
//   uniform_(t, a, b)           U(a, b)
//   normal_(t, mean, std)       N(mean, std^2)
//   kaiming_uniform_(t, a)      U(-bound, bound), bound = gain * sqrt(3 / fan), gain = sqrt(2 / (1 + a^2))
//   kaiming_normal_(t, a)       N(0, std^2),      std = gain / sqrt(fan)
//   xavier_uniform_(t, gain)    U(-bound, bound), bound = gain * sqrt(6 / (fan_in + fan_out))
//   xavier_normal_(t, gain)     N(0, std^2),      std = gain * sqrt(2 / (fan_in + fan_out))
// (kaiming: gain for leaky_relu with negative slope a; a = 0 is ReLU; fan = fan_in unless fan_out is asked.)
//
// Linear and Conv2d use PyTorch's default: kaiming_uniform_(w, sqrt(5)), which is U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)), and the bias drawn from the same range.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace minidl {
namespace init {

enum class FanMode { fan_in, fan_out };

int64_t fan_in(const Tensor& weight);
int64_t fan_out(const Tensor& weight);

void uniform_(const Tensor& t, double a, double b);
void normal_(const Tensor& t, double mean, double std);
void constant_(const Tensor& t, double value);
void zeros_(const Tensor& t);
void ones_(const Tensor& t);
void kaiming_uniform_(const Tensor& t, double a = 0, FanMode mode = FanMode::fan_in);
void kaiming_normal_(const Tensor& t, double a = 0, FanMode mode = FanMode::fan_in);
void xavier_uniform_(const Tensor& t, double gain = 1);
void xavier_normal_(const Tensor& t, double gain = 1);

}  // namespace init
}  // namespace minidl
