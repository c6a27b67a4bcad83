// tests/test_output_paths.cpp — an output never replaces an input (nn/files.h check_outputs_are_not_inputs:
// the same file through names, symbolic links, hard links and `..`; outputs inside an input folder;
// two outputs on one file), and --metrics never truncates or appends to a file that is not a metrics log
// (nn/metrics.h). The programs' use of them: tests/train_reliability_test.sh outputs_not_inputs.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "nn/files.h"
#include "nn/metrics.h"

using namespace minidl;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/minidl_paths_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("output paths: an output that is an input, by any name, is refused naming both flags", "[paths]") {
  TempDir dir;
  write(dir / "m.ckpt", "model");
  write(dir / "test.csv", "pixels");
  ::mkdir((dir / "a").c_str(), 0755);
  REQUIRE(::symlink("m.ckpt", (dir / "link.ckpt").c_str()) == 0);
  REQUIRE(::link((dir / "m.ckpt").c_str(), (dir / "hard.ckpt").c_str()) == 0);
  const std::vector<NamedPath> inputs = {{"--model", dir / "m.ckpt"}, {"--csv", dir / "test.csv"}};

  // The case, word for word.
  CHECK_THROWS_AS(check_outputs_are_not_inputs({{"--out", dir / "m.ckpt"}}, inputs), OutputIsInputError);
  CHECK_THROWS_WITH(check_outputs_are_not_inputs({{"--out", dir / "m.ckpt"}}, inputs),
                    "--out '" + (dir / "m.ckpt") + "' is the same file as --model '" + (dir / "m.ckpt") +
                        "': refusing to overwrite an input");
  CHECK_THROWS_WITH(check_outputs_are_not_inputs({{"--out", dir / "test.csv"}}, inputs),
                    Catch::Contains("is the same file as --csv"));
  // Other names of the same file: a symbolic link, a hard link, a path through '..'.
  for (const std::string& alias : {dir / "link.ckpt", dir / "hard.ckpt", dir / "a/../m.ckpt", dir / "./m.ckpt"})
    CHECK_THROWS_WITH(check_outputs_are_not_inputs({{"--out", alias}}, inputs),
                      Catch::Contains("is the same file as --model"));
  // An input that does not exist has nothing to destroy: its reader reports it.
  CHECK_NOTHROW(check_outputs_are_not_inputs({{"--metrics", dir / "a/../new.jsonl"}}, {{"--model", dir / "nope"}}));
  // Different files, an empty (not given) path, a missing input: accepted.
  CHECK_NOTHROW(check_outputs_are_not_inputs({{"--out", dir / "sub.csv"}, {"--metrics", ""}}, inputs));
  CHECK_NOTHROW(check_outputs_are_not_inputs({{"--out", dir / "m.ckpt"}}, {{"--model", ""}}));
}

TEST_CASE("output paths: nothing is written inside an input folder, at any depth", "[paths]") {
  TempDir dir;
  ::mkdir((dir / "data").c_str(), 0755);
  ::mkdir((dir / "data/sub").c_str(), 0755);
  REQUIRE(::symlink("data", (dir / "data_link").c_str()) == 0);
  const std::vector<NamedPath> inputs = {{"--data", dir / "data"}};
  CHECK_THROWS_WITH(check_outputs_are_not_inputs({{"--save", dir / "data/m.ckpt"}}, inputs),
                    "--save '" + (dir / "data/m.ckpt") + "' is inside the folder --data '" + (dir / "data") +
                        "': refusing to write into an input folder (what is there is read as data)");
  CHECK_THROWS_AS(check_outputs_are_not_inputs({{"--metrics", dir / "data/sub/labels.csv"}}, inputs),
                  OutputIsInputError);
  CHECK_THROWS_AS(check_outputs_are_not_inputs({{"--save", dir / "data_link/m.ckpt"}}, inputs), OutputIsInputError);
  // A link outside the folder that leads into it.
  write(dir / "data/old.ckpt", "x");
  REQUIRE(::symlink("data/old.ckpt", (dir / "out.ckpt").c_str()) == 0);
  CHECK_THROWS_AS(check_outputs_are_not_inputs({{"--save", dir / "out.ckpt"}}, inputs), OutputIsInputError);
  // Beside the folder is fine.
  CHECK_NOTHROW(check_outputs_are_not_inputs({{"--save", dir / "m.ckpt"}, {"--metrics", dir / "data.jsonl"}}, inputs));
}

