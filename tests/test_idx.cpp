// tests/test_idx.cpp — the IDX reader on fixture files written here: plain and gzip, truncated, wrong
// magic, unsupported type, extra bytes, image/label count mismatch, a folder or FIFO in place of a file,
// and whatever follows a gzip stream.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "nn/idx.h"
#include "examples/data/mnist_data.h"

using namespace minidl;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/minidl_test_idx_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

// An IDX file of unsigned bytes with the given dims; data[i] = (i * 7 + 3) % 256.
std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, uint8_t type = 0x08) {
  std::vector<uint8_t> b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  size_t n = 1;
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(d >> shift));
    n *= d;
  }
  for (size_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>((i * 7 + 3) % 256));
  return b;
}

void write_raw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  REQUIRE(gz != nullptr);
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
}

std::vector<uint8_t> read_raw(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  std::vector<uint8_t> out;
  int c;
  while ((c = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  return out;
}

}  // namespace

TEST_CASE("idx: plain and gzip files read the same dims and data", "[idx]") {
  TempDir dir;
  const std::vector<uint8_t> bytes = idx_bytes({3, 4, 5});
  write_raw(dir.file("a.idx"), bytes);
  write_gzip(dir.file("a.idx.gz"), bytes);
  for (const std::string name : {"a.idx", "a.idx.gz"}) {
    INFO(name);
    const IdxArray a = read_idx(dir.file(name));
    CHECK(a.dims == std::vector<int64_t>{3, 4, 5});
    REQUIRE(a.data.size() == 60);
    CHECK(a.data[0] == 3);
    CHECK(a.data[1] == 10);
    CHECK(a.data[59] == (59 * 7 + 3) % 256);
  }
  write_raw(dir.file("labels.idx"), idx_bytes({6}));
  CHECK(read_idx(dir.file("labels.idx")).data == std::vector<uint8_t>{3, 10, 17, 24, 31, 38});
}

TEST_CASE("idx: truncated files say how many bytes were expected and found", "[idx]") {
  TempDir dir;
  std::vector<uint8_t> bytes = idx_bytes({2, 3, 3});  // 16 header bytes + 18 data bytes
  bytes.resize(bytes.size() - 5);
  write_raw(dir.file("t.idx"), bytes);
  write_gzip(dir.file("t.idx.gz"), bytes);
  CHECK_THROWS_WITH(read_idx(dir.file("t.idx")),
                    Catch::Contains("t.idx") && Catch::Contains("truncated") && Catch::Contains("needs 18 data bytes") &&
                        Catch::Contains("has 13"));
  CHECK_THROWS_WITH(read_idx(dir.file("t.idx.gz")),
                    Catch::Contains("t.idx.gz") && Catch::Contains("(gzip)") && Catch::Contains("truncated") &&
                        Catch::Contains("has 13 (decompressed)"));

  // A gzip stream cut in the middle: the reader must report a truncation, not crash or hang.
  write_gzip(dir.file("big.idx.gz"), idx_bytes({100, 28, 28}));
  std::vector<uint8_t> gz = read_raw(dir.file("big.idx.gz"));
  gz.resize(gz.size() / 2);
  write_raw(dir.file("cut.idx.gz"), gz);
  CHECK_THROWS_WITH(read_idx(dir.file("cut.idx.gz")), Catch::Contains("cut.idx.gz") && Catch::Contains("truncated"));

  // Cut inside the header.
  write_raw(dir.file("h.idx"), {0, 0, 8, 3, 0, 0});
  CHECK_THROWS_WITH(read_idx(dir.file("h.idx")), Catch::Contains("truncated in the header"));
  write_raw(dir.file("empty.idx"), {});
  CHECK_THROWS_WITH(read_idx(dir.file("empty.idx")), Catch::Contains("truncated") && Catch::Contains("has 0 bytes"));
}

TEST_CASE("idx: wrong magic, unsupported type, extra bytes, missing file", "[idx]") {
  TempDir dir;
  write_raw(dir.file("png.idx"), {0x89, 'P', 'N', 'G', 0, 0, 0, 0});
  CHECK_THROWS_WITH(read_idx(dir.file("png.idx")),
                    Catch::Contains("png.idx") && Catch::Contains("wrong magic") && Catch::Contains("89 50 4e 47"));
  write_raw(dir.file("float.idx"), idx_bytes({2}, 0x0D));
  CHECK_THROWS_WITH(read_idx(dir.file("float.idx")),
                    Catch::Contains("unsupported element type 0x0d (float32)") && Catch::Contains("only unsigned byte"));
  std::vector<uint8_t> extra = idx_bytes({4});
  extra.push_back(1);
  extra.push_back(2);
  write_raw(dir.file("extra.idx"), extra);
  CHECK_THROWS_WITH(read_idx(dir.file("extra.idx")), Catch::Contains("2 unexpected bytes after the 4 data bytes"));
  CHECK_THROWS_WITH(read_idx(dir.file("nope.idx")), Catch::Contains("cannot open") && Catch::Contains("nope.idx"));
  // A header promising ~8e28 bytes is rejected before any allocation (the product is not computed past
  // the cap, so it cannot overflow).
  write_raw(dir.file("absurd.idx"), {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  CHECK_THROWS_WITH(read_idx(dir.file("absurd.idx")),
                    "idx: '" + dir.file("absurd.idx") + "': the header's sizes 4294967295x4294967295x4294967295 make "
                    "more than 1073741824 bytes (1 GiB), the most this reader accepts; a corrupt header?");
}

// Issue 23, item 12: a corrupt dimension-count byte made a 1,115-character message listing 227 sizes read
// from the pixels.
TEST_CASE("idx: a corrupt dimension byte is reported in one short line naming the file and the byte", "[idx]") {
  TempDir dir;
  std::vector<uint8_t> bytes = idx_bytes({100, 28, 28});
  bytes[3] = 0xe3;  // 3 -> 227 dimensions
  write_raw(dir.file("dims.idx"), bytes);
  write_gzip(dir.file("dims.idx.gz"), bytes);
  const std::string expected = "idx: '" + dir.file("dims.idx") +
                               "': header byte 3 (the number of dimensions) is 227; this reader accepts 1 to 8 "
                               "(MNIST: 3 for images, 1 for labels); a corrupt byte?";
  CHECK_THROWS_WITH(read_idx(dir.file("dims.idx")), expected);
  CHECK_THROWS_WITH(read_idx(dir.file("dims.idx.gz")),
                    "idx: '" + dir.file("dims.idx.gz") + "' (gzip): header byte 3 (the number of dimensions) is 227; "
                    "this reader accepts 1 to 8 (MNIST: 3 for images, 1 for labels); a corrupt byte?");
  CHECK(expected.size() < 200);

  // A corrupt size byte: the product is over the cap; the message lists the three sizes only.
  bytes = idx_bytes({100, 28, 28});
  bytes[12] = 0x1c;  // the last size 28 -> 0x1c00001c
  write_raw(dir.file("size.idx"), bytes);
  CHECK_THROWS_WITH(read_idx(dir.file("size.idx")),
                    "idx: '" + dir.file("size.idx") + "': the header's sizes 100x28x469762076 make more than "
                    "1073741824 bytes (1 GiB), the most this reader accepts; a corrupt header?");
}

// Issue 23, item 11: a header over the cap is refused before any data is read (the old cap, 1 TB, let a
// 2 GB claim through to the read).
TEST_CASE("idx: sizes over kMaxIdxDataBytes are refused from the header", "[idx]") {
  TempDir dir;
  std::vector<uint8_t> bytes = {0, 0, 8, 3, 0, 0, 0x07, 0xd0, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 1};  // 2000 x 1000000 x 1
  bytes.resize(bytes.size() + 10, 0);
  write_raw(dir.file("big.idx"), bytes);
  CHECK_THROWS_WITH(read_idx(dir.file("big.idx")),
                    "idx: '" + dir.file("big.idx") + "': the header's sizes 2000x1000000x1 make more than 1073741824 "
                    "bytes (1 GiB), the most this reader accepts; a corrupt header?");
  // A zero size makes an empty array, whatever the others.
  write_raw(dir.file("zero.idx"), {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 5});
  CHECK(read_idx(dir.file("zero.idx")).data.empty());
  // The caller's header check runs before the data is read: here it refuses a file whose data is missing.
  write_raw(dir.file("short.idx"), idx_bytes({1, 2, 3}));
  std::vector<uint8_t> cut = idx_bytes({50, 2, 3});
  cut.resize(20);
  write_raw(dir.file("cut.idx"), cut);
  CHECK_THROWS_WITH(read_idx(dir.file("cut.idx"),
                             [](const std::vector<int64_t>& dims) {
                               if (dims[0] != 7) throw Error("want 7 rows, the header says " + std::to_string(dims[0]));
                             }),
                    "want 7 rows, the header says 50");
}

namespace {

// Linux keeps the peak resident memory of a process (VmHWM in /proc/self/status); writing 5 to
// /proc/self/clear_refs resets it to the current use. Returns false when that is not possible.
bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}
// The peak resident memory since the last reset, in bytes; -1 when unknown.
int64_t peak_rss() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

}  // namespace

// Issue 23, item 11: a small gzip file whose header claims more images than the labels file holds grew
// to gigabytes before its "count mismatch" error: the images were read, then counted.
TEST_CASE("mnist: an images header that does not match the labels is refused before its data is read", "[idx]") {
  TempDir dir;
  write_raw(dir.file("t10k-labels-idx1-ubyte"), {0, 0, 8, 1, 0, 0, 0, 10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  write_raw(dir.file("train-images-idx3-ubyte"), idx_bytes({10, 28, 28}));
  write_raw(dir.file("train-labels-idx1-ubyte"), idx_bytes({10}));

  // The header claims 60000 images, the file holds 10: the count is refused from the header (the reader
  // does not reach the data, which would be a truncation).
  std::vector<uint8_t> claims = idx_bytes({10, 28, 28});
  claims[7] = 0x60, claims[6] = 0xea;  // 10 -> 60000 images
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), claims);
  CHECK_THROWS_WITH(load_mnist(dir.path, /*train=*/false),
                    "idx: '" + dir.file("t10k-images-idx3-ubyte.gz") + "' has 60000 images but '" +
                        dir.file("t10k-labels-idx1-ubyte") + "' has 10 labels");

  // A gzip bomb: 46 KB holding 60000 all-zero images (47 MB). Refused before a byte of it is inflated,
  // so the process's peak memory does not grow by anything near 47 MB.
  {
    gzFile gz = gzopen(dir.file("t10k-images-idx3-ubyte.gz").c_str(), "wb");
    REQUIRE(gz != nullptr);
    const uint8_t header[16] = {0, 0, 8, 3, 0, 0, 0xea, 0x60, 0, 0, 0, 28, 0, 0, 0, 28};
    gzwrite(gz, header, sizeof header);
    const std::vector<uint8_t> zeros(28 * 28 * 1000, 0);
    for (int i = 0; i < 60; ++i) gzwrite(gz, zeros.data(), static_cast<unsigned>(zeros.size()));
    gzclose(gz);
  }
  const bool measured = reset_peak_rss();
  const int64_t before = peak_rss();
  CHECK_THROWS_WITH(load_mnist(dir.path, /*train=*/false), Catch::Contains("has 60000 images but"));
  if (measured && before > 0) {
    const int64_t grown = peak_rss() - before;
    INFO("peak memory grew by " << grown << " bytes");
    CHECK(grown < 16 * 1024 * 1024);
  } else {
    WARN("the peak-memory part is skipped: /proc/self/clear_refs cannot reset it here");
  }

  // A matching header is read as before.
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), idx_bytes({10, 28, 28}));
  CHECK(load_mnist(dir.path, /*train=*/false).size() == 10);
}

