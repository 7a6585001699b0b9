// Adapters, gRPC: a status by name ("UNAVAILABLE", Go's "Unavailable") or number, its message,
// google.rpc details (JSON, or the binary grpc-status-details-bin trailer) and the trailing
// metadata.
//
// Input: the status, message and metadata a gRPC client reports, or a raw form's members.
// Output: the Builder's envelope (protocols.hpp). Sources: grpc/doc/statuscodes.md (the table,
// also in recourse/adapters.hpp and docs/adapters.md, "gRPC"), google/rpc/error_details.proto
// (RetryInfo, BadRequest) and gRFC A6 (client retries: grpc-retry-pushback-ms).
#include <array>
#include <cctype>

#include "adapters/body.hpp"
#include "adapters/protobuf.hpp"
#include "adapters/protocols.hpp"
#include "adapters/text.hpp"
#include "source/utf8.hpp"

namespace recourse::detail::adapt {
namespace {

struct GrpcRow {
  const char* name;
  const char* code;
  int retryable;
};

// grpc/doc/statuscodes.md, indexed by number.
constexpr std::array<GrpcRow, 17> kGrpcStatus = {{
    {"OK", "UNKNOWN", -1},
    {"CANCELLED", "UNKNOWN", 0},
    {"UNKNOWN", "UNKNOWN", -1},
    {"INVALID_ARGUMENT", "VALIDATION", 0},
    {"DEADLINE_EXCEEDED", "TIMEOUT", 1},
    {"NOT_FOUND", "NOT_FOUND", 0},
    {"ALREADY_EXISTS", "CONFLICT", 0},
    {"PERMISSION_DENIED", "PERMISSION", 0},
    {"RESOURCE_EXHAUSTED", "RATE_LIMITED", 1},
    {"FAILED_PRECONDITION", "CONFLICT", 0},
    {"ABORTED", "CONFLICT", 1},
    {"OUT_OF_RANGE", "VALIDATION", 0},
    {"UNIMPLEMENTED", "NOT_FOUND", 0},
    {"INTERNAL", "UNKNOWN", 0},
    {"UNAVAILABLE", "TRANSIENT", 1},
    {"DATA_LOSS", "UNKNOWN", 0},
    {"UNAUTHENTICATED", "PERMISSION", 0},
}};

// "UNAVAILABLE", "Unavailable" (Go), "14" -> 14.
std::optional<std::size_t> grpc_status(std::string_view s) {
  s = trim(s);
  if (all_digits(s) && s.size() <= 2) {
    const auto n = digits_value(s);
    if (n < kGrpcStatus.size()) return static_cast<std::size_t>(n);
    return std::nullopt;
  }
  std::string squeezed;
  for (char c : s)
    if (c != '_') squeezed += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t i = 0; i < kGrpcStatus.size(); ++i) {
    std::string name;
    for (const char* p = kGrpcStatus[i].name; *p; ++p)
      if (*p != '_') name += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    if (name == squeezed) return i;
  }
  return std::nullopt;
}

}  // namespace

namespace {

// The grpc-status-details-bin trailer (protobuf.hpp), when there is one and it reads; else a
// warning says why it was ignored.
std::optional<RpcStatus> status_details(Builder& b, const Headers& metadata) {
  const HeaderValue bin = header(metadata, "grpc-status-details-bin");
  if (!bin.present) return std::nullopt;
  if (bin.repeated) {
    b.warn("malformed", "code", "grpc-status-details-bin appears more than once; ignored");
    return std::nullopt;
  }
  RpcStatusRead read = read_status_details_bin(trim(bin.value), b.options().status_details);
  if (!read.status) {
    b.warn("malformed", "code", "grpc-status-details-bin ignored: " + read.error);
    return std::nullopt;
  }
  if (!read.status->skipped.empty())
    b.warn("malformed", "code", "grpc-status-details-bin: skipped " + read.status->skipped);
  return std::move(read.status);
}

}  // namespace

void grpc(Builder& b, std::optional<std::string> status, std::string_view message,
          const Headers& metadata, const json* details) {
  Envelope& e = b.e();
  std::optional<RpcStatus> bin = status_details(b, metadata);
  // grpc-go reads a trailer's Status as the call's status; when grpc-status is there too, the
  // two must agree (grpc-java's StatusProto: "code must match gRPC status code").
  if (!status && bin) status = std::to_string(bin->code);
  const auto index = status ? grpc_status(*status) : std::nullopt;
  if (bin && (!index || static_cast<std::int64_t>(*index) != bin->code)) {
    b.warn("malformed", "code",
           "grpc-status-details-bin's code " + std::to_string(bin->code) +
               " does not match the gRPC status; its details are ignored");
    bin.reset();
  }
  bool exhausted = false;  // RESOURCE_EXHAUSTED, not overridden by the policy's `map`
  if (!index) {
    b.warn("malformed", "code",
           (status ? "gRPC status " + excerpt(*status) + " is not a status code"
                   : std::string("no gRPC status")) +
               "; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, "grpc garbled status");
  } else {
    const GrpcRow& row = kGrpcStatus[*index];
    b.set_code(row.code, tri(row.retryable), std::string("grpc ") + row.name);
    if (*index == 0) b.warn("malformed", "code", "gRPC status OK is not an error; read as UNKNOWN");
    const CodeMapping* m = b.mapping_for(Protocol::Grpc, row.name);
    if (!m) m = b.mapping_for(Protocol::Grpc, std::to_string(*index));
    if (m) b.set_code_only(m->code, "override grpc " + m->key);
    exhausted = !m && std::string_view(row.name) == "RESOURCE_EXHAUSTED";
  }
  if (!message.empty())
    e.message = valid_utf8(message);
  else if (bin && !bin->message.empty())
    e.message = valid_utf8(bin->message);
  BodyInfo info;
  if (details) read_google_details(*details, info);
  if (bin) apply_google_details(bin->details, info);
  // AIP-193: RESOURCE_EXHAUSTED whose QuotaFailure or ErrorInfo names a per-day quota is spent
  // for the day, not a rate limit to retry (an override of the status still wins).
  if (exhausted && long_quota(info))
    b.set_code("QUOTA_EXCEEDED", false,
               "grpc RESOURCE_EXHAUSTED details: per-" + *info.quota_window + " quota");
  e.field = info.field;
  e.suggestion = info.suggestion;
  e.retry_after_ms = info.retry_delay_ms;
  // gRFC A6: a non-negative integer pushback is the delay; a negative or malformed one means
  // the server asks the client not to retry.
  const HeaderValue pushback = header(metadata, "grpc-retry-pushback-ms");
  if (pushback.present) {
    const std::string_view v = trim(pushback.value);
    if (!pushback.repeated && all_digits(v)) {
      const auto ms = digits_value(v);
      keep_longest(e.retry_after_ms, ms > static_cast<std::uint64_t>(kSaturatedMs)
                                         ? kSaturatedMs
                                         : static_cast<std::int64_t>(ms));
    } else {
      e.retryable = false;
      b.warn("pushback", "retryable",
             "grpc-retry-pushback-ms " + excerpt(pushback.value) +
                 (pushback.repeated ? " appears more than once" : " is negative or malformed") +
                 ": the server asks not to retry (gRFC A6); retryable read as false");
    }
  }
  e.trace_id = trace_id_of(metadata);
}

}  // namespace recourse::detail::adapt
