// tests/test_captcha_feedback.cpp — the hint `captcha train` prints when validation stays at 0%
// (examples/captcha/plateau_hint.h): once, after 3 epochs in a row at 0%, not after fewer, not again.
#include <catch2/catch.hpp>
#include <string>

#include "examples/captcha/plateau_hint.h"

TEST_CASE("captcha plateau hint: once, after 3 epochs in a row with no captcha read right", "[captcha]") {
  captcha::PlateauHint hint;
  CHECK(hint.after_epoch(0).empty());
  CHECK(hint.after_epoch(0).empty());
  CHECK(hint.after_epoch(0.01).empty());  // a captcha read right: the count starts again
  CHECK(hint.after_epoch(0).empty());
  CHECK(hint.after_epoch(0).empty());
  const std::string text = hint.after_epoch(0);
  CHECK_THAT(text, Catch::Contains("3 epochs") && Catch::Contains("blank plateau") && Catch::Contains("--lr") &&
                       Catch::Contains("labels") && Catch::Contains("docs/captcha.md"));
  CHECK(hint.after_epoch(0).empty());  // said once
}
