// tests/test_course_docs.cpp — the course (docs/course/) cannot drift from the code:
//   - every ```cpp block is a quote of a marked region of a real source file: it is preceded by
//     `<!-- snippet: PATH#NAME -->` and equals the lines between `// [doc:NAME]` and `// [/doc:NAME]` in PATH
//     (their common indentation removed); the files are compiled by the build, so the quoted code compiles;
//   - every ```text block preceded by `<!-- output: NAME -->` equals what the worked example NAME prints
//     (examples/course/worked_examples.cpp), so the numbers a chapter shows are the code's;
//   - every relative link resolves to a file, and a link to lines (`PATH#L10-L20`) stays inside the file and
//     starts at the definition of each `code` name the link's text gives: the range's first line of code
//     (after blank lines, comments, a `template <...>` line) defines it (`Name(`, `struct Name`, ...), so
//     a range that code above it has pushed down or up fails (the failure says where the definition is now);
//   - the SVG diagrams are well-formed; the README links the chapters in order; every exercise has its parts
//     (README, checker, solution/, stub/ and the student's file).
// The course's files and the exercises' READMEs are checked; docs outside docs/course are not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "examples/course/worked_examples.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = MINIDL_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<fs::path> course_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kRoot / "docs/course"))
    if (e.path().extension() == ".md") out.push_back(e.path());
  for (const auto& e : fs::directory_iterator(kRoot / "exercises"))
    if (e.is_directory() && fs::exists(e.path() / "README.md")) out.push_back(e.path() / "README.md");
  if (fs::exists(kRoot / "exercises/README.md")) out.push_back(kRoot / "exercises/README.md");
  std::sort(out.begin(), out.end());
  return out;
}

std::string rel(const fs::path& p) { return fs::relative(p, kRoot).string(); }

// The fenced blocks of a Markdown file: the line before the fence, the fence's language, the body, the line.
struct Block {
  std::string before;  // the last non-blank line before the opening fence
  std::string language;
  std::string body;
  size_t line = 0;  // 1-based line of the opening fence
};

std::vector<Block> blocks_of(const std::string& text) {
  std::vector<Block> out;
  const std::vector<std::string> lines = lines_of(text);
  std::string last;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("```", 0) == 0) {
      Block b;
      b.before = last;
      b.language = lines[i].substr(3);
      b.line = i + 1;
      size_t j = i + 1;
      for (; j < lines.size() && lines[j].rfind("```", 0) != 0; ++j) b.body += lines[j] + "\n";
      out.push_back(b);
      i = j;
      last.clear();
      continue;
    }
    if (!lines[i].empty()) last = lines[i];
  }
  return out;
}

// The lines between `// [doc:name]` and `// [/doc:name]` in file, their common indentation removed.
std::string marked_region(const fs::path& file, const std::string& name, std::string& error) {
  if (!fs::exists(file)) {
    error = "no file " + rel(file);
    return "";
  }
  const std::vector<std::string> lines = lines_of(read(file));
  const std::string open = "[doc:" + name + "]", close = "[/doc:" + name + "]";
  size_t begin = lines.size(), end = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(open) != std::string::npos) begin = i + 1;
    if (lines[i].find(close) != std::string::npos) end = i;
  }
  if (begin >= lines.size() || end >= lines.size() || end < begin) {
    error = "no region " + open + " ... " + close + " in " + rel(file);
    return "";
  }
  // Preprocessor lines (#pragma) start in column 0 whatever the code's depth: they keep their place and
  // do not count for the indentation.
  auto is_directive = [](const std::string& line) { return !line.empty() && line[0] == '#'; };
  size_t indent = std::string::npos;
  for (size_t i = begin; i < end; ++i)
    if (!lines[i].empty() && !is_directive(lines[i])) indent = std::min(indent, lines[i].find_first_not_of(' '));
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (is_directive(lines[i]))
      out += lines[i] + "\n";
    else
      out += (lines[i].size() > indent ? lines[i].substr(indent) : "") + "\n";
  }
  return out;
}

