// The two envelope readers (engine/src/envelope/readers.hpp): the SIMD reader reads what it can
// read exactly as the portable one does and leaves every other input to it. fuzz_readers holds
// them equal on arbitrary input; these are the boundaries, with the reader each one takes.
#include "envelope/readers.hpp"
#include "support.hpp"

namespace {

using recourse::Envelope;
using recourse::ReaderLimits;

// Whether the SIMD reader takes `json` (always false in a build without it).
bool simd_reads(const std::string& json, const ReaderLimits& limits = {}) {
  Envelope out;
  return recourse::detail::read_envelope_simd(json, limits, out);
}

// `json` read by both readers to the same envelope and warnings; returns the envelope.
Envelope both(const std::string& json, const ReaderLimits& limits = {}) {
  const auto portable = recourse::detail::read_envelope_portable(json, limits);
  REQUIRE(portable.ok());
  Envelope simd;
  if (recourse::detail::read_envelope_simd(json, limits, simd)) {
    CHECK(recourse::to_json(simd) == recourse::to_json(*portable));
    REQUIRE(simd.warnings.size() == portable->warnings.size());
    for (std::size_t i = 0; i < simd.warnings.size(); ++i)
      CHECK(simd.warnings[i].message == portable->warnings[i].message);
  }
  return *portable;
}

std::string nested(std::size_t depth) {  // an unknown key's value, `depth` levels in all
  return R"({"code":"TRANSIENT","x":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') +
         "}";
}

}  // namespace

TEST_CASE("envelope readers: the SIMD reader takes ordinary envelopes", "[envelope][readers]") {
  const std::string json =
      R"({"code":"RATE_LIMITED","message":"slow down","retryable":true,"retryAfterMs":1500,)"
      R"("traceId":"t-9","extra":{"nested":[1,2.5,null,"x"]}})";
  CHECK(simd_reads(json) == recourse::detail::kHaveSimdReader);
  const Envelope e = both(json);
  CHECK(e.code == "RATE_LIMITED");
  CHECK(e.retry_after_ms == 1500);
  CHECK(e.warnings.empty());
}

TEST_CASE("envelope readers: nesting is bounded alike at max_depth", "[envelope][readers]") {
  ReaderLimits limits;
  limits.max_depth = 5;
  CHECK(simd_reads(nested(5), limits) == recourse::detail::kHaveSimdReader);
  CHECK(both(nested(5), limits).code == "TRANSIENT");
  // Five levels whose innermost array is not empty: simdjson refuses them, the portable reader
  // reads them.
  const std::string full = R"({"code":"TRANSIENT","x":[[[[1]]]]})";
  CHECK_FALSE(simd_reads(full, limits));
  CHECK(both(full, limits).code == "TRANSIENT");
  CHECK_FALSE(simd_reads(nested(6), limits));
  const auto deep = recourse::read_envelope(nested(6), limits);
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.message() == "envelope nested deeper than 5 levels");
}

TEST_CASE("envelope readers: what the SIMD reader leaves to the portable one",
          "[envelope][readers]") {
  // A wait with a fraction or an exponent needs its written value; numbers past 64 bits, an
  // input over max_simd_bytes and a top level that is no object go over too.
  CHECK_FALSE(simd_reads(R"({"retryAfterMs":1000.00000000000000001})"));
  CHECK(both(R"({"retryAfterMs":1000.00000000000000001})").retry_after_ms == 1001);
  CHECK(both(R"({"retryAfterMs":1e-400})").retry_after_ms == 1);
  CHECK_FALSE(simd_reads(R"({"retryAfterMs":18446744073709551616})"));
  CHECK(both(R"({"retryAfterMs":18446744073709551616})").retry_after_ms == INT64_MAX);
  CHECK_FALSE(simd_reads(R"({"code":"X","n":1e999})"));
  CHECK(both(R"({"code":"X","n":1e999})").code == "X");
  ReaderLimits small;
  small.max_simd_bytes = 10;
  CHECK_FALSE(simd_reads(R"({"code":"TRANSIENT"})", small));
  CHECK(both(R"({"code":"TRANSIENT"})", small).code == "TRANSIENT");
  CHECK_FALSE(simd_reads("[1]"));
  CHECK_FALSE(recourse::read_envelope("[1]").ok());
  CHECK_FALSE(simd_reads("\xef\xbb\xbf{\"code\":\"X\"}"));
  CHECK(both("\xef\xbb\xbf{\"code\":\"X\"}").code == "X");
}

TEST_CASE("envelope readers: a number where a string belongs is dropped alike",
          "[envelope][readers]") {
  // The SIMD reader keeps no number's text, which only retryAfterMs needs.
  const std::string json = R"({"code":2.5,"field":-1,"traceId":18446744073709551615})";
  CHECK(simd_reads(json) == recourse::detail::kHaveSimdReader);
  const Envelope e = both(json);
  CHECK_FALSE(e.code);
  CHECK_FALSE(e.field);
  CHECK_FALSE(e.trace_id);
  REQUIRE(e.warnings.size() == 3);
  CHECK(e.warnings[0].message == "code expected a string, got a number; read as absent");
}

TEST_CASE("envelope readers: duplicates, escapes and bad values read alike",
          "[envelope][readers]") {
  const Envelope e = both(
      R"({"c\u006fde":"A","code":"B","retryable":"yes","message":"x\u0000y","suggestion":null,)"
      R"("retryAfterMs":-5,"field":""})");
  CHECK_FALSE(e.code);
  CHECK(e.message == std::string("x\0y", 3));
  REQUIRE(e.warnings.size() == 5);
  CHECK(e.warnings[0].kind == "duplicate");
  CHECK(e.warnings[1].message == "retryable expected true or false, got a string; read as absent");
  CHECK(e.warnings[2].kind == "null");
  CHECK(e.warnings[3].message ==
        "retryAfterMs expected a finite number of ms >= 0; read as absent");
  CHECK(e.warnings[4].message == "field is an empty string; read as absent");
}
