// fuzz/harness.h — what each fuzz target does with one input: the readers of files that come from
// outside (IDX files, images, checkpoints, Kaggle-style image CSV files, captcha folders, TrueType
// fonts) fed with arbitrary bytes.
//
// Each function returns the reader's minidl::Error message, or "" when the input was accepted. Refusing
// an input with an Error is the reader doing its job; a crash, a sanitizer report, a hang, a huge
// allocation or any other exception (std::out_of_range from a stray std::stoi, say) is a bug. The
// fuzzers (fuzz/*_fuzzer.cpp, `make fuzz`) call these; so does tests/test_fuzz_regressions.cpp, with every
// input the fuzzers ever broke a reader with (tests/fixtures/fuzz/<target>/), under the normal test run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace minidl::fuzz {

// The bytes as an IDX file, plain or gzip (nn/idx.h read_idx_bytes).
std::string idx_input(const uint8_t* data, size_t size);

// The bytes as an image file (nn/image.h decode_image, at most 2^20 pixels), converted to 3 channels (1
// for inputs of odd size), then resized and laid out as the captcha model's input (image_to_chw, 8x4).
std::string image_input(const uint8_t* data, size_t size);

// The bytes as a checkpoint file, twice: as they are (header, size and checksum checks), then with the
// header's file size and the trailing CRC-32 rewritten to match, so that mutations reach the structure
// and the metadata rather than dying at the checksum. A file that parses is then loaded as its metadata
// says: a captcha model is described, checked, built, loaded (with its Adam state when it has one) and
// run on one blank image when its input has at most 4096 pixels; an MNIST model is loaded into the
// MNIST CNN. A file with an "epoch" key (a resumable save) is first read as --resume reads its position
// (examples/run_state.h resume_position). The message returned is the second pass's.
std::string checkpoint_input(const uint8_t* data, size_t size);

// The bytes as a CSV file of images (nn/image_csv.h read_image_csv, 4 pixels, 10 classes) after the
// first, which picks the options: bit 0 clear, labels required (training), set, optional (prediction);
// bit 1 set, the first row only (--limit 1). What is accepted must hold rows x 4 pixels and, when
// labelled, rows labels 0..9 (otherwise std::logic_error: a bug).
std::string image_csv_input(const uint8_t* data, size_t size);

// A captcha folder (examples/data/captcha_data.h load_captcha_folder, 8x4 input, one decoding thread),
// chosen by the first byte modulo 3; the rest is
//   0: the folder's labels.csv; the folder holds a few fixed files (A1_0.png, B2.jpg, bad.png, notes.txt);
//   1: the same with the charset "AB12" and length 2 given;
//   2: up to 16 file names, one per line, created in an empty folder (names with an image extension
//      get a valid PNG, others one byte), read without labels.csv.
// Accepted folders' labels are then encoded as CTC targets.
std::string captcha_folder_input(const uint8_t* data, size_t size);

// The bytes as a TrueType font: checked and drawn as the captcha generator checks and draws a font
// (examples/data/captcha_gen.h draw_font_glyphs: examples/data/font_file.h's checks, then stb_truetype),
// every printable ASCII character at 24 pixels per em. What is accepted must also pass stbtt_InitFont,
// and the checker's character lookup must give the glyphs stbtt_FindGlyphIndex gives (otherwise
// std::logic_error: a bug).
std::string font_input(const uint8_t* data, size_t size);

}  // namespace minidl::fuzz