// A line with no code: blank, or a comment (C++'s `//`, `/* ... */` and its ` * ` lines; CMake's `# `).
bool is_comment_or_blank(const std::string& line) {
  const size_t at = line.find_first_not_of(" \t");
  if (at == std::string::npos) return true;
  const std::string s = line.substr(at);
  for (const char* start : {"//", "/*", "*/", "* ", "# "})
    if (s.rfind(start, 0) == 0) return true;
  return s == "*" || s == "#";
}

// A line that comes before a definition without naming it: `template <...>`.
bool is_preamble(const std::string& line) {
  const size_t at = line.find_first_not_of(" \t");
  return at != std::string::npos && line.compare(at, 8, "template") == 0 && line.back() == '>';
}

// Whether line defines (or declares) symbol: `struct symbol`, `class symbol`, `using symbol`, a CMake
// `function(symbol`, `#define symbol`, or a function `Type symbol(` / `Type Class::symbol(` /
// `Class::symbol(` at the start of a line. A call (`x = symbol(`, `return symbol(`, `obj.symbol(`) is not
// one: what comes before the name must be a type (a word other than return/else/..., or `*`, `&`, `>`).
bool defines(const std::string& line, const std::string& symbol) {
  const std::string name = "(?:[A-Za-z_][A-Za-z0-9_]*::)*" + symbol;  // symbol, maybe qualified
  const std::regex type_like("\\b(?:struct|class|union|enum|namespace|using)\\s+" + symbol + "\\b|\\bfunction\\(\\s*" +
                             symbol + "\\b|#\\s*define\\s+" + symbol + "\\b|^" + name + "\\s*\\(");
  if (std::regex_search(line, type_like)) return true;
  const std::regex function("(?:(?:^|[^A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)|[>*&\\]])\\s+" + name + "\\s*\\(");
  static const std::vector<std::string> not_types = {"return", "else", "throw", "new", "delete", "case", "do"};
  for (auto it = std::sregex_iterator(line.begin(), line.end(), function); it != std::sregex_iterator(); ++it)
    if (std::find(not_types.begin(), not_types.end(), (*it)[1].str()) == not_types.end()) return true;
  return false;
}

// Where symbol is defined in a file (1-based): the first line that defines it with a body (not ending in
// `;`, which a forward declaration does), else the first that declares it, else the first line of code
// (not a comment) that names it, else 0. For the failure message of a stale range.
size_t definition_line(const std::vector<std::string>& lines, const std::string& symbol) {
  auto ends_with_semicolon = [](const std::string& line) {
    const size_t end = line.find_last_not_of(" \t");
    return end != std::string::npos && line[end] == ';';
  };
  for (size_t i = 0; i < lines.size(); ++i)
    if (!is_comment_or_blank(lines[i]) && defines(lines[i], symbol) && !ends_with_semicolon(lines[i])) return i + 1;
  for (size_t i = 0; i < lines.size(); ++i)
    if (!is_comment_or_blank(lines[i]) && defines(lines[i], symbol)) return i + 1;
  const std::regex word("\\b" + symbol + "\\b");
  for (size_t i = 0; i < lines.size(); ++i)
    if (!is_comment_or_blank(lines[i]) && std::regex_search(lines[i], word)) return i + 1;
  return 0;
}

// The name a `code` span of a link's text refers to: its last identifier ("Tensor::is_contiguous()" ->
// "is_contiguous", "minidl kernels" -> "kernels").
std::string symbol_of(const std::string& code) {
  std::string s = code;
  const size_t paren = s.find('(');
  if (paren != std::string::npos) s = s.substr(0, paren);
  static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
  std::string last;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), ident); it != std::sregex_iterator(); ++it) last = it->str();
  return last;
}

}  // namespace

TEST_CASE("course: every C++ block quotes a marked region of a real source file", "[course][docs]") {
  static const std::regex snippet("<!-- snippet: ([^#]+)#([A-Za-z0-9_]+) -->");
  int quoted = 0;
  for (const fs::path& md : course_files()) {
    for (const Block& b : blocks_of(read(md))) {
      if (b.language != "cpp") continue;
      INFO(rel(md) << ":" << b.line);
      std::smatch m;
      const bool marked = std::regex_search(b.before, m, snippet);
      CHECK(marked);  // a ```cpp block needs a <!-- snippet: PATH#NAME --> line before it
      if (!marked) continue;
      std::string error;
      const std::string region = marked_region(kRoot / m[1].str(), m[2].str(), error);
      INFO(error);
      CHECK(error.empty());
      INFO("the block differs from the region " << m[2] << " of " << m[1] << "; it is now:\n" << region);
      CHECK(b.body == region);
      ++quoted;
    }
  }
  CHECK(quoted >= 10);
}

