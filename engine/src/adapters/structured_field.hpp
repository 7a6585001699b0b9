// Structured Field Values for HTTP (RFC 9651): the strict parser of a List, for the fields that
// are defined as one (RateLimit and RateLimit-Policy, draft-ietf-httpapi-ratelimit-headers-10
// sections 3 and 4). The parse follows RFC 9651 section 4.2 step by step; any deviation fails
// the whole field, which its definition then ignores ("Malformed RateLimit header fields MUST
// be ignored", draft -10 section 7). Dictionaries and serialisation are not needed here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace recourse::detail::adapt {

/// The type of a Bare Item (RFC 9651 section 3.3).
enum class SfType : std::uint8_t {
  Integer,        ///< section 3.3.1: at most 15 digits, signed
  Decimal,        ///< section 3.3.2: at most 12 integer and 3 fraction digits
  String,         ///< section 3.3.3: printable ASCII
  Token,          ///< section 3.3.4
  ByteSequence,   ///< section 3.3.5: base64 between colons
  Boolean,        ///< section 3.3.6: ?1 or ?0
  Date,           ///< section 3.3.7: @ and integer seconds since the epoch
  DisplayString,  ///< section 3.3.8: %"..." with percent-encoded UTF-8
};

/// A Bare Item. `integer` holds an Integer's or Date's value, a Boolean's 0 or 1; `text` a
/// String's or Display String's decoded text, a Token's or Byte Sequence's characters as sent,
/// a Decimal's digits.
struct SfBareItem {
  SfType type = SfType::Integer;
  std::int64_t integer = 0;
  std::string text;
};

/// A List member (RFC 9651 section 3.1): an Item, or an Inner List (whose items are read, so a
/// malformed one fails the field, but not kept), with its parameters in order; a key given
/// twice keeps its last value (section 4.2.3.2).
struct SfMember {
  bool inner_list = false;
  SfBareItem item;
  std::vector<std::pair<std::string, SfBareItem>> parameters;
  /// The parameter `key`, or nullptr.
  const SfBareItem* parameter(std::string_view key) const;
};

/// Parses `field` as a List (RFC 9651 section 4.2). A field sent on several lines is one value,
/// the lines combined with ", " first (RFC 9110 section 5.3). nullopt on any parse failure; an
/// empty field is an empty list.
std::optional<std::vector<SfMember>> parse_sf_list(std::string_view field);

}  // namespace recourse::detail::adapt
