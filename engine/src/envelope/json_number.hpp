// JSON numbers (RFC 8259 section 6) as the envelope reader and the adapters' JSON reader take
// them. nlohmann hands over the double nearest the written number, which loses what a wait hint
// is read by when it rounds to a whole number: -1e-400 becomes -0 (no longer negative), 1e-400
// becomes 0 and 1000.00000000000000001 becomes 1000 (neither rounded up any more).
#pragma once

#include <string_view>

namespace recourse::detail {

/// The double to read for the JSON number `token` (valid RFC 8259 number grammar), given
/// `nearest`, the double nearest to it: `nearest` itself, except when `nearest` is a whole
/// number (zero included) that the written value is not; then the next double towards the
/// written value (beyond 2^53, where every double is whole, only when the written value is
/// farther from zero). The result has the written value's sign (-1e-400 stays negative, -0 and
/// -0.0 are zero), below 2^53 its ceiling (1e-400 rounds up to 1), and beyond, a ceiling that is
/// the least double not below the written value. Infinities pass unchanged.
double written_double(double nearest, std::string_view token);

}  // namespace recourse::detail
