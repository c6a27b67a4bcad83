#include "nn/image_csv.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <string_view>

#include "core/error.h"
#include "core/printable.h"

namespace minidl {

namespace {

// "label,pixel0,pixel1,...,pixel783" (or without "label,"), for messages.
std::string header_form(int64_t pixels, bool labelled) {
  return str_cat(labelled ? "label," : "", "pixel0,pixel1,...,pixel", pixels - 1);
}

std::string both_header_forms(int64_t pixels) {
  return str_cat("'", header_form(pixels, true), "' (a labelled file, like Kaggle's train.csv) or '",
                 header_form(pixels, false), "' (pixels only, like test.csv)");
}

// The name of column `c` (0-based) in the header: "label" or "pixel<k>".
std::string column_name(size_t c, bool labelled) {
  if (labelled && c == 0) return "label";
  return str_cat("pixel", c - (labelled ? 1 : 0));
}

// A field as quoted in a message: at most 24 characters, bytes outside printable ASCII as '?' (a binary
// file read as CSV still gets a one-line message; core/printable.h).
std::string shown(std::string_view field) { return shown_value(field, 24); }

// Cuts `line` at its commas into `fields` (views into `line`).
void split_fields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return;
    }
    fields.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

// A whole number in lo..hi, or an error naming the file, the line and the column. `what` says what the
// values are ("pixels are 0..255"). The message is only built when the field is bad (most files have
// tens of millions of fields).
int parse_field(std::string_view field, int lo, int hi, const std::string& path, int64_t line_no, size_t column,
                bool labelled, const char* what) {
  int value = 0;
  const char* end = field.data() + field.size();
  const auto [stop, ec] = std::from_chars(field.data(), end, value);
  if (!field.empty() && ec == std::errc() && stop == end && value >= lo && value <= hi) return value;

  const std::string at = str_cat(path, ":", line_no, ": column ", column + 1, " (", column_name(column, labelled), "): ");
  if (field.empty()) throw Error(str_cat(at, "the field is empty (", what, ")"));
  const bool whole = stop == end && (ec == std::errc() || ec == std::errc::result_out_of_range);
  if (!whole)
    throw Error(str_cat(at, "'", shown(field), "' is not a whole number (", what, ", written in plain digits)"));
  throw Error(str_cat(at, shown(field), " is outside ", lo, "..", hi, " (", what, ")"));
}

}  // namespace

ImageCsv read_image_csv(const std::string& path, const ImageCsvOptions& options) {
  MINIDL_CHECK(options.pixels > 0 && options.classes > 0 && options.classes <= 1 << 20,
               "read_image_csv: pixels and classes must be positive");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw Error(str_cat(path, ": cannot open: ", std::strerror(errno)));
  MINIDL_CHECK(!S_ISDIR(st.st_mode), path, ": is a folder, not a CSV file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str_cat(path, ": cannot open: ", std::strerror(errno)));

  std::string line;
  int64_t line_no = 0;
  const auto next_line = [&]() -> bool {
    if (!std::getline(in, line)) {
      MINIDL_CHECK(!in.bad(), path, ": read error after line ", line_no, ": ", std::strerror(errno));
      return false;
    }
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };
  const auto where = [&] { return str_cat(path, ":", line_no, ": "); };

  // ---- the header
  if (!next_line()) throw Error(str_cat(path, ":1: the file is empty; expected a header, ", both_header_forms(options.pixels)));
  if (line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // a UTF-8 byte-order mark (spreadsheets)
  std::vector<std::string_view> fields;
  split_fields(line, fields);
  ImageCsv out;
  out.pixels = options.pixels;
  out.labelled = fields[0] == "label";
  const size_t columns = static_cast<size_t>(options.pixels) + (out.labelled ? 1 : 0);
  MINIDL_CHECK(out.labelled || fields[0] == "pixel0", where(), "the header starts with '", shown(fields[0]),
               "'; expected ", both_header_forms(options.pixels));
  MINIDL_CHECK(fields.size() == columns, where(), "the header has ", fields.size(), " columns; expected ", columns,
               ": '", header_form(options.pixels, out.labelled), "'");
  for (size_t c = out.labelled ? 1 : 0; c < columns; ++c)
    MINIDL_CHECK(fields[c] == column_name(c, out.labelled), where(), "column ", c + 1, " of the header is '",
                 shown(fields[c]), "', expected '", column_name(c, out.labelled), "'");
  MINIDL_CHECK(out.labelled || options.labels != CsvLabels::required, where(),
               "the header has no 'label' column: this file holds pixels only (like Kaggle's test.csv), and "
               "training needs labelled rows: '", header_form(options.pixels, true), "' (train.csv)");

  // ---- the rows
  const int max_label = static_cast<int>(options.classes - 1);
  const std::string label_range = str_cat("labels are classes 0..", max_label);
  int64_t blank_line = 0;  // the first blank line seen (only the end of the file may be blank)
  while ((options.limit <= 0 || out.rows < options.limit) && next_line()) {
    if (line.empty()) {
      if (blank_line == 0) blank_line = line_no;
      continue;
    }
    MINIDL_CHECK(blank_line == 0, path, ":", blank_line, ": an empty line, with rows after it (line ", line_no,
                 "); only the end of the file may be blank");
    split_fields(line, fields);
    MINIDL_CHECK(fields.size() == columns, where(), fields.size(), " column(s), but the header has ", columns,
                 out.labelled ? str_cat(" (label and ", options.pixels, " pixels)") : std::string(" (pixels)"));
    size_t c = 0;
    if (out.labelled) {
      out.labels.push_back(parse_field(fields[0], 0, max_label, path, line_no, 0, true, label_range.c_str()));
      c = 1;
    }
    for (; c < columns; ++c)
      out.images.push_back(
          static_cast<uint8_t>(parse_field(fields[c], 0, 255, path, line_no, c, out.labelled, "pixels are 0..255")));
    ++out.rows;
  }
  return out;
}

}  // namespace minidl
