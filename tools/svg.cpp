// tools/svg.cpp — the helpers of tools/svg.h.
#include "tools/svg.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace minidl {
namespace svg {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

const char* colour(size_t i) {
  static const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};
  return colours[i % 12];
}

std::string open(double width, double height) {
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"monospace\" font-size=\"11\">\n";
  s << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"white\"/>\n";
  return s.str();
}

std::string close() { return "</svg>\n"; }

// ---------------------------------------------------------------- ticks
std::string Ticks::label(double v) const {
  // The step is d x 10^k with d in {1, 2, 5}: -k decimals show every tick exactly.
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return buf;
}

namespace {
// The smallest step of 1, 2 or 5 x 10^k that is at least `raw`.
double step_at_least(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw * (1 - 1e-12)) return m * magnitude;
  return 10 * magnitude;
}
}  // namespace

Ticks nice_ticks(double lo, double hi, int max_count, bool integers) {
  MINIDL_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi && max_count >= 2,
               "nice_ticks: needs finite lo <= hi and at least 2 ticks");
  if (hi == lo) {
    const double pad = integers ? 1.0 : (lo == 0 ? 1.0 : std::fabs(lo) * 0.1);
    lo -= pad;
    hi += pad;
  }
  double step = step_at_least((hi - lo) / (max_count - 1));
  if (integers) step = std::max(step, 1.0);
  Ticks t;
  for (;;) {  // widening lo and hi to the step can add a tick: then take the next step
    t.lo = std::floor(lo / step + 1e-9) * step;
    t.hi = std::ceil(hi / step - 1e-9) * step;
    if (std::llround((t.hi - t.lo) / step) + 1 <= max_count) break;
    step = step_at_least(step * 1.5);
  }
  t.step = step;
  const long long n = std::llround((t.hi - t.lo) / step);
  for (long long i = 0; i <= n; ++i) t.values.push_back(t.lo + static_cast<double>(i) * step);
  return t;
}

// ---------------------------------------------------------------- well-formedness
std::string problems(const std::string& text) {
  std::vector<std::string> open_tags;
  bool seen_root = false, root_closed = false;
  size_t pos = 0;
  for (;;) {
    const size_t lt = text.find('<', pos);
    // Text between tags: none outside the root but white space; entities only the four we write.
    const std::string between = text.substr(pos, lt == std::string::npos ? std::string::npos : lt - pos);
    if (open_tags.empty() && between.find_first_not_of(" \t\r\n") != std::string::npos)
      return "text outside the <svg> root: '" + between.substr(0, 40) + "'";
    for (size_t amp = between.find('&'); amp != std::string::npos; amp = between.find('&', amp + 1)) {
      const std::string entity = between.substr(amp, 6);
      if (entity.rfind("&amp;", 0) != 0 && entity.rfind("&lt;", 0) != 0 && entity.rfind("&gt;", 0) != 0 &&
          entity.rfind("&quot;", 0) != 0)
        return "a bare '&' in text";
    }
    if (lt == std::string::npos) break;
    const size_t gt = text.find('>', lt);
    if (gt == std::string::npos) return "a '<' without '>'";
    const std::string tag = text.substr(lt + 1, gt - lt - 1);
    pos = gt + 1;
    if (tag.empty()) return "an empty tag";
    if (tag.find('<') != std::string::npos) return "a '<' inside a tag";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open_tags.empty() || open_tags.back() != name) return "</" + name + "> closes nothing open";
      open_tags.pop_back();
      if (open_tags.empty()) root_closed = true;
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \t\r\n/"));
    if (name.empty()) return "a tag without a name";
    // Attributes: name="value", the value without '<' or '"' (escaped) and with entities only.
    const bool self_closing = tag.back() == '/';
    const std::string attributes = tag.substr(name.size(), tag.size() - name.size() - (self_closing ? 1 : 0));
    size_t a = 0;
    while ((a = attributes.find_first_not_of(" \t\r\n", a)) != std::string::npos) {
      const size_t eq = attributes.find('=', a);
      if (eq == std::string::npos || eq + 1 >= attributes.size() || attributes[eq + 1] != '"')
        return "<" + name + ">: an attribute without a quoted value";
      const size_t end = attributes.find('"', eq + 2);
      if (end == std::string::npos) return "<" + name + ">: an unterminated attribute value";
      const std::string value = attributes.substr(eq + 2, end - eq - 2);
      for (size_t amp = value.find('&'); amp != std::string::npos; amp = value.find('&', amp + 1))
        if (value.find(';', amp) == std::string::npos) return "<" + name + ">: a bare '&' in an attribute";
      a = end + 1;
    }
    if (open_tags.empty()) {
      if (seen_root || root_closed || name != "svg") return "content outside the <svg> root: <" + name + ">";
      seen_root = true;
    }
    if (!self_closing) open_tags.push_back(name);
  }
  if (!seen_root) return "no <svg> root";
  if (!open_tags.empty()) return "<" + open_tags.back() + "> is never closed";
  return "";
}

void write_file(const std::string& path, const std::string& text, const std::string& what) {
  std::ofstream out(path, std::ios::binary);
  MINIDL_CHECK(out.good(), what, ": cannot write '", path, "': ", std::strerror(errno));
  out << text;
  out.close();
  MINIDL_CHECK(out.good(), what, ": cannot write '", path, "': ", std::strerror(errno));
}

}  // namespace svg
}  // namespace minidl