TEST_CASE("course: every quoted output is what its worked example prints", "[course][docs]") {
  static const std::regex output("<!-- output: ([A-Za-z0-9_]+) -->");
  std::map<std::string, int> shown;
  for (const fs::path& md : course_files()) {
    for (const Block& b : blocks_of(read(md))) {
      std::smatch m;
      if (!std::regex_search(b.before, m, output)) continue;
      INFO(rel(md) << ":" << b.line << ": `build/bin/course_example " << m[1] << "` prints");
      const std::string printed = course::run_worked_example(m[1].str());
      INFO(printed);
      CHECK(b.body == printed);
      ++shown[m[1].str()];
    }
  }
  for (const std::string& name : course::worked_example_names()) {
    INFO("the worked example " << name << " is quoted by no chapter");
    CHECK(shown[name] > 0);
  }
}

TEST_CASE("course: links resolve, and line ranges start at the definitions they promise", "[course][docs]") {
  static const std::regex link("\\[([^\\]]*)\\]\\(([^)\\s]+)\\)");
  static const std::regex lines_anchor("#L([0-9]+)(-L([0-9]+))?$");
  static const std::regex code("`([^`]+)`");
  int ranges = 0;
  for (const fs::path& md : course_files()) {
    // The prose only: links inside fenced code blocks and `code spans` are code, not links.
    std::string text;
    bool in_block = false;
    for (const std::string& line : lines_of(read(md))) {
      if (line.rfind("```", 0) == 0) in_block = !in_block;
      if (!in_block) text += line + "\n";
    }
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string label = (*it)[1], target = (*it)[2];
      if (target.rfind("http", 0) == 0 || target.rfind("#", 0) == 0 || target.rfind("mailto:", 0) == 0) continue;
      INFO(rel(md) << ": [" << label << "](" << target << ")");
      const std::string path = target.substr(0, target.find('#'));
      const fs::path file = (md.parent_path() / path).lexically_normal();
      CHECK(fs::exists(file));
      if (!fs::exists(file) || fs::is_directory(file)) continue;
      std::smatch m;
      const std::string anchor = target.find('#') == std::string::npos ? "" : target.substr(target.find('#'));
      if (!std::regex_search(anchor, m, lines_anchor)) continue;
      ++ranges;
      const std::vector<std::string> lines = lines_of(read(file));
      const size_t first = std::stoul(m[1]), last = m[3].matched ? std::stoul(m[3]) : first;
      CHECK(first >= 1);
      CHECK(first <= last);
      CHECK(last <= lines.size());
      if (last > lines.size() || first < 1) continue;
      // The range's first line of code: its comment and template line may come before it.
      size_t code_line = first;
      while (code_line < last && (is_comment_or_blank(lines[code_line - 1]) || is_preamble(lines[code_line - 1])))
        ++code_line;
      for (auto c = std::sregex_iterator(label.begin(), label.end(), code); c != std::sregex_iterator(); ++c) {
        const std::string symbol = symbol_of((*c)[1]);
        if (symbol.empty()) continue;
        INFO("`" << symbol << "` is not defined where lines " << first << "-" << last << " of " << rel(file)
                 << " start (their first line of code, " << code_line
                 << ", should define it); its definition is now at line " << definition_line(lines, symbol));
        CHECK(defines(lines[code_line - 1], symbol));
      }
    }
  }
  CHECK(ranges >= 10);
}

