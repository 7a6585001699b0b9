// Adapters, gRPC's binary error model; see protobuf.hpp.
#include "adapters/protobuf.hpp"

#include <utility>

#include "adapters/text.hpp"

namespace recourse::detail::adapt {
namespace {

// One field of a message: its number, wire type, and value (a varint, or the bytes of a
// length-delimited field; fixed-size values are skipped).
struct Field {
  std::uint64_t number = 0;
  int wire_type = 0;
  std::uint64_t varint = 0;
  std::string_view bytes;
};

// A message's fields in order: next() is false at the end, and on malformed input, which
// malformed() then tells apart.
class Wire {
 public:
  explicit Wire(std::string_view bytes) : b_(bytes) {}

  bool next(Field& f) {
    if (i_ == b_.size()) return false;
    std::uint64_t key = 0;
    if (!varint(key) || (key >> 3) == 0 || (key >> 3) > kMaxFieldNumber) return fail();
    f.number = key >> 3;
    f.wire_type = static_cast<int>(key & 7);
    switch (f.wire_type) {
      case 0:
        return varint(f.varint) || fail();
      case 1:
        return skip(8);
      case 5:
        return skip(4);
      case 2: {
        std::uint64_t n = 0;
        if (!varint(n) || n > b_.size() - i_) return fail();
        f.bytes = b_.substr(i_, static_cast<std::size_t>(n));
        i_ += static_cast<std::size_t>(n);
        return true;
      }
      default:  // 3 and 4 (groups, deprecated), 6 and 7 (undefined)
        return fail();
    }
  }
  bool malformed() const { return malformed_; }

 private:
  static constexpr std::uint64_t kMaxFieldNumber = (std::uint64_t{1} << 29) - 1;

  // At most 10 bytes, the tenth holding bit 63 alone (as Go's protowire.ConsumeVarint).
  bool varint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift <= 63 && i_ < b_.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(b_[i_++]);
      if (shift == 63 && byte > 1) return false;
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool skip(std::size_t n) {
    if (b_.size() - i_ < n) return fail();
    i_ += n;
    return true;
  }
  bool fail() {
    malformed_ = true;
    return false;
  }

  std::string_view b_;
  std::size_t i_ = 0;
  bool malformed_ = false;
};

// Appends what one well-formed detail said.
void merge(GoogleDetails& into, GoogleDetails&& part) {
  if (part.retry_delay_ms) into.retry_delay_ms = part.retry_delay_ms;
  auto append = [](auto& to, auto& from) {
    for (auto& v : from) to.push_back(std::move(v));
  };
  append(into.field_violations, part.field_violations);
  append(into.reasons, part.reasons);
  append(into.metadata, part.metadata);
  append(into.quota_violations, part.quota_violations);
}

// The messages of status.proto, any.proto, duration.proto and error_details.proto this reader
// knows, by depth (the Status is 1). Each returns false when its bytes are not well-formed.
class Reader {
 public:
  Reader(const StatusDetailsLimits& limits, RpcStatus& out) : limits_(limits), out_(out) {}

  bool status(std::string_view bytes) {
    Wire w(bytes);
    Field f;
    while (w.next(f)) {
      if (f.number == 1 && f.wire_type == 0) {
        out_.code = static_cast<std::int32_t>(static_cast<std::uint32_t>(f.varint));
      } else if (f.number == 2 && f.wire_type == 2) {
        out_.message = text(f.bytes, "message");
      } else if (f.number == 3 && f.wire_type == 2) {
        if (++details_ > limits_.max_details) {
          skip("more than " + std::to_string(limits_.max_details) + " details (max_details)");
          continue;
        }
        GoogleDetails part;
        if (any(f.bytes, part))
          merge(out_.details, std::move(part));
        else
          skip("detail " + std::to_string(details_) + " is not well-formed");
      }
    }
    return !w.malformed();
  }

