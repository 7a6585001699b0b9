// Adapters, provider bodies: what an error body (HTTP) or error data (JSON-RPC) or a details list
// (gRPC) says beyond the status.
//
// Input: a body's DOM (json.hpp; markers read as absent, silently). Output: BodyInfo: a message,
// the error types and codes that body rules and overrides match, field and suggestion for
// repair, a google.rpc.RetryInfo delay and quota window (AIP-193), and whether the body is
// itself an envelope. Sources:
// RFC 9457 (problem details; RFC 7807 section 3 and erratum 6178 for invalid-params), RFC 6901
// (JSON pointers), RFC 6749 section 5.2 (OAuth errors), google/rpc/error_details.proto, and the
// OpenAI, Anthropic, Google, GitHub and Stripe error formats (docs/adapters.md, "Bodies").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/json.hpp"
#include "recourse/adapters.hpp"

namespace recourse::detail::adapt {

/// What a body says (see the file comment).
struct BodyInfo {
  std::optional<std::string> message;
  std::vector<std::string> types;  // error types and codes, problem type, Google status/reason
  std::optional<std::string> field, suggestion;
  std::optional<std::int64_t> retry_delay_ms;  // google.rpc.RetryInfo
  // The longest quota window google.rpc details name (QuotaFailure quotaId or quotaMetric,
  // ErrorInfo metadata quota_limit, quota_id or quota_metric): "minute", "hour", "day" or
  // "month"; see quota_window().
  std::optional<std::string> quota_window;
  Headers headers;  // header fields a proxy relays in the body (OpenRouter error.metadata.headers)
  const json* envelope = nullptr;  // the body is itself an envelope
  // OAuth 2.0's error code: a top-level `error` string (RFC 6749 section 5.2).
  std::optional<std::string> oauth_error;
  // An AWS error code from `__type` (JSON protocols) or `Code`, as aws_error_code() cleans it.
  std::optional<std::string> aws_code;
  // A long-running operation the body says is not done yet, as the body wrote it
  // (`done false`, `status "in_progress"`); see pending_of().
  std::optional<std::string> pending;
};

/// An AWS error code as botocore reads it (parsers.py, commit 8c0427aa): the part before the
/// first ':' (x-amzn-ErrorType appends a URL), then after the last '#' (a namespace:
/// "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"). nullopt when
/// nothing is left.
std::optional<std::string> aws_error_code(std::string_view raw);

/// The window a Google quota's name says ("GenerateRequestsPerDayPerProjectPerModel-FreeTier"
/// is "day", "ReadRequestsPerMinutePerProject" "minute", "Per100Seconds" "minute"), compared
/// ASCII case-insensitively with '_' and '-' ignored; the longest when several are named;
/// nullopt when none is.
std::optional<std::string> quota_window(std::string_view name);

/// The google.rpc error details AIP-193 names (google/rpc/error_details.proto: RetryInfo,
/// BadRequest, ErrorInfo, QuotaFailure), as either encoding carried them: the JSON form of a
/// Google error body or a gRPC raw form's `details` (read_google_details()), or the binary
/// google.rpc.Status of the grpc-status-details-bin trailer (protobuf.hpp). Only the members
/// apply_google_details() gives a meaning are kept; an empty string is an absent one (proto3).
struct GoogleDetails {
  struct FieldViolation {
    std::string field, description;
  };
  struct QuotaViolation {
    std::string quota_metric, quota_id;
  };
  std::optional<std::int64_t> retry_delay_ms;    // the last RetryInfo.retry_delay, ms rounded up
  std::vector<FieldViolation> field_violations;  // every BadRequest's, in order
  std::vector<std::string> reasons;              // ErrorInfo.reason, in order
  std::vector<std::pair<std::string, std::string>> metadata;  // ErrorInfo.metadata entries
  std::vector<QuotaViolation> quota_violations;               // every QuotaFailure's
};

/// What google.rpc details mean, whichever encoding carried them: the retry delay; the first
/// field violation's field and description (unless the body gave them already); each ErrorInfo
/// reason as a type; the longest quota window the QuotaFailure violations (quota_id,
/// quota_metric) and the ErrorInfo metadata (quota_limit, quota_id, quota_metric) name.
void apply_google_details(const GoogleDetails& details, BodyInfo& info);

/// google.rpc details in their JSON form (an array of objects with "@type"; proto3's JSON
/// mapping: retryDelay "30.2s", fieldViolations, quotaId), read and applied.
void read_google_details(const json& details, BodyInfo& info);

/// True when the details name a quota of a day or longer (quota_window): a limit that no
/// retry within the call can wait out, read as QUOTA_EXCEEDED rather than RATE_LIMITED.
bool long_quota(const BodyInfo& info);

/// Problem details (RFC 9457), OpenAI, Anthropic, Google, GitHub, Stripe and OAuth error JSON.
BodyInfo read_body(const json& body);

/// True when one of the body's types is one of `wanted`, ASCII case-insensitively.
bool has_type(const BodyInfo& info, std::initializer_list<std::string_view> wanted);

/// True when a message says the context window or token limit was exceeded.
bool says_context_overflow(std::string_view message);

/// True when a message says a rate limit was hit ("rate limit", "too many requests").
bool says_rate_limit(std::string_view message);

}  // namespace recourse::detail::adapt