TEST_CASE("course: the SVG diagrams are well-formed XML with an <svg> root", "[course][docs]") {
  int count = 0;
  for (const auto& e : fs::directory_iterator(kRoot / "docs/course/img")) {
    if (e.path().extension() != ".svg") continue;
    ++count;
    INFO(rel(e.path()));
    const std::string text = read(e.path());
    CHECK(text.find("<svg") != std::string::npos);
    // Every element closes, in order: a stack of open tags.
    std::vector<std::string> open;
    bool ok = true;
    for (size_t i = text.find('<'); i != std::string::npos && ok; i = text.find('<', i + 1)) {
      if (text.compare(i, 4, "<!--") == 0) {
        i = text.find("-->", i);
        ok = i != std::string::npos;
        continue;
      }
      if (text.compare(i, 2, "<?") == 0) continue;
      const size_t end = text.find('>', i);
      ok = end != std::string::npos;
      if (!ok) break;
      const std::string tag = text.substr(i + 1, end - i - 1);
      if (tag.empty()) continue;
      if (tag[0] == '/') {
        const std::string name = tag.substr(1, tag.find_first_of(" \t\n") - 1);
        ok = !open.empty() && open.back() == name;
        INFO("closing </" << name << "> does not match <" << (open.empty() ? "" : open.back()) << ">");
        CHECK(ok);
        if (ok) open.pop_back();
      } else if (tag.back() != '/') {
        open.push_back(tag.substr(0, tag.find_first_of(" \t\n")));
      }
    }
    CHECK(ok);
    INFO("unclosed: " << (open.empty() ? "" : open.back()));
    CHECK(open.empty());
    static const std::regex bare_ampersand("&(?!(amp|lt|gt|quot|apos|#[0-9]+);)");
    CHECK(!std::regex_search(text, bare_ampersand));  // a bare & breaks XML: write &amp;
  }
  CHECK(count >= 2);
}

TEST_CASE("course: the README links the chapters in order, and every exercise has its parts", "[course][docs]") {
  std::vector<std::string> chapters;
  for (const auto& e : fs::directory_iterator(kRoot / "docs/course"))
    if (e.path().extension() == ".md" && e.path().filename() != "README.md") chapters.push_back(e.path().filename());
  std::sort(chapters.begin(), chapters.end());
  CHECK(chapters.size() == 11);
  for (const std::string& readme : {std::string("README.md"), std::string("docs/course/README.md")}) {
    const std::string text = read(kRoot / readme);
    size_t at = 0;
    for (const std::string& c : chapters) {
      INFO(readme << " should link " << c << " after the chapters before it");
      const size_t found = text.find(c + ")", at);
      CHECK(found != std::string::npos);
      if (found != std::string::npos) at = found;
    }
  }
  int exercises = 0;
  const std::string course = read(kRoot / "docs/course/README.md");
  const std::string cmake = read(kRoot / "exercises/CMakeLists.txt");
  for (const auto& e : fs::directory_iterator(kRoot / "exercises")) {
    if (!e.is_directory() || e.path().filename() == "common") continue;
    ++exercises;
    INFO(rel(e.path()));
    CHECK(fs::exists(e.path() / "README.md"));
    CHECK(fs::exists(e.path() / "check.cpp"));
    CHECK(fs::is_directory(e.path() / "solution"));
    // The stub as committed (CI's exercise_N_stub_fails builds it, never the student's file) and the
    // student's file, each under the solution's file name.
    CHECK(fs::is_directory(e.path() / "stub"));
    if (fs::is_directory(e.path() / "solution"))
      for (const auto& s : fs::directory_iterator(e.path() / "solution")) {
        INFO(rel(s.path()));
        CHECK(fs::exists(e.path() / "stub" / s.path().filename()));
        CHECK(fs::exists(e.path() / s.path().filename()));
      }
    CHECK(course.find(e.path().filename().string()) != std::string::npos);  // the course's list names it
    // exercises/CMakeLists.txt builds it: add_exercise(N FOLDER FILE ...)
    CHECK(cmake.find(" " + e.path().filename().string() + " ") != std::string::npos);
  }
  // As many folders as add_exercise() calls: none forgotten, none left over.
  int built = 0;
  std::istringstream lines(cmake);
  for (std::string line; std::getline(lines, line);)
    if (line.find_first_not_of(' ') != std::string::npos && line.compare(line.find_first_not_of(' '), 13, "add_exercise(") == 0)
      ++built;
  CHECK(exercises == built);
  CHECK(exercises >= 12);
}
