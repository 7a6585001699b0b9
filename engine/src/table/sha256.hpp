// SHA-256 (FIPS 180-4, section 6.2) of a byte string: the policy hash ("sha256:<hex>" of a
// table's dump, Compiled::hash). Our own so that the engine needs no libcrypto and builds the
// same under emscripten; tests/sha256_test.cpp checks it against the FIPS 180-4 example vectors.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace recourse::detail {

/// The 32-byte SHA-256 digest of `bytes` (any length; FIPS 180-4 allows up to 2^64 - 1 bits).
std::array<std::uint8_t, 32> sha256(std::string_view bytes);

/// The digest of `bytes` as 64 lowercase hexadecimal digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace recourse::detail