TEST_CASE("idx: image and label counts must match", "[idx]") {
  TempDir dir;
  write_raw(dir.file("images.idx"), idx_bytes({5, 2, 2}));
  write_raw(dir.file("labels.idx"), idx_bytes({4}));
  const IdxArray images = read_idx(dir.file("images.idx"));
  const IdxArray labels = read_idx(dir.file("labels.idx"));
  CHECK_THROWS_WITH(check_idx_counts_match(images, "images.idx", labels, "labels.idx"),
                    Catch::Contains("'images.idx' has 5 images but 'labels.idx' has 4 labels"));
  write_raw(dir.file("labels5.idx"), idx_bytes({5}));
  CHECK_NOTHROW(check_idx_counts_match(images, "images.idx", read_idx(dir.file("labels5.idx")), "labels5.idx"));
}

TEST_CASE("idx: a folder or a FIFO in place of the file is named as such, not read", "[idx]") {
  TempDir dir;
  REQUIRE(::mkdir(dir.file("folder.idx").c_str(), 0755) == 0);
  CHECK_THROWS_WITH(read_idx(dir.file("folder.idx")), Catch::Contains("folder.idx' is a directory, not a file"));

  // A FIFO: reading it would block. A writer thread stands by with a valid IDX file, so a reader that
  // opens the FIFO gets data rather than hanging the test; the reader must refuse before opening.
  const std::string fifo = dir.file("pipe.idx");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    const std::vector<uint8_t> bytes = idx_bytes({4});
    const ssize_t ignored = ::write(fd, bytes.data(), bytes.size());
    (void)ignored;
    ::close(fd);
  });
  CHECK_THROWS_WITH(read_idx(fifo), Catch::Contains("pipe.idx' is a FIFO (named pipe), not a file"));
  const int unblock = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // lets the writer's open return
  writer.join();
  ::close(unblock);

  // A missing file says why, in the system's words.
  CHECK_THROWS_WITH(read_idx(dir.file("nope.idx")), Catch::Contains("cannot open") &&
                                                        Catch::Contains("No such file or directory"));
}

