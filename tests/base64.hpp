// Base64 (RFC 4648 section 4, the standard alphabet) as a gRPC peer writes a binary header: the
// encoder the status-details tests and fuzz_adapters use to hand the adapter a trailer. The
// engine itself only decodes (adapters/protobuf.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace test {

/// `bytes` in base64, with '=' padding when `pad` (gRPC implementations accept both).
inline std::string base64(std::string_view bytes, bool pad = false) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (unsigned char c : bytes) {
    bits = (bits << 8) | c;
    for (count += 8; count >= 6; count -= 6) out += k[(bits >> (count - 6)) & 63];
  }
  if (count > 0) out += k[(bits << (6 - count)) & 63];
  while (pad && out.size() % 4) out += '=';
  return out;
}

}  // namespace test
