// Envelope reader (untrusted input). The context, trusted input, is read in
// engine/src/wire/context.cpp.
//
// Two readers give the same envelope and warnings for every input (fuzz/envelope_readers.cpp holds
// them to it): the SIMD one (envelope/simd.cpp) reads what it can, and hands every input it
// cannot read exactly to the portable one here, which reads with nlohmann's SAX interface: no DOM
// is built, nesting is bounded while reading, and a key seen twice is visible. Both hand the
// top-level members to EnvelopeMembers (envelope/members.hpp), the one statement of the field
// rules. A number is read by its written value (envelope/json_number.hpp), not only by its
// nearest double.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "envelope/json_number.hpp"
#include "envelope/members.hpp"
#include "envelope/readers.hpp"
#include "envelope/sax.hpp"
#include "recourse/envelope.hpp"

namespace recourse {

namespace detail {

double written_double(double nearest, std::string_view token) {
  if (!std::isfinite(nearest) || std::trunc(nearest) != nearest) return nearest;
  const bool negative = !token.empty() && token.front() == '-';
  // The written value is digits * 10^exponent, digits without leading zeros.
  std::string digits;
  std::int64_t exponent = 0;
  std::size_t i = negative ? 1 : 0;
  for (bool fraction = false; i < token.size() && token[i] != 'e' && token[i] != 'E'; ++i) {
    if (token[i] == '.') {
      fraction = true;
      continue;
    }
    if (!digits.empty() || token[i] != '0') digits += token[i];
    if (fraction) --exponent;
  }
  if (digits.empty()) return nearest;  // zero, however written
  if (i < token.size()) {              // the exponent, saturating far beyond any double
    const bool down = i + 1 < token.size() && token[i + 1] == '-';
    std::int64_t e = 0;
    for (++i; i < token.size(); ++i)
      if (token[i] >= '0' && token[i] <= '9' && e < 100'000'000) e = e * 10 + (token[i] - '0');
    exponent += down ? -e : e;
  }
  // Its whole part (digits, no leading zeros) and whether a fraction is left over.
  std::string whole;
  bool fraction = false;
  if (exponent >= 0) {
    whole = digits + std::string(static_cast<std::size_t>(exponent), '0');
  } else if (const std::int64_t k = static_cast<std::int64_t>(digits.size()) + exponent; k > 0) {
    whole = digits.substr(0, static_cast<std::size_t>(k));
    fraction = digits.find_first_not_of('0', static_cast<std::size_t>(k)) != std::string::npos;
  } else {
    fraction = true;
  }
  std::string nearest_whole = fmt::format("{:.0f}", std::fabs(nearest));
  if (nearest_whole == "0") nearest_whole.clear();
  const int order = whole.size() != nearest_whole.size()
                        ? (whole.size() < nearest_whole.size() ? -1 : 1)
                        : whole.compare(nearest_whole);
  const double inf = std::numeric_limits<double>::infinity();
  if (order > 0 || (order == 0 && fraction))  // farther from zero than `nearest`
    return std::nextafter(nearest, negative ? -inf : inf);
  // Nearer zero than `nearest`: the next double towards zero keeps the ceiling below 2^53;
  // beyond, where every double is whole, that double would be below the written value, and
  // `nearest` is the least double above it.
  if (order < 0 && std::fabs(nearest) < 9007199254740992.0)
    return std::nextafter(nearest, negative ? -0.0 : 0.0);
  return nearest;
}

}  // namespace detail

namespace {

// The portable reader: nlohmann's SAX events, the top-level object's members handed to
// EnvelopeMembers. It checks what only a reader sees: the top level is an object, and nesting
// (unknown keys' values included) stays within max_depth.
class Reader : public nlohmann::json_sax<nlohmann::json> {
 public:
  Reader(const ReaderLimits& limits, Envelope& out, detail::SaxErrors& errors)
      : limits_(limits), members_(limits, out), errors_(errors) {}

  bool null() override {
    return scalar([&] { members_.null(); });
  }
  bool boolean(bool v) override {
    return scalar([&] { members_.boolean(v); });
  }
  bool number_integer(number_integer_t v) override {
    return scalar([&] { members_.integer(v); });
  }
  bool number_unsigned(number_unsigned_t v) override {
    return scalar([&] { members_.unsigned_integer(v); });
  }
  bool number_float(number_float_t v, const string_t& token) override {
    return scalar([&] { members_.floating(v, token); });
  }
  bool string(string_t& v) override {
    return scalar([&] { members_.string(v); });
  }
  bool binary(binary_t&) override { return true; }  // JSON text has none (CBOR and the like)
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return not_an_object();
    return open();
  }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (depth_ == 1) members_.key(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) override {
    return errors_.record(position, token, e);
  }

 private:
  // A scalar at the top level is not an envelope; nested deeper it is skipped.
  template <typename F>
  bool scalar(F&& handle) {
    if (depth_ == 0) return not_an_object();
    if (depth_ == 1) handle();
    return true;
  }
  bool open() {
    if (depth_ == 1) members_.container();
    if (++depth_ > limits_.max_depth) {
      errors_.error =
          "envelope nested deeper than " + std::to_string(limits_.max_depth) + " levels";
      return false;
    }
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  bool not_an_object() {
    errors_.error = "an envelope is a JSON object";
    return false;
  }

  const ReaderLimits& limits_;
  detail::EnvelopeMembers members_;
  detail::SaxErrors& errors_;
  std::size_t depth_ = 0;
};

// A failure N001 with `reason`; with no memory even for the reason, an envelope with every
// field absent, the safe reading.
Result<Envelope> unreadable(std::string reason) noexcept {
  try {
    return Result<Envelope>::failure(error_diagnostic("N001", std::move(reason)));
  } catch (...) {
    return Envelope{};
  }
}

}  // namespace

Result<Envelope> detail::read_envelope_portable(std::string_view json,
                                                const ReaderLimits& limits) noexcept {
  std::string error;
  try {
    Envelope out;
    error =
        detail::sax_read(json, "envelope", limits.max_bytes, limits.max_overflow_numbers,
                         [&](std::string_view input, detail::SaxErrors& errors) {
                           out = Envelope{};
                           Reader reader(limits, out, errors);
                           return nlohmann::json::sax_parse(input.begin(), input.end(), &reader);
                         });
    if (error.empty()) return out;
  } catch (const std::exception& e) {
    error = std::string("envelope could not be read: ") + e.what();
  } catch (...) {
    error = "envelope could not be read";
  }
  return unreadable(std::move(error));
}

Result<Envelope> read_envelope(std::string_view json, const ReaderLimits& limits) noexcept {
  try {
    Envelope out;
    if (detail::read_envelope_simd(json, limits, out)) return out;
  } catch (...) {
    return unreadable("envelope could not be read");  // only allocation fails
  }
  return detail::read_envelope_portable(json, limits);
}

}  // namespace recourse
