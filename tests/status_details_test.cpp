// gRPC's grpc-status-details-bin trailer (adapters/protobuf.hpp): the bounded protobuf reader of
// google.rpc.Status and the AIP-193 details, against byte vectors of our own encoding the
// messages of grpc-go's status tests (status/status_test.go: TestStatus_ErrorDetails,
// TestStatus_ErrorDetails_Fail, TestFromToProto) and grpc-java's StatusProtoTest (STATUS_PROTO,
// INVALID_STATUS_PROTO), then the AIP-193 messages, read the same as their JSON form; and the
// limits and malformed inputs, which are ignored with a warning.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "adapters/protobuf.hpp"
#include "base64.hpp"
#include "recourse/adapters.hpp"

namespace {

using recourse::Adapted;
using recourse::AdapterOptions;
using recourse::Result;
using recourse::detail::adapt::decode_base64;
using recourse::detail::adapt::read_rpc_status;
using recourse::detail::adapt::read_status_details_bin;
using test::base64;

// A tiny protobuf encoder for the vectors built here (the grpc-go and grpc-java ones are written
// out byte by byte below): varint fields and length-delimited fields.
std::string varint(std::uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string vfield(std::uint64_t number, std::uint64_t v) {
  return varint(number << 3) + varint(v);
}
std::string bfield(std::uint64_t number, const std::string& bytes) {
  return varint(number << 3 | 2) + varint(bytes.size()) + bytes;
}
std::string any(const std::string& type, const std::string& value) {
  return bfield(3, bfield(1, "type.googleapis.com/google.rpc." + type) + bfield(2, value));
}
Result<Adapted> grpc(const std::string& status, const std::string& trailer,
                     const std::string& message = "", const AdapterOptions& o = {}) {
  return recourse::from_grpc(status, message, {{"grpc-status-details-bin", trailer}}, o);
}

std::string warnings(const Result<Adapted>& r) {
  std::string s = r->mapping + " " + recourse::to_json(r->envelope);
  for (const auto& w : r->envelope.warnings) s += " [" + w.field + ": " + w.message + "]";
  return s;
}

bool warned(const Result<Adapted>& r, const std::string& part) {
  for (const auto& w : r->envelope.warnings)
    if (w.field == "code" && w.message.find(part) != std::string::npos) return true;
  return false;
}

// grpc-go TestStatus_ErrorDetails, the last case: UNAVAILABLE with RetryInfo{RetryDelay:
// {Seconds: 60}} and ResourceInfo{"book", "projects/1234/books/5678", "User"}.
const std::string kGoUnavailable(
    "\x08\x0e"                                             // code 14
    "\x1a\x30"                                             // details[0], 48 bytes
    "\x0a\x28type.googleapis.com/google.rpc.RetryInfo"     //   type_url
    "\x12\x04\x0a\x02\x08\x3c"                             //   RetryInfo{retry_delay{seconds 60}}
    "\x1a\x55"                                             // details[1], 85 bytes
    "\x0a\x2btype.googleapis.com/google.rpc.ResourceInfo"  //   type_url
    "\x12\x26\x0a\x04"
    "book"
    "\x12\x18projects/1234/books/5678\x1a\x04User",
    139);
// grpc-go TestStatus_ErrorDetails_Fail: CANCELLED, an Any with an empty type URL ("message type
// url \"\" is invalid"), then the ResourceInfo.
const std::string kGoEmptyTypeUrl(
    "\x08\x01\x1a\x00"
    "\x1a\x55\x0a\x2btype.googleapis.com/google.rpc.ResourceInfo"
    "\x12\x26\x0a\x04"
    "book"
    "\x12\x18projects/1234/books/5678\x1a\x04User",
    91);
// grpc-go TestFromToProto: INTERNAL, "test test test", Any{TypeUrl "foo", Value {3, 2, 1}}.
const std::string kGoFromToProto(
    "\x08\x0d\x12\x0etest test test\x1a\x0a\x0a\x03"
    "foo\x12\x03\x03\x02\x01",
    30);
// grpc-java StatusProtoTest.STATUS_PROTO: code 2, "status message", one detail packing a
// google.rpc.Status{13, "nested message"}.
const std::string kJavaStatus(
    "\x08\x02\x12\x0estatus message"
    "\x1a\x3b\x0a\x25type.googleapis.com/google.rpc.Status"
    "\x12\x12\x08\x0d\x12\x0enested message",
    79);
// grpc-java StatusProtoTest.INVALID_STATUS_PROTO: code -1 (an int32 varint of ten bytes).
const std::string kJavaInvalid("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);

}  // namespace

TEST_CASE("status details: base64 as gRPC binary headers carry it", "[adapters][grpc-bin]") {
  std::string error;
  // PROTOCOL-HTTP2.md: implementations MUST accept padded and unpadded values.
  CHECK(decode_base64("CP///////////wE=", 64, error) == kJavaInvalid);
  CHECK(decode_base64("CP///////////wE", 64, error) == kJavaInvalid);
  CHECK(decode_base64("CA0SDnRlc3QgdGVzdCB0ZXN0GgoKA2ZvbxIDAwIB", 64, error) == kGoFromToProto);
  CHECK(decode_base64("", 64, error) == std::string());
  CHECK(decode_base64("QQ", 64, error) == "A");
  CHECK(decode_base64("QUI", 64, error) == "AB");
  for (const char* bad : {"Q", "QQ=", "Q===", "QQ=A", "Q-_A", "QQ Q", "QQ==QQ=="}) {
    error.clear();
    INFO(bad);
    CHECK_FALSE(decode_base64(bad, 64, error));
    CHECK_FALSE(error.empty());
  }
  // The size is checked from the length, before decoding.
  CHECK(decode_base64("QUJD", 3, error) == "ABC");
  CHECK_FALSE(decode_base64("QUJDRA", 3, error));
  CHECK(error == "it decodes to 4 bytes, over max_bytes 3");
}

TEST_CASE("status details: grpc-go's and grpc-java's Status messages", "[adapters][grpc-bin]") {
  SECTION("the reader") {
    const recourse::StatusDetailsLimits limits;
    auto r = read_rpc_status(kGoUnavailable, limits);
    REQUIRE(r.status);
    CHECK(r.status->code == 14);
    CHECK(r.status->message.empty());
    CHECK(r.status->details.retry_delay_ms == std::optional<std::int64_t>(60'000));
    CHECK(r.status->skipped.empty());
    r = read_rpc_status(kJavaInvalid, limits);
    REQUIRE(r.status);
    CHECK(r.status->code == -1);
    r = read_rpc_status(kJavaStatus, limits);
    REQUIRE(r.status);
    CHECK(r.status->code == 2);
    CHECK(r.status->message == "status message");
    CHECK(r.status->details.reasons.empty());  // a nested Status is no AIP-193 detail
  }
  SECTION("through from_grpc, padded and not") {
    for (bool pad : {false, true}) {
      auto r = grpc("UNAVAILABLE", base64(kGoUnavailable, pad));
      INFO(warnings(r));
      CHECK(r->envelope.code == "TRANSIENT");
      CHECK(r->envelope.retryable == true);
      CHECK(r->envelope.retry_after_ms == std::optional<std::int64_t>(60'000));
      CHECK(r->envelope.warnings.empty());
    }
    // The empty type URL is skipped with a warning; the ResourceInfo after it is still read.
    auto r = grpc("CANCELLED", base64(kGoEmptyTypeUrl));
    INFO(warnings(r));
    CHECK(r->envelope.code == "UNKNOWN");
    CHECK(r->envelope.retryable == false);
    CHECK(warned(r, "skipped detail 1 is not well-formed"));
    // An unknown type URL says nothing and warns nothing.
    r = grpc("13", base64(kGoFromToProto));
    CHECK(r->envelope.code == "UNKNOWN");
    CHECK(r->envelope.message == "test test test");  // grpc-message empty: the Status's
    CHECK(r->envelope.warnings.empty());
    r = grpc("INTERNAL", base64(kGoFromToProto), "from grpc-message");
    CHECK(r->envelope.message == "from grpc-message");
    // grpc-java: the Status's code must match the gRPC status.
    r = grpc("UNKNOWN", base64(kJavaStatus));
    CHECK(r->envelope.message == "status message");
    CHECK(r->envelope.warnings.empty());
    r = grpc("UNKNOWN", base64(kJavaInvalid));
    CHECK(r->envelope.code == "UNKNOWN");
    CHECK(warned(r, "code -1 does not match the gRPC status"));
    r = grpc("UNAVAILABLE", base64(kJavaStatus));
    CHECK(r->envelope.code == "TRANSIENT");
    CHECK_FALSE(r->envelope.message);
    CHECK(warned(r, "code 2 does not match"));
  }
  SECTION("a raw form without a status: the trailer's Status is the status (grpc-go)") {
    auto r = recourse::from_raw(
        recourse::Protocol::Grpc,
        R"({"metadata":{"grpc-status-details-bin":")" + base64(kGoUnavailable) + R"("}})",
        std::nullopt);
    INFO(warnings(r));
    CHECK(r->mapping == "grpc UNAVAILABLE");
    CHECK(r->envelope.retry_after_ms == std::optional<std::int64_t>(60'000));
    r = recourse::from_raw(
        recourse::Protocol::Grpc,
        R"({"metadata":{"grpc-status-details-bin":")" + base64(kJavaInvalid) + R"("}})",
        std::nullopt);
    CHECK(r->envelope.code == "UNKNOWN");
    CHECK(r->mapping == "grpc garbled status");
  }
}

TEST_CASE("status details: AIP-193 messages read as their JSON form", "[adapters][grpc-bin]") {
  // Gemini's free tier (as the JSON test in adapters_test.cpp): QuotaFailure{violations
  // [{quota_metric 4, quota_id 5}]} and RetryInfo{43s}.
  auto quota = [](const std::string& quota_id) {
    const std::string violation =
        bfield(4, "generativelanguage.googleapis.com/generate_content_free_tier_requests") +
        bfield(5, quota_id);
    return vfield(1, 8) + bfield(2, "You exceeded your current quota") +
           any("QuotaFailure", bfield(1, violation)) + any("RetryInfo", bfield(1, vfield(1, 43)));
  };
  auto json_form = [](const std::string& quota_id) {
    return R"({"status":"RESOURCE_EXHAUSTED","message":"You exceeded your current quota","details":[
      {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":")" +
           quota_id +
           R"("}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43s"}]})";
  };
  for (const char* id : {"GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                         "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}) {
    INFO(id);
    const auto bin = grpc("RESOURCE_EXHAUSTED", base64(quota(id)));
    const auto json = recourse::from_raw(recourse::Protocol::Grpc, json_form(id), std::nullopt);
    INFO(warnings(bin));
    const bool per_day = std::string(id).find("PerDay") != std::string::npos;
    CHECK(bin->envelope.code == (per_day ? "QUOTA_EXCEEDED" : "RATE_LIMITED"));
    CHECK(bin->envelope.retryable == !per_day);
    CHECK(bin->envelope.retry_after_ms == std::optional<std::int64_t>(43'000));
    CHECK(bin->envelope.message == "You exceeded your current quota");
    CHECK(recourse::to_json(bin->envelope) == recourse::to_json(json->envelope));
    CHECK(bin->mapping == json->mapping);
  }
  // ErrorInfo{reason 1, domain 2, metadata 3 (map entries: key 1, value 2)}.
  auto entry = [](const std::string& k, const std::string& v) {
    return bfield(3, bfield(1, k) + bfield(2, v));
  };
  const std::string info = bfield(1, "RATE_LIMIT_EXCEEDED") + bfield(2, "googleapis.com") +
                           entry("quota_limit_value", "300") +
                           entry("quota_limit", "ReadRequestsPerDayPerProject");
  auto r = grpc("8", base64(vfield(1, 8) + any("ErrorInfo", info)));
  INFO(warnings(r));
  CHECK(r->envelope.code == "QUOTA_EXCEEDED");
  CHECK(r->mapping == "grpc RESOURCE_EXHAUSTED details: per-day quota");
  // BadRequest{field_violations [{field 1, description 2}]}: the first violation is the field.
  const std::string bad = bfield(1, bfield(1, "page_size") + bfield(2, "must be <= 100")) +
                          bfield(1, bfield(1, "page_token") + bfield(2, "unknown"));
  r = grpc("INVALID_ARGUMENT", base64(vfield(1, 3) + any("BadRequest", bad)));
  CHECK(r->envelope.code == "VALIDATION");
  CHECK(r->envelope.field == "page_size");
  CHECK(r->envelope.suggestion == "must be <= 100");
  // Duration{seconds 1, nanos 2}: 30.2 s is 30200 ms, one nanosecond rounds up to 1 ms.
  auto delay = [](std::uint64_t s, std::uint64_t ns) {
    return grpc("14",
                base64(vfield(1, 14) + any("RetryInfo", bfield(1, vfield(1, s) + vfield(2, ns)))));
  };
  CHECK(delay(30, 200'000'000)->envelope.retry_after_ms == std::optional<std::int64_t>(30'200));
  CHECK(delay(0, 1)->envelope.retry_after_ms == std::optional<std::int64_t>(1));
  // A negative or out-of-range Duration: the detail is skipped, with a warning.
  r = delay(static_cast<std::uint64_t>(-5), 0);
  CHECK_FALSE(r->envelope.retry_after_ms);
  CHECK(warned(r, "skipped detail 1 is not well-formed"));
  CHECK_FALSE(delay(1, 1'000'000'000)->envelope.retry_after_ms);
  // Seconds beyond what ms can hold saturate.
  CHECK(delay(std::uint64_t{1} << 62, 0)->envelope.retry_after_ms ==
        std::optional<std::int64_t>(INT64_MAX));
}

TEST_CASE("status details: limits and malformed trailers are ignored with a warning",
          "[adapters][grpc-bin]") {
  const std::string per_day =
      vfield(1, 8) + any("QuotaFailure", bfield(1, bfield(5, "RequestsPerDay")));
  REQUIRE(grpc("8", base64(per_day))->envelope.code == "QUOTA_EXCEEDED");
  SECTION("malformed bytes: the whole trailer is ignored") {
    for (const std::string& bytes : {
             std::string("\x08", 1),  // a truncated varint
             std::string("\x12\x05"
                         "ab",
                         4),              // a length past the end
             std::string("\x0b\x0c", 2),  // a group (wire type 3)
             std::string("\x0e\x00", 2),  // wire type 6
             std::string("\x00\x01", 2),  // field number 0
             std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11),  // over 64 bits
             std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),
             per_day + std::string("\x1a", 1),
         }) {
      auto r = grpc("8", base64(bytes));
      INFO(warnings(r));
      CHECK(r->envelope.code == "RATE_LIMITED");
      CHECK(warned(r, "grpc-status-details-bin ignored: it is not a well-formed"));
    }
    auto r = grpc("8", "CAg*");
    CHECK(warned(r, "grpc-status-details-bin ignored: byte 3 is not base64"));
    r = recourse::from_grpc("8", "",
                            {{"grpc-status-details-bin", base64(per_day)},
                             {"grpc-status-details-bin", base64(per_day)}});
    CHECK(r->envelope.code == "RATE_LIMITED");
    CHECK(warned(r, "appears more than once"));
  }
  SECTION("a detail that is not well-formed is skipped alone") {
    const std::string broken = vfield(1, 8) +
                               any("ErrorInfo", std::string("\x0a\x09"
                                                            "abc",
                                                            5)) +
                               any("QuotaFailure", bfield(1, bfield(5, "RequestsPerDay")));
    auto r = grpc("8", base64(broken));
    INFO(warnings(r));
    CHECK(r->envelope.code == "QUOTA_EXCEEDED");
    CHECK(warned(r, "skipped detail 1 is not well-formed"));
  }
  SECTION("limits") {
    AdapterOptions o;
    o.status_details.max_bytes = per_day.size() - 1;
    auto r = grpc("8", base64(per_day), "", o);
    CHECK(r->envelope.code == "RATE_LIMITED");
    CHECK(warned(r, "over max_bytes"));
    o = {};
    o.status_details.max_details = 1;
    r = grpc("8",
             base64(vfield(1, 8) + any("ErrorInfo", bfield(1, "x")) +
                    any("QuotaFailure", bfield(1, bfield(5, "RequestsPerDay")))),
             "", o);
    CHECK(r->envelope.code == "RATE_LIMITED");
    CHECK(warned(r, "skipped more than 1 details (max_details)"));
    o = {};
    o.status_details.max_string_bytes = 8;
    r = grpc("8", base64(per_day), "", o);
    CHECK(r->envelope.code == "RATE_LIMITED");
    CHECK(warned(r, "a quota violation of 14 bytes (max_string_bytes 8)"));
    o.status_details.max_string_bytes = 14;
    CHECK(grpc("8", base64(per_day), "", o)->envelope.code == "QUOTA_EXCEEDED");
    o = {};
    o.status_details.max_depth = 3;  // the violation is at depth 4
    r = grpc("8", base64(per_day), "", o);
    CHECK(r->envelope.code == "RATE_LIMITED");
    CHECK(warned(r, "nested deeper than max_depth 3"));
    o.status_details.max_depth = 0;
    CHECK(warned(grpc("8", base64(per_day), "", o), "ignored: max_depth is 0"));
  }
}