TEST_CASE("output paths: two outputs on one file are refused", "[paths]") {
  TempDir dir;
  CHECK_THROWS_WITH(check_outputs_are_not_inputs({{"--save", dir / "m.ckpt"}, {"--metrics", dir / "./m.ckpt"}}, {}),
                    "--metrics '" + (dir / "./m.ckpt") + "' is the same file as --save '" + (dir / "m.ckpt") +
                        "': give each output its own file");
  CHECK_NOTHROW(check_outputs_are_not_inputs({{"--save", dir / "m.ckpt"}, {"--save-best", dir / "best.ckpt"}}, {}));
}

TEST_CASE("metrics: a file that is not a metrics log is refused, never truncated or appended to", "[paths]") {
  TempDir dir;
  const std::string checkpoint = std::string("MINIDLCK\x01\0\0\0", 12) + "binary\n\xff\xfe";
  write(dir / "m.ckpt", checkpoint);
  write(dir / "train.csv", "label,pixel0\n1,0\n");
  write(dir / "log.jsonl", "{\"epoch\":1}\n{\"epoch\":2}\n");
  write(dir / "empty.jsonl", "");
  for (const char* name : {"m.ckpt", "train.csv"}) {
    CHECK_THROWS_WITH(check_metrics_log(dir / name, "--metrics"),
                      "--metrics '" + (dir / name) + "' holds something other than a metrics log (line 1 is not "
                      "a JSON object): refusing to replace or append to it; give another file name");
    CHECK_THROWS_WITH(MetricsWriter(dir / name, /*append=*/false, "--metrics"),
                      Catch::Contains("other than a metrics log"));
    CHECK_THROWS(MetricsWriter(dir / name, /*append=*/true, "--metrics"));
  }
  CHECK(read(dir / "m.ckpt") == checkpoint);  // untouched
  write(dir / "bad_line.jsonl", "{\"epoch\":1}\n[1,2]\n");
  CHECK_THROWS_WITH(check_metrics_log(dir / "bad_line.jsonl", "--json"), Catch::Contains("line 2 is not a JSON object"));
  ::mkdir((dir / "folder").c_str(), 0755);
  CHECK_THROWS_WITH(check_metrics_log(dir / "folder", "--metrics"), Catch::Contains("is a directory"));
  // Nothing there, an empty file, a metrics log, a stream: accepted.
  CHECK_NOTHROW(check_metrics_log(dir / "new.jsonl", "--metrics"));
  CHECK_NOTHROW(check_metrics_log(dir / "empty.jsonl", "--metrics"));
  CHECK_NOTHROW(check_metrics_log(dir / "log.jsonl", "--metrics"));
  CHECK_NOTHROW(check_metrics_log("/dev/null", "--metrics"));
  // A fresh run replaces a metrics log; a resumed one appends to it.
  {
    MetricsWriter resumed(dir / "log.jsonl", /*append=*/true, "--metrics");
    resumed.write({{"epoch", 3}});
  }
  CHECK(read(dir / "log.jsonl") == "{\"epoch\":1}\n{\"epoch\":2}\n{\"epoch\":3}\n");
  {
    MetricsWriter fresh(dir / "log.jsonl", /*append=*/false, "--metrics");
    fresh.write({{"epoch", 1}});
  }
  CHECK(read(dir / "log.jsonl") == "{\"epoch\":1}\n");
}
