// The runner's JSON helpers shared by its step machine (runner.cpp) and its JSON forms
// (wire.cpp).
#pragma once

#include <string>
#include <string_view>

namespace recourse::detail {

/// Arguments as canonical JSON, so two spellings of one value compare and hash the same: object
/// members sorted by name (the last of a duplicated name kept, as nlohmann_json reads it), no
/// insignificant whitespace, strings in one escaping, and a number without a fractional part
/// written as an integer (1.0 and 1e0 are 1; RFC 8785 section 3.2.2.3 writes numbers the
/// ECMAScript way, which agrees for integers up to 2^53). Text that is not JSON is returned as
/// it is: then its bytes are the value. Never throws.
std::string canonical_json(std::string_view text) noexcept;

}  // namespace recourse::detail
