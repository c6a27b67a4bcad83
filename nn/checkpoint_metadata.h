// nn/checkpoint_metadata.h — reading a checkpoint's metadata values strictly.
//
// Metadata is a string->string map (nn/checkpoint_format.h) and a file may be corrupt or crafted, so a
// number is read only when the whole value is the number, in decimal (an optional '-', digits; no spaces,
// no '+', nothing after), inside [min, max]. Errors name the file and the key: "checkpoint 'a.ckpt':
// metadata gru_hidden = '64abc' is not a whole number", "... gru_layers = 100000 is outside 1..16",
// "... has no 'charset' in its metadata".
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace minidl {

std::optional<int64_t> parse_whole_number(const std::string& text);
const std::string& metadata_text(const std::map<std::string, std::string>& metadata, const std::string& key,
                                 const std::string& path);
int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& key, int64_t min,
                     int64_t max, const std::string& path);
// A finite decimal number ("0.25", "1e-3"), inside [min, max].
double metadata_real(const std::map<std::string, std::string>& metadata, const std::string& key, double min,
                     double max, const std::string& path);

}  // namespace minidl
