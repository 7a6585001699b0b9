// Adapters, the envelope under construction: what every protocol adapter writes into.
//
// Input: the Adapted being filled and the caller's AdapterOptions (limits, per-tool code
// mappings). Output: the same Adapted: code, retryable and the mapping label that gave
// them, warnings for values read as absent, and at the end (finish()) the envelope's string caps
// and non-empty rules, as read_envelope applies them (docs/adapters.md, "Warnings").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "adapters/json.hpp"
#include "envelope/fields.hpp"
#include "recourse/adapters.hpp"

namespace recourse::detail::adapt {

/// The envelope under construction. Holds references: `r` and `o` outlive it.
class Builder {
 public:
  Builder(Adapted& r, const AdapterOptions& o) : r_(r), o_(o) {}
  Envelope& e() { return r_.envelope; }
  const AdapterOptions& options() const { return o_; }

  void warn(const char* kind, const char* field, std::string message) {
    r_.envelope.warnings.push_back({kind, field, std::move(message)});
  }
  void set_code(std::string_view code, std::optional<bool> retryable, std::string mapping) {
    r_.envelope.code = std::string(code);
    r_.envelope.retryable = retryable;
    r_.mapping = std::move(mapping);
  }
  void set_code_only(std::string_view code, std::string mapping) {
    r_.envelope.code = std::string(code);
    r_.mapping = std::move(mapping);
  }
  const std::string& mapping() const { return r_.mapping; }
  Adapted& result() { return r_; }
  /// Gives up on the input (not a JSON object, no protocol): the adapter fails with N001.
  void fail(std::string why) { failure_ = std::move(why); }
  const std::optional<std::string>& failure() const { return failure_; }

  /// A member of a raw form, or nullptr; a marker there is read as absent with a warning on
  /// `field` (an envelope key).
  const json* member(const json& object, std::string_view key, const char* field);
  /// A member that must be a string when present; another type warns (null is silent).
  std::optional<std::string> text(const json& object, std::string_view key, const char* field);

  /// The envelope's field rules, as read_envelope applies them (read_fields(): string caps,
  /// non-empty strings, with their warnings). Strings are first made UTF-8 (a typed entry point
  /// such as from_jsonrpc may be handed other bytes, and headers are bytes): invalid sequences
  /// become U+FFFD, so text from a server is kept and to_json reads back the same.
  void finish();

  /// A policy's or host's override for (protocol, key), if any.
  const CodeMapping* mapping_for(Protocol protocol, std::string_view key) const;

  /// An envelope inside a body, a structuredContent or a JSON-RPC data: its present fields win.
  /// It goes through read_envelope itself, markers written back as what they stood for.
  bool overlay(const json& object, const char* where);

 private:
  Adapted& r_;
  const AdapterOptions& o_;
  std::optional<std::string> failure_;
};

/// An object "carries an envelope" when its code is a string naming a built-in code, or it has
/// a `retryable` key: the seed's ToolError, not a provider's own error JSON.
bool carries_envelope(const json& v);

}  // namespace recourse::detail::adapt
