// UTF-8 (source/utf8.hpp, RFC 3629 section 3): the one decoder behind the adapters' repair of
// header and body text and the model-text cleaner, and what each makes of invalid sequences.
#include "source/utf8.hpp"

#include "support.hpp"

namespace {

const std::string kFffd = "\xef\xbf\xbd";

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("utf8: decoding one sequence", "[utf8]") {
  std::uint32_t cp = 0;
  CHECK(recourse::detail::decode_utf8("A", 0, cp) == 1);
  CHECK(cp == 0x41);
  CHECK(recourse::detail::decode_utf8("\xc3\xa9", 0, cp) == 2);
  CHECK(cp == 0xe9);
  CHECK(recourse::detail::decode_utf8("x\xe2\x82\xac", 1, cp) == 3);
  CHECK(cp == 0x20ac);
  CHECK(recourse::detail::decode_utf8("\xf4\x8f\xbf\xbf", 0, cp) == 4);
  CHECK(cp == 0x10ffff);
  for (const char* bad :
       {"\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xf0\x8f\xbf\xbf",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe2\x82", "\xc3\x41", "\xff"})
    CHECK(recourse::detail::decode_utf8(bad, 0, cp) == 0);
}

TEST_CASE("utf8: invalid bytes become U+FFFD one byte at a time", "[utf8]") {
  using recourse::detail::valid_utf8;
  const std::string valid = "a \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";
  CHECK(valid_utf8(valid) == valid);
  CHECK(valid_utf8("\xc0\xaf") == repeat(kFffd, 2));          // overlong '/'
  CHECK(valid_utf8("\xed\xa0\x80") == repeat(kFffd, 3));      // a surrogate
  CHECK(valid_utf8("\xf4\x90\x80\x80") == repeat(kFffd, 4));  // beyond U+10FFFF
  CHECK(valid_utf8("x\xe2\x82") == "x" + repeat(kFffd, 2));   // truncated
  CHECK(valid_utf8("\xc3\x41") == kFffd + "A");               // a lead byte, then ASCII
}

TEST_CASE("utf8: the adapters and the model text read the same sequences as invalid", "[utf8]") {
  // The transport error keeps the text, repaired; the model text drops what is invalid.
  const std::string text = "fail \xed\xa0\x80 \xe2\x82\xac \xc0\xaf end";
  const auto r = recourse::from_transport_error(text);
  REQUIRE(r->envelope.message);
  CHECK(*r->envelope.message ==
        "transport error: fail " + repeat(kFffd, 3) + " \xe2\x82\xac " + repeat(kFffd, 2) + " end");
  recourse::Envelope e;
  e.message = text;
  const auto m = recourse::model_text(e);
  CHECK(m.text == "fail \xe2\x82\xac end");
  CHECK(m.stripped);
}

TEST_CASE("utf8: a text is valid when every sequence in it is", "[utf8]") {
  using recourse::detail::is_valid_utf8;
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("a \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  for (const char* bad : {"\x80", "a\xc0\xaf", "\xed\xa0\x80z", "\xf4\x90\x80\x80", "x\xe2\x82",
                          "\xc3\x41", "ok\xff"})
    CHECK_FALSE(is_valid_utf8(bad));
}