 private:
  // google.protobuf.Any at depth 2, and the detail it packs at depth 3. An unknown type (a
  // ResourceInfo, a DebugInfo, a nested Status) is well-formed and says nothing here.
  bool any(std::string_view bytes, GoogleDetails& part) {
    if (!deep_enough(2)) return true;
    std::string_view type_url, value;
    Wire w(bytes);
    Field f;
    while (w.next(f))
      if (f.wire_type == 2 && f.number == 1)
        type_url = f.bytes;
      else if (f.wire_type == 2 && f.number == 2)
        value = f.bytes;
    if (w.malformed() || type_url.empty()) return false;  // grpc-go: type url "" is invalid
    const std::string_view type = type_url.substr(type_url.rfind('/') + 1);
    if (!deep_enough(3)) return true;
    if (type == "google.rpc.RetryInfo") return retry_info(value, part);
    if (type == "google.rpc.BadRequest") return repeated(value, part, &Reader::field_violation);
    if (type == "google.rpc.ErrorInfo") return error_info(value, part);
    if (type == "google.rpc.QuotaFailure") return repeated(value, part, &Reader::quota_violation);
    return true;
  }

  // RetryInfo { Duration retry_delay = 1; } and Duration { int64 seconds = 1; int32 nanos = 2; }
  // (a message given twice merges: the last seconds and the last nanos).
  bool retry_info(std::string_view bytes, GoogleDetails& part) {
    std::int64_t seconds = 0;
    std::int32_t nanos = 0;
    bool present = false;
    Wire w(bytes);
    Field f;
    while (w.next(f)) {
      if (f.number != 1 || f.wire_type != 2 || !deep_enough(4)) continue;
      present = true;
      Wire d(f.bytes);
      Field g;
      while (d.next(g))
        if (g.number == 1 && g.wire_type == 0)
          seconds = static_cast<std::int64_t>(g.varint);
        else if (g.number == 2 && g.wire_type == 0)
          nanos = static_cast<std::int32_t>(static_cast<std::uint32_t>(g.varint));
      if (d.malformed()) return false;
    }
    if (w.malformed()) return false;
    if (!present) return true;
    // duration.proto: nanos in 0..999,999,999 for a positive duration; a negative delay means
    // nothing a retry can wait for.
    if (seconds < 0 || nanos < 0 || nanos > 999'999'999) return false;
    const std::int64_t whole = saturating_ms(static_cast<std::uint64_t>(seconds));
    const std::int64_t extra = (nanos + 999'999) / 1'000'000;  // rounded up, as the JSON form
    part.retry_delay_ms = whole > kSaturatedMs - extra ? kSaturatedMs : whole + extra;
    return true;
  }

  // ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
  bool error_info(std::string_view bytes, GoogleDetails& part) {
    Wire w(bytes);
    Field f;
    while (w.next(f)) {
      if (f.wire_type != 2) continue;
      if (f.number == 1) {
        part.reasons.push_back(text(f.bytes, "reason"));
      } else if (f.number == 3 && deep_enough(4)) {
        auto entry = strings(f.bytes, 1, 2, "metadata");
        if (!entry) return false;
        part.metadata.push_back(std::move(*entry));
      }
    }
    return !w.malformed();
  }

  // BadRequest { repeated FieldViolation field_violations = 1; } and QuotaFailure { repeated
  // Violation violations = 1; }: each element at depth 4.
  using Element = bool (Reader::*)(std::string_view, GoogleDetails&);
  bool repeated(std::string_view bytes, GoogleDetails& part, Element element) {
    Wire w(bytes);
    Field f;
    while (w.next(f))
      if (f.number == 1 && f.wire_type == 2 && deep_enough(4) && !(this->*element)(f.bytes, part))
        return false;
    return !w.malformed();
  }
  // FieldViolation { string field = 1; string description = 2; ... }
  bool field_violation(std::string_view bytes, GoogleDetails& part) {
    auto v = strings(bytes, 1, 2, "field violation");
    if (v) part.field_violations.push_back({std::move(v->first), std::move(v->second)});
    return v.has_value();
  }
  // Violation { string subject = 1; string description = 2; string api_service = 3;
  // string quota_metric = 4; string quota_id = 5; ... }
  bool quota_violation(std::string_view bytes, GoogleDetails& part) {
    auto v = strings(bytes, 4, 5, "quota violation");
    if (v) part.quota_violations.push_back({std::move(v->first), std::move(v->second)});
    return v.has_value();
  }

  // Two string fields of a message (the last of each), or nullopt when it is not well-formed.
  std::optional<std::pair<std::string, std::string>> strings(std::string_view bytes,
                                                             std::uint64_t first,
                                                             std::uint64_t second,
                                                             const char* what) {
    std::pair<std::string, std::string> out;
    Wire w(bytes);
    Field f;
    while (w.next(f))
      if (f.wire_type == 2 && f.number == first)
        out.first = text(f.bytes, what);
      else if (f.wire_type == 2 && f.number == second)
        out.second = text(f.bytes, what);
    if (w.malformed()) return std::nullopt;
    return out;
  }

  // A string within max_string_bytes, else empty (absent) with a note.
  std::string text(std::string_view bytes, const char* what) {
    if (bytes.size() <= limits_.max_string_bytes) return std::string(bytes);
    skip(std::string("a ") + what + " of " + std::to_string(bytes.size()) +
         " bytes (max_string_bytes " + std::to_string(limits_.max_string_bytes) + ")");
    return {};
  }

  bool deep_enough(std::size_t depth) {
    if (depth <= limits_.max_depth) return true;
    skip("messages nested deeper than max_depth " + std::to_string(limits_.max_depth));
    return false;
  }

  void skip(std::string why) {
    if (out_.skipped.empty()) out_.skipped = std::move(why);
  }

  const StatusDetailsLimits& limits_;
  RpcStatus& out_;
  std::size_t details_ = 0;
};

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text, std::size_t max_bytes,
                                         std::string& error) {
  std::size_t n = text.size();
  while (n > 0 && text.size() - n < 2 && text[n - 1] == '=') --n;
  if (n < text.size() && text.size() % 4 != 0) {
    error = "its padding is misplaced";
    return std::nullopt;
  }
  if (n % 4 == 1) {
    error = "its length is not base64's";
    return std::nullopt;
  }
  const std::size_t size = n / 4 * 3 + (n % 4 == 0 ? 0 : n % 4 - 1);
  if (size > max_bytes) {
    error = "it decodes to " + std::to_string(size) + " bytes, over max_bytes " +
            std::to_string(max_bytes);
    return std::nullopt;
  }
  std::string out;
  out.reserve(size);
  std::uint32_t bits = 0;
  int count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int v = base64_value(text[i]);
    if (v < 0) {
      error = "byte " + std::to_string(i) + " is not base64";
      return std::nullopt;
    }
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    if ((count += 6) >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

RpcStatusRead read_rpc_status(std::string_view bytes, const StatusDetailsLimits& limits) {
  RpcStatusRead r;
  if (bytes.size() > limits.max_bytes) {
    r.error = "its Status of " + std::to_string(bytes.size()) + " bytes is over max_bytes " +
              std::to_string(limits.max_bytes);
    return r;
  }
  if (limits.max_depth < 1) {
    r.error = "max_depth is 0";
    return r;
  }
  RpcStatus status;
  if (!Reader(limits, status).status(bytes)) {
    r.error = "it is not a well-formed google.rpc.Status";
    return r;
  }
  r.status = std::move(status);
  return r;
}

RpcStatusRead read_status_details_bin(std::string_view value, const StatusDetailsLimits& limits) {
  RpcStatusRead r;
  if (auto bytes = decode_base64(value, limits.max_bytes, r.error))
    return read_rpc_status(*bytes, limits);
  return r;
}

}  // namespace recourse::detail::adapt
