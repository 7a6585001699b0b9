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

#include "recourse/envelope.hpp"

namespace recourse::detail::adapt {

using json = nlohmann::json;

/// The markers a value is replaced by (see the file comment): strings starting with U+0001.
inline constexpr std::string_view kDuplicate = "\x01recourse:duplicate";
inline constexpr std::string_view kTooDeep = "\x01recourse:too-deep";
inline constexpr std::string_view kOverflow = "\x01recourse:number-overflow";  // as envelope.cpp's

/// A SAX parse's errors, and the one the readers recover from: nlohmann stops at a number beyond
/// a double's range (its out_of_range.406); the reader replaces that number by the kOverflow
/// marker (patch()) and reads again, so that value alone is lost. The envelope reader
/// (envelope/envelope.cpp: kOverflowMarker, Reader::parse_error and its pass loop) still has its
/// own copy of this handling; this one is in a header so that reader can share it later.
struct SaxErrors {
  static constexpr int kNumberOverflow = 406;  // nlohmann's out_of_range.406
  std::string error;                           // the first other error; empty: none
  std::size_t overflow_end = 0;   // a number beyond a double's range ended here (0: none)
  std::size_t overflow_size = 0;  // and had this many bytes

  /// json_sax::parse_error: records the error and returns false (the parse stops).
  bool record(std::size_t position, const std::string& token,
              const nlohmann::detail::exception& e) {
    if (e.id == kNumberOverflow && token.size() <= position) {
      overflow_end = position;
      overflow_size = token.size();
    } else if (error.empty()) {
      error = "invalid JSON at byte " + std::to_string(position) + ": " + e.what();
    }
    return false;
  }
  /// Replaces the number that overflowed in `text` (what was parsed) by the kOverflow marker.
  void patch(std::string& text) const {
    text.replace(overflow_end - overflow_size, overflow_size,
                 "\"\\u0001recourse:number-overflow\"");
  }
};

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