TEST_CASE("mnist: a folder in place of one of the four files is reported as a folder, not as missing", "[idx]") {
  TempDir dir;
  write_raw(dir.file("t10k-images-idx3-ubyte"), idx_bytes({2, 28, 28}));
  REQUIRE(::mkdir(dir.file("t10k-labels-idx1-ubyte").c_str(), 0755) == 0);
  write_raw(dir.file("train-images-idx3-ubyte"), idx_bytes({2, 28, 28}));
  write_raw(dir.file("train-labels-idx1-ubyte"), idx_bytes({2}));
  CHECK_THROWS_WITH(load_mnist(find_mnist_dir(dir.path), /*train=*/false),
                    Catch::Contains("t10k-labels-idx1-ubyte' is a directory, not a file"));
}

TEST_CASE("idx: after a gzip stream only another gzip member may follow", "[idx]") {
  TempDir dir;
  const std::vector<uint8_t> bytes = idx_bytes({3, 2});
  write_gzip(dir.file("a.idx.gz"), bytes);
  const std::vector<uint8_t> gz = read_raw(dir.file("a.idx.gz"));

  std::vector<uint8_t> junk = gz;
  for (char c : std::string("JUNKJUNK")) junk.push_back(static_cast<uint8_t>(c));
  write_raw(dir.file("junk.idx.gz"), junk);
  CHECK_THROWS_WITH(read_idx(dir.file("junk.idx.gz")),
                    Catch::Contains("junk.idx.gz") && Catch::Contains("8 bytes after the end of the gzip stream"));
  std::vector<uint8_t> one = gz;
  one.push_back(0);
  write_raw(dir.file("one.idx.gz"), one);
  CHECK_THROWS_WITH(read_idx(dir.file("one.idx.gz")), Catch::Contains("1 bytes after the end of the gzip stream"));

  // Cut inside the 8-byte trailer: every data byte is there, but the stream is not whole.
  write_raw(dir.file("cut.idx.gz"), std::vector<uint8_t>(gz.begin(), gz.end() - 3));
  CHECK_THROWS_WITH(read_idx(dir.file("cut.idx.gz")), Catch::Contains("ends before its trailer"));

  // Two members back to back are one stream (gzip's own rule): the data is their concatenation.
  write_gzip(dir.file("head.gz"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + 7));
  write_gzip(dir.file("tail.gz"), std::vector<uint8_t>(bytes.begin() + 7, bytes.end()));
  std::vector<uint8_t> two = read_raw(dir.file("head.gz"));
  const std::vector<uint8_t> tail = read_raw(dir.file("tail.gz"));
  two.insert(two.end(), tail.begin(), tail.end());
  write_raw(dir.file("two.idx.gz"), two);
  const IdxArray a = read_idx(dir.file("two.idx.gz"));
  CHECK(a.dims == std::vector<int64_t>{3, 2});
  CHECK(a.data == std::vector<uint8_t>(bytes.begin() + 12, bytes.end()));

  // The same reader over memory.
  CHECK(read_idx_bytes(gz.data(), gz.size(), "mem").data == a.data);
  CHECK_THROWS_WITH(read_idx_bytes(junk.data(), junk.size(), "mem"), Catch::Contains("idx: 'mem' (gzip)"));
}
