// Adapters, gRPC's binary error model: the grpc-status-details-bin trailer, a base64
// google.rpc.Status, read by a small, bounded protobuf wire-format reader of our own (no
// libprotobuf: the WebAssembly build cannot link it, and Debian ships no C++ googleapis protos).
//
// Input: the trailer's value (untrusted text). Output: the Status's code and message and the
// AIP-193 details as GoogleDetails (body.hpp), whose meaning apply_google_details() gives, the
// same as for the JSON form; or why the trailer was ignored. Sources: gRPC PROTOCOL-HTTP2.md
// ("Binary-Header": base64, implementations MUST accept padded and unpadded values),
// google/rpc/status.proto (Status: code 1, message 2, details 3), google/protobuf/any.proto
// (type_url 1, value 2), google/protobuf/duration.proto (seconds 1, nanos 2),
// google/rpc/error_details.proto (RetryInfo, BadRequest, ErrorInfo, QuotaFailure), and the
// protobuf encoding guide (varints of at most 10 bytes, wire types 0, 1, 2 and 5; the groups of
// wire types 3 and 4 are refused; the last value of a singular field wins; a map entry is a
// message of key 1, value 2).
//
// Bounds (StatusDetailsLimits): the decoded size is checked from the base64 length before any
// allocation; every length is checked against what is left; the reader descends only into the
// messages it knows, at most max_depth deep, and skips everything else by its length, so no
// input makes it recurse or loop beyond the bytes it was given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/body.hpp"
#include "recourse/adapters.hpp"

namespace recourse::detail::adapt {

/// A google.rpc.Status as read, with what the reader had to leave out.
struct RpcStatus {
  std::int32_t code = 0;
  std::string message;
  GoogleDetails details;
  std::string skipped;  // why a detail or a string was left out (the first reason), or empty
};

/// The outcome of reading a trailer: `status`, or `error` saying why it was ignored whole.
struct RpcStatusRead {
  std::optional<RpcStatus> status;
  std::string error;
};

/// Base64 (RFC 4648 section 4, the standard alphabet), padded or not, to bytes. nullopt with
/// `error` set when a character is outside the alphabet, the padding is misplaced, the length
/// cannot be base64's, or the decoded bytes would exceed `max_bytes` (checked before decoding).
std::optional<std::string> decode_base64(std::string_view text, std::size_t max_bytes,
                                         std::string& error);

/// The binary google.rpc.Status (already base64-decoded) within `limits`.
RpcStatusRead read_rpc_status(std::string_view bytes, const StatusDetailsLimits& limits);

/// The trailer's value as a gRPC client receives it: base64, then read_rpc_status().
RpcStatusRead read_status_details_bin(std::string_view value, const StatusDetailsLimits& limits);

}  // namespace recourse::detail::adapt
