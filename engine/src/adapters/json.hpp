// Adapters, hardened JSON (RFC 8259): raw forms, bodies and JSON-RPC data read into a DOM.
//
// Input: untrusted JSON text. Output: a DOM, or an error ("invalid JSON at byte N: ..."). Raw
// JSON is read into a DOM by a SAX builder rather than json::parse, for the envelope reader's
// hardening: a key seen twice in one object becomes a marker (read as absent with a "duplicate"
// warning, never as either value), nesting beyond the limit becomes a marker instead of a deep
// tree, and a number beyond a double's range (1e999) becomes a marker instead of failing the
// whole input. A marker only warns when the adapter reads that value (Builder::member). A number
// keeps its written sign and ceiling (envelope/json_number.hpp), so an envelope in a body reads
// as it would on its own.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "envelope/sax.hpp"
#include "recourse/envelope.hpp"

namespace recourse::detail::adapt {

using json = nlohmann::json;

/// The markers a value is replaced by (see the file comment): strings starting with U+0001.
inline constexpr std::string_view kDuplicate = "\x01recourse:duplicate";
inline constexpr std::string_view kTooDeep = "\x01recourse:too-deep";
/// (and kOverflowMarker, envelope/sax.hpp, which the envelope reader shares)

/// A parse's outcome: `value` when ok, else `error`.
struct Parsed {
  bool ok = false;
  std::string error;
  json value;
};

/// Parses `text` (at most `max_bytes`; no NUL byte) with the markers, nesting beyond
/// limits.max_depth cut and at most limits.max_overflow_numbers numbers beyond a double's range.
Parsed parse_json(std::string_view text, std::size_t max_bytes, const ReaderLimits& limits);

/// True when `v` is one of the markers.
bool is_marker(const json& v);

/// `object`'s member `key` when it is a string and not a marker, else nullptr (no warning).
const std::string* str(const json& object, std::string_view key);

}  // namespace recourse::detail::adapt
