// fuzz_envelope: arbitrary bytes as envelope JSON, decided by the bundled policies
// (rules/examples).
//
// Properties:
//  - read_envelope never throws or crashes; an unreadable envelope gives the conservative stop;
//  - each of the seven fields reads as an independent oracle (nlohmann's DOM over that member's
//    text) says it should: the value as sent, or absent with a warning on that field (null,
//    wrong type, empty, oversized, negative, beyond a double, duplicated); a warning only on a
//    field that was sent and dropped; to_json(envelope) reads back to the same envelope;
//  - decide() never throws, every decision is valid (fuzz.hpp: one route, delay 0 unless retry,
//    delay within [max(min_delay, hint), caps], the guards' promises, warnings), and the table
//    agrees with the reference interpreter;
//  - a corrupted field decides exactly as the same envelope with that field removed: for every
//    field the reader dropped, and for one field of a readable envelope corrupted on purpose
//    (its value replaced by null, a wrong type, an empty or oversized string, a negative or
//    overflowing number, an object, or sent twice), the envelope and every decision equal those
//    of the text with that member deleted.
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "fuzz.hpp"

namespace {

// The envelope read, or an empty one (every field absent) when the input did not read.
const recourse::Envelope& fields(const recourse::Result<recourse::Envelope>& r) {
  static const recourse::Envelope none;
  return r.ok() ? *r : none;
}

constexpr const char* kKeys[] = {"code",       "message",      "retryable", "field",
                                 "suggestion", "retryAfterMs", "traceId"};

struct Member {
  std::size_t begin = 0, end = 0;  // the whole member, key to value
  std::size_t value = 0;           // where the value starts
  std::string key;                 // decoded
};

std::size_t skip_ws(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// The end of the string token starting at s[i] == '"'.
std::size_t string_end(std::string_view s, std::size_t i) {
  for (++i; i < s.size() && s[i] != '"'; ++i)
    if (s[i] == '\\') ++i;
  return i + 1;
}

std::size_t value_end(std::string_view s, std::size_t i) {
  if (i >= s.size()) return s.size() + 1;
  if (s[i] == '"') return string_end(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      if (s[i] == '"') {
        i = string_end(s, i);
        continue;
      }
      if (s[i] == '{' || s[i] == '[') ++depth;
      if (s[i] == '}' || s[i] == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return s.size() + 1;
  }
  while (i < s.size() && std::string_view(",}] \t\n\r").find(s[i]) == std::string_view::npos) ++i;
  return i;
}

// The top-level members of a JSON object text that read_envelope accepted.
std::vector<Member> members(std::string_view s) {
  std::vector<Member> out;
  // A UTF-8 byte-order mark before the object is skipped, as the JSON reader skips it.
  std::size_t i = skip_ws(s, s.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0);
  FUZZ_CHECK(i < s.size() && s[i] == '{', std::string(s));
  i = skip_ws(s, i + 1);
  if (i < s.size() && s[i] == '}') return out;
  while (true) {
    FUZZ_CHECK(i < s.size() && s[i] == '"', std::string(s));
    Member m;
    m.begin = i;
    const std::size_t key_end = string_end(s, i);
    FUZZ_CHECK(key_end <= s.size(), std::string(s));
    m.key = nlohmann::json::parse(s.substr(i, key_end - i)).get<std::string>();
    i = skip_ws(s, key_end);
    FUZZ_CHECK(i < s.size() && s[i] == ':', std::string(s));
    m.value = skip_ws(s, i + 1);
    m.end = value_end(s, m.value);
    FUZZ_CHECK(m.end <= s.size(), std::string(s));
    out.push_back(m);
    i = skip_ws(s, m.end);
    FUZZ_CHECK(i < s.size() && (s[i] == ',' || s[i] == '}'), std::string(s));
    if (s[i] == '}') return out;
    i = skip_ws(s, i + 1);
  }
}

// The object with every member named `key` deleted.
std::string without(std::string_view s, const std::vector<Member>& ms, std::string_view key) {
  std::string out = "{";
  for (const auto& m : ms) {
    if (m.key == key) continue;
    if (out.size() > 1) out += ',';
    out.append(s.substr(m.begin, m.end - m.begin));
  }
  return out + "}";
}

bool same_fields(const recourse::Envelope& a, const recourse::Envelope& b) {
  return a.code == b.code && a.message == b.message && a.retryable == b.retryable &&
         a.field == b.field && a.suggestion == b.suggestion &&
         a.retry_after_ms == b.retry_after_ms && a.trace_id == b.trace_id;
}

std::string show(const recourse::Result<recourse::Envelope>& r) {
  std::string s = r.ok() ? recourse::to_json(fields(r)) : "unreadable: " + r.message();
  for (const auto& w : fields(r).warnings) s += "\n  " + w.kind + " " + w.field + ": " + w.message;
  return s;
}

bool present(const recourse::Envelope& e, std::string_view key) {
  if (key == "code") return e.code.has_value();
  if (key == "message") return e.message.has_value();
  if (key == "retryable") return e.retryable.has_value();
  if (key == "field") return e.field.has_value();
  if (key == "suggestion") return e.suggestion.has_value();
  if (key == "retryAfterMs") return e.retry_after_ms.has_value();
  return e.trace_id.has_value();
}

std::size_t warnings_on(const recourse::Envelope& e, std::string_view key) {
  return static_cast<std::size_t>(std::count_if(e.warnings.begin(), e.warnings.end(),
                                                [&](const auto& w) { return w.field == key; }));
}

// The wait a JSON number with a fraction or an exponent (RFC 8259 grammar) stands for, worked
// out from its digits rather than from the double nearest to it: absent for a negative value
// (-0 is zero); else its ceiling in ms when below 2^53, and beyond, where every double is whole,
// the least double not below it (docs/language.md section 13); INT64_MAX from there on.
std::optional<std::int64_t> written_wait(std::string_view token) {
  const bool negative = token.front() == '-';
  std::string digits;  // without leading zeros
  std::int64_t exponent = 0;
  std::size_t i = negative ? 1 : 0;
  for (bool fraction = false; i < token.size() && token[i] != 'e' && token[i] != 'E'; ++i) {
    if (token[i] == '.') {
      fraction = true;
    } else {
      if (!digits.empty() || token[i] != '0') digits += token[i];
      exponent -= fraction;
    }
  }
  if (i < token.size()) {
    const bool down = token[i + 1] == '-';
    std::int64_t e = 0;
    for (++i; i < token.size(); ++i)
      if (token[i] >= '0' && token[i] <= '9' && e < 100'000'000) e = e * 10 + (token[i] - '0');
    exponent += down ? -e : e;
  }
  if (digits.empty()) return 0;  // zero, however written
  if (negative) return std::nullopt;
  const std::int64_t whole_digits = static_cast<std::int64_t>(digits.size()) + exponent;
  if (whole_digits > 19) return INT64_MAX;
  std::uint64_t whole = 0;
  bool fraction = false;
  for (std::int64_t k = 0; k < std::max<std::int64_t>(whole_digits, 0); ++k)
    whole = whole * 10 + (k < static_cast<std::int64_t>(digits.size()) ? digits[k] - '0' : 0);
  if (whole_digits < static_cast<std::int64_t>(digits.size()))
    fraction =
        digits.find_first_not_of('0', std::max<std::int64_t>(whole_digits, 0)) != std::string::npos;
  const std::uint64_t ceiling = whole + fraction;
  if (ceiling >= (std::uint64_t{1} << 63)) return INT64_MAX;
  double up = static_cast<double>(ceiling);
  if (up < 9223372036854775807.0 && static_cast<std::uint64_t>(up) < ceiling)
    up = std::nextafter(up, INFINITY);
  return up >= 9223372036854775807.0 ? INT64_MAX : static_cast<std::int64_t>(up);
}

// What the reader must make of one member sent once, by nlohmann's DOM: the value, or nullopt
// (absent, with a warning).
void oracle(std::string_view key, std::string_view text, const recourse::ReaderLimits& limits,
            const recourse::Envelope& e, const std::string& where) {
  nlohmann::json v;
  bool parsed = true;
  try {
    v = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    parsed = false;  // a number beyond a double's range (the whole text is valid JSON)
  }
  std::optional<std::string> s;
  std::optional<bool> b;
  std::optional<std::int64_t> n;
  if (parsed && v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    const bool text_field = key == "message" || key == "suggestion";
    const std::size_t cap = key == "code" ? limits.max_code_bytes
                            : text_field  ? limits.max_text_bytes
                                          : limits.max_field_bytes;
    if (key != "retryable" && key != "retryAfterMs" && t.size() <= cap &&
        (text_field || !t.empty()))
      s = t;
  } else if (parsed && v.is_boolean() && key == "retryable") {
    b = v.get<bool>();
  } else if (parsed && key == "retryAfterMs") {
    if (v.is_number_unsigned())
      n = static_cast<std::int64_t>(std::min<std::uint64_t>(v.get<std::uint64_t>(), INT64_MAX));
    else if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
      n = v.get<std::int64_t>();
    else if (v.is_number_float())
      n = written_wait(text);
  }
  const bool valid = s || b || n;
  FUZZ_CHECK(present(e, key) == valid, where);
  FUZZ_CHECK((warnings_on(e, key) == 1) == !valid, where);
  if (key == "code") FUZZ_CHECK(e.code == s, where);
  if (key == "message") FUZZ_CHECK(e.message == s, where);
  if (key == "field") FUZZ_CHECK(e.field == s, where);
  if (key == "suggestion") FUZZ_CHECK(e.suggestion == s, where);
  if (key == "traceId") FUZZ_CHECK(e.trace_id == s, where);
  if (key == "retryable") FUZZ_CHECK(e.retryable == b, where);
  if (key == "retryAfterMs") FUZZ_CHECK(e.retry_after_ms == n, where);
}

// Every bundled policy, every context: a valid decision, the same from the table and the
// interpreter.
void decide_all(const recourse::Envelope& e, const std::string& where) {
  const recourse::Bundle& bundle = fuzz::examples();
  for (const auto& policy : bundle.policies())
    for (recourse::Context c : fuzz::contexts()) {
      c.tool = std::string(policy.name());
      const auto d = bundle.decide(e, c);
      fuzz::valid_decision(d, &policy, e, c, where);
      fuzz::same_decision(policy, e, c, where);
    }
}

// The envelope with a field dropped decides exactly as the envelope without it.
void same_as_removed(const recourse::Result<recourse::Envelope>& corrupted,
                     const recourse::Result<recourse::Envelope>& removed, std::string_view key,
                     const std::string& where) {
  const std::string both =
      where + "\ncorrupted: " + show(corrupted) + "\nremoved:   " + show(removed);
  FUZZ_CHECK(corrupted.ok() && removed.ok(), both);
  FUZZ_CHECK(!present(fields(corrupted), key) && warnings_on(fields(corrupted), key) >= 1, both);
  FUZZ_CHECK(same_fields(fields(corrupted), fields(removed)), both);
  // The other fields' warnings are untouched.
  std::vector<recourse::EnvelopeWarning> rest;
  for (const auto& w : fields(corrupted).warnings)
    if (w.field != key) rest.push_back(w);
  FUZZ_CHECK(rest.size() == fields(removed).warnings.size(), both);
  for (std::size_t i = 0; i < rest.size(); ++i)
    FUZZ_CHECK(rest[i].field == fields(removed).warnings[i].field &&
                   rest[i].kind == fields(removed).warnings[i].kind,
               both);
  const recourse::Bundle& bundle = fuzz::examples();
  for (const auto& policy : bundle.policies())
    for (recourse::Context c : fuzz::contexts()) {
      c.tool = std::string(policy.name());
      const auto a = bundle.decide(fields(corrupted), c);
      const auto b = bundle.decide(fields(removed), c);
      FUZZ_CHECK(fuzz::same(a, b), both + "\n" + fuzz::describe(fields(removed), c) +
                                       "\ncorrupted " + recourse::to_json(a, fields(corrupted)) +
                                       "\nremoved   " + recourse::to_json(b, fields(removed)));
    }
}

// A bad value for `key`, picked by `pick`; the reader must drop it.
std::string corruption(std::string_view key, std::size_t pick, const recourse::ReaderLimits& l) {
  const bool number = key == "retryAfterMs", flag = key == "retryable";
  const bool text = key == "message" || key == "suggestion";
  const std::size_t cap = key == "code" ? l.max_code_bytes
                          : text        ? l.max_text_bytes
                                        : l.max_field_bytes;
  std::vector<std::string> bad = {"null", "{\"code\": \"TRANSIENT\"}", "[1, 2]", "1e999", "-1e999"};
  if (number) bad.insert(bad.end(), {"-1", "-0.5", "\"5000\"", "true", "\"\""});
  if (flag) bad.insert(bad.end(), {"\"true\"", "1", "0", "\"\""});
  if (!number && !flag) {
    bad.insert(bad.end(), {"5", "true", "-1", "\"" + std::string(cap + 1, 'A') + "\""});
    if (!text) bad.push_back("\"\"");
  }
  return bad[pick % bad.size()];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::uint64_t h = recourse::detail::fnv1a(text);
  recourse::ReaderLimits limits;
  if ((h & 7) == 0) {  // tight limits now and then, so every cap is reached
    limits.max_depth = 4;
    limits.max_code_bytes = 8;
    limits.max_field_bytes = 8;
    limits.max_text_bytes = 16;
    limits.max_overflow_numbers = 1;
  }
  const recourse::Result<recourse::Envelope> r = recourse::read_envelope(text, limits);
  const std::string where = "input: " + std::string(text.substr(0, 2000)) + "\nread: " + show(r);
  if (!r.ok()) {
    FUZZ_CHECK(!r.message().empty() && fields(r).warnings.empty() && !fields(r).code, where);
    const recourse::Bundle& bundle = fuzz::examples();
    for (const auto& policy : bundle.policies()) {
      recourse::Context c = fuzz::contexts()[0];
      c.tool = std::string(policy.name());
      const auto d = bundle.unreadable(c);
      FUZZ_CHECK(d.route == recourse::Route::Stop && (d.warnings & recourse::kUnreadableEnvelope),
                 where);
    }
    return 0;
  }

  // The reader, field by field, against the oracle.
  const std::vector<Member> ms = members(text);
  for (const char* key : kKeys) {
    std::size_t count = 0;
    const Member* one = nullptr;
    for (const auto& m : ms)
      if (m.key == key) ++count, one = &m;
    if (count == 0) {
      FUZZ_CHECK(!present(fields(r), key) && warnings_on(fields(r), key) == 0, where);
    } else if (count > 1) {
      FUZZ_CHECK(!present(fields(r), key), where);
      FUZZ_CHECK(std::count_if(
                     fields(r).warnings.begin(), fields(r).warnings.end(),
                     [&](const auto& w) { return w.field == key && w.kind == "duplicate"; }) == 1,
                 where);
    } else {
      oracle(key, text.substr(one->value, one->end - one->value), limits, fields(r), where);
    }
  }
  for (const auto& w : fields(r).warnings)
    FUZZ_CHECK(std::find(std::begin(kKeys), std::end(kKeys), w.field) != std::end(kKeys), where);
  const auto back = recourse::read_envelope(recourse::to_json(fields(r)), limits);
  FUZZ_CHECK(back.ok() && same_fields(fields(back), fields(r)) && fields(back).warnings.empty(),
             where + "\nback: " + show(back));

  decide_all(fields(r), where);

  // Each field the reader dropped: the same as the envelope without it.
  for (const char* key : kKeys)
    if (warnings_on(fields(r), key) > 0)
      same_as_removed(r, recourse::read_envelope(without(text, ms, key), limits), key,
                      where + "\ndropped: " + key);

  // One field corrupted on purpose: the same as the envelope without it.
  const char* key = kKeys[(h >> 8) % 7];
  const std::string removed_text = without(text, ms, key);
  const recourse::Result<recourse::Envelope> removed =
      recourse::read_envelope(removed_text, limits);
  std::string bad = corruption(key, static_cast<std::size_t>(h >> 16), limits);
  std::string corrupted_text = removed_text;
  corrupted_text.pop_back();
  corrupted_text += std::string(corrupted_text.size() > 1 ? "," : "") + "\"" + key + "\":" + bad;
  if ((h >> 40) & 1)  // the key twice: one valid value and the bad one, in either order
    corrupted_text += std::string(",\"") + key + "\":" +
                      (std::string(key) == "retryable"      ? "true"
                       : std::string(key) == "retryAfterMs" ? "1000"
                                                            : "\"A\"");
  corrupted_text += "}";
  const recourse::Result<recourse::Envelope> corrupted =
      recourse::read_envelope(corrupted_text, limits);
  const std::string why = where + "\ncorrupted on purpose: " + corrupted_text.substr(0, 2000) +
                          "\nremoved: " + show(removed) + "\ncorrupted: " + show(corrupted);
  FUZZ_CHECK(removed.ok(), why);
  if (corrupted.ok())
    same_as_removed(corrupted, removed, key, why);
  else  // only a whole-input limit may make the corrupted text unreadable
    FUZZ_CHECK(corrupted.message().find("the limit is") != std::string::npos ||
                   corrupted.message().find("beyond the range of a double") != std::string::npos,
               why);
  return 0;
}
