// Model-facing text: what the next model turn may read about a failure.
//
// Input: an envelope (untrusted: its message and suggestion are whatever the tool's server
// wrote). Output: one line of plain text, derived from message, field and suggestion, that
// exposes the recovery surface and not the server's internals (seed 000). Four passes, each on
// the output of the one before:
//   1. strip: invalid UTF-8, ANSI escape sequences (CSI, OSC, other ESC sequences), C0 and C1
//      controls, and invisible Unicode used to hide text (zero-width, bidi overrides, tag
//      characters); then HTML comments, script and style blocks and tags (twice, around entity
//      decoding, so "&lt;script&gt;" cannot smuggle a tag through); then runs of white space;
//   2. redact likely secrets: "Bearer <token>", known key prefixes (sk-, sk_live_, ghp_,
//      github_pat_, glpat-, xox?-, AKIA, AIza, JWTs), passwords in URLs, secret=value pairs, and
//      long mixed-case alphanumeric tokens;
//   3. flag instruction-like text: the steering detector (steering.hpp) reads the message, the
//      field and the suggestion as the server wrote them (so markup or invisible characters
//      cannot hide a phrase from it); when it finds a category, the text is kept, marked with
//      the categories, and ModelText::instruction_like and ::steering are set so a host can
//      withhold it;
//   4. cap at max_bytes on a character boundary.
// Hand-written scanners, no std::regex: linear time and no recursion on hostile input.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

#include "envelope/redact.hpp"
#include "envelope/steering.hpp"
#include "recourse/adapters.hpp"
#include "source/utf8.hpp"

namespace recourse {
namespace {

constexpr std::string_view kRedacted = "[redacted]";
constexpr std::string_view kFlag = "[flagged: instruction-like text from the tool: ";

// Pass 1a: controls, escapes and invisible characters. Tabs and line breaks become spaces.
std::string strip_controls(std::string_view s, bool& stripped) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = detail::decode_utf8(s, i, cp);
    if (n == 0) {
      stripped = true;
      ++i;
      continue;
    }
    if (cp == 0x1b || cp == 0x9b) {  // ESC, or the C1 CSI
      stripped = true;
      std::size_t j = i + n;
      const char kind = cp == 0x9b ? '[' : j < s.size() ? s[j++] : '\0';
      if (kind == '[') {  // CSI: parameters, then one final byte in 0x40..0x7e
        while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7e)) ++j;
        if (j < s.size()) ++j;
      } else if (kind == ']' || kind == 'P' || kind == 'X' || kind == '^' || kind == '_') {
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (ESC \)
        while (j < s.size() && s[j] != '\x07' &&
               !(s[j] == '\x1b' && j + 1 < s.size() && s[j + 1] == '\\'))
          ++j;
        if (j < s.size()) j += s[j] == '\x07' ? 1 : 2;
      }
      i = j;
      continue;
    }
    if (cp == '\t' || cp == '\n' || cp == '\r') {
      out += ' ';
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
               detail::invisible_code_point(cp)) {
      stripped = true;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

bool starts_with_ci(std::string_view s, std::size_t i, std::string_view prefix) {
  if (i + prefix.size() > s.size()) return false;
  for (std::size_t k = 0; k < prefix.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(s[i + k])) != prefix[k]) return false;
  return true;
}

std::size_t find_ci(std::string_view s, std::size_t from, std::string_view needle) {
  for (std::size_t i = from; i + needle.size() <= s.size(); ++i)
    if (starts_with_ci(s, i, needle)) return i;
  return std::string_view::npos;
}

// Pass 1b: HTML comments, script/style blocks and tags. A '<' that does not open a tag (no
// letter, '/' or '!' after it, or no '>' within 1000 bytes) is kept: "a < b" is text.
std::string strip_html(std::string_view s, bool& stripped) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] != '<' || i + 1 >= s.size()) {
      out += s[i++];
      continue;
    }
    if (s.substr(i, 4) == "<!--") {
      const std::size_t end = s.find("-->", i + 4);
      i = end == std::string_view::npos ? s.size() : end + 3;
      stripped = true;
      out += ' ';
      continue;
    }
    const char next = s[i + 1];
    const bool opens =
        std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' || next == '?';
    const std::size_t close = s.find('>', i + 1);
    if (!opens || close == std::string_view::npos || close - i > 1000) {
      out += s[i++];
      continue;
    }
    stripped = true;
    for (std::string_view block : {"script", "style"}) {
      if (starts_with_ci(s, i + 1, block)) {
        const std::size_t end = find_ci(s, close, std::string("</") + std::string(block));
        if (end != std::string_view::npos) {
          const std::size_t end_close = s.find('>', end);
          i = end_close == std::string_view::npos ? s.size() : end_close;
        } else {
          i = s.size() - 1;
        }
        break;
      }
    }
    if (i < close) i = close;
    ++i;
    out += ' ';
  }
  return out;
}

// The common named entities and numeric ones (ASCII only; others stay as written).
std::string decode_entities(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  static constexpr std::array<std::pair<std::string_view, char>, 7> kNamed = {{{"&amp;", '&'},
                                                                               {"&lt;", '<'},
                                                                               {"&gt;", '>'},
                                                                               {"&quot;", '"'},
                                                                               {"&#39;", '\''},
                                                                               {"&apos;", '\''},
                                                                               {"&nbsp;", ' '}}};
  for (std::size_t i = 0; i < s.size();) {
    bool done = false;
    if (s[i] == '&') {
      for (const auto& [name, c] : kNamed)
        if (starts_with_ci(s, i, name)) {
          out += c;
          i += name.size();
          done = true;
          break;
        }
      if (!done && i + 2 < s.size() && s[i + 1] == '#') {
        const bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
        std::size_t j = i + (hex ? 3 : 2);
        unsigned value = 0;
        const std::size_t start = j;
        while (j < s.size() && j - start < 6 &&
               (hex ? std::isxdigit(static_cast<unsigned char>(s[j]))
                    : std::isdigit(static_cast<unsigned char>(s[j])))) {
          value = value * (hex ? 16 : 10) +
                  static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(s[j]))
                                            ? s[j] - '0'
                                            : std::tolower(static_cast<unsigned char>(s[j])) - 'a' +
                                                  10);
          ++j;
        }
        if (j > start && j < s.size() && s[j] == ';' && value >= 0x20 && value < 0x7f) {
          out += static_cast<char>(value);
          i = j + 1;
          done = true;
        }
      }
    }
    if (!done) out += s[i++];
  }
  return out;
}

std::string collapse_spaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string clean(std::string_view s, bool& stripped) {
  std::string text = strip_controls(s, stripped);
  text = strip_html(text, stripped);
  text = strip_html(decode_entities(text), stripped);
  return collapse_spaces(text);
}

// ---- secrets ---------------------------------------------------------------------------------

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == '+' || c == '/' || c == '=' || c == '~';
}

bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// Known credential shapes, at the start of a token.
bool secret_token(std::string_view t) {
  struct Prefix {
    std::string_view prefix;
    std::size_t min_rest;
  };
  static constexpr std::array<Prefix, 20> kPrefixes = {
      {{"sk-", 16},   {"sk_live_", 8},     {"sk_test_", 8}, {"rk_live_", 8}, {"rk_test_", 8},
       {"whsec_", 8}, {"ghp_", 20},        {"gho_", 20},    {"ghu_", 20},    {"ghs_", 20},
       {"ghr_", 20},  {"github_pat_", 20}, {"glpat-", 16},  {"xoxb-", 8},    {"xoxp-", 8},
       {"xoxa-", 8},  {"xoxr-", 8},        {"xoxs-", 8},    {"AIza", 30},    {"hf_", 20}}};
  for (const auto& p : kPrefixes)
    if (t.size() >= p.prefix.size() + p.min_rest && t.substr(0, p.prefix.size()) == p.prefix)
      return true;
  // AWS access key ids: AKIA/ASIA and 16 upper-case letters or digits.
  if (t.size() >= 20 && (t.substr(0, 4) == "AKIA" || t.substr(0, 4) == "ASIA") &&
      std::all_of(t.begin() + 4, t.begin() + 20, [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) ||
               std::isdigit(static_cast<unsigned char>(c));
      }))
    return true;
  // A JWT: three base64url parts, the first a JSON header ("eyJ").
  if (t.size() >= 20 && t.substr(0, 3) == "eyJ" && std::count(t.begin(), t.end(), '.') == 2)
    return true;
  // A long random-looking token: upper and lower case letters and digits, no path separators.
  if (t.size() >= 32 && t.find('/') == std::string_view::npos) {
    bool upper = false, lower_case = false, digit = false;
    for (char c : t) {
      upper |= std::isupper(static_cast<unsigned char>(c)) != 0;
      lower_case |= std::islower(static_cast<unsigned char>(c)) != 0;
      digit |= std::isdigit(static_cast<unsigned char>(c)) != 0;
    }
    if (upper && lower_case && digit) return true;
  }
  return false;
}

constexpr std::array<std::string_view, 18> kSecretKeys = {
    "password",     "passwd",        "pwd",         "secret",    "client_secret", "token",
    "access_token", "refresh_token", "id_token",    "api_key",   "apikey",        "api-key",
    "x-api-key",    "authorization", "private_key", "sessionid", "cookie",        "auth"};

std::string redact(std::string_view s, bool& redacted) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  auto emit_redacted = [&] {
    out += kRedacted;
    redacted = true;
  };
  while (i < s.size()) {
    const bool word_start = i == 0 || !key_char(s[i - 1]);
    // "Bearer xyz", "Basic xyz", "Token xyz"
    if (word_start) {
      bool scheme = false;
      for (std::string_view w : {"bearer ", "basic ", "token "}) {
        if (!starts_with_ci(s, i, w)) continue;
        std::size_t j = i + w.size();
        while (j < s.size() && s[j] == ' ') ++j;
        std::size_t end = j;
        while (end < s.size() && token_char(s[end])) ++end;
        // A credential has digits or a known shape; "Basic authentication" is words.
        const std::string_view t = s.substr(j, end - j);
        const bool digits = std::any_of(
            t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        if (t.size() >= 8 && (digits || secret_token(t))) {
          out.append(s.substr(i, j - i));
          emit_redacted();
          i = end;
          scheme = true;
        }
        break;
      }
      if (scheme) continue;
      // key=value, key: value, "key": "value"
      bool pair = false;
      for (std::string_view key : kSecretKeys) {
        if (!starts_with_ci(s, i, key)) continue;
        std::size_t j = i + key.size();
        if (j < s.size() && key_char(s[j])) continue;  // a longer word
        std::size_t k = j;
        if (k < s.size() && (s[k] == '"' || s[k] == '\'')) ++k;
        while (k < s.size() && s[k] == ' ') ++k;
        if (k >= s.size() || (s[k] != '=' && s[k] != ':')) continue;
        ++k;
        while (k < s.size() && (s[k] == ' ' || s[k] == '"' || s[k] == '\'')) ++k;
        std::size_t end = k;
        while (end < s.size() && s[end] != ' ' && s[end] != '&' && s[end] != ',' && s[end] != ';' &&
               s[end] != '"' && s[end] != '\'')
          ++end;
        if (end == k || s.substr(k, end - k) == kRedacted) continue;
        // "Authorization: Bearer xyz": the credential is the scheme and the token after it.
        for (std::string_view w : {"bearer", "basic", "token", "digest"})
          if (end - k == w.size() && starts_with_ci(s, k, w) && end < s.size() && s[end] == ' ') {
            ++end;
            while (end < s.size() && token_char(s[end])) ++end;
            break;
          }
        out.append(s.substr(i, k - i));
        emit_redacted();
        i = end;
        pair = true;
        break;
      }
      if (pair) continue;
    }
    // scheme://user:password@host
    if (s.substr(i, 3) == "://") {
      std::size_t end = i + 3;
      while (end < s.size() && s[end] != '/' && s[end] != ' ' && s[end] != '?' && s[end] != '#')
        ++end;
      const std::string_view authority = s.substr(i + 3, end - i - 3);
      const std::size_t at = authority.rfind('@');
      const std::size_t colon = authority.find(':');
      if (at != std::string_view::npos && colon != std::string_view::npos && colon < at) {
        out.append(s.substr(i, 3 + colon + 1));
        emit_redacted();
        out.append(authority.substr(at));
        i = end;
        continue;
      }
    }
    // A token with a known credential shape.
    if (token_char(s[i]) && (i == 0 || !token_char(s[i - 1]))) {
      std::size_t end = i;
      while (end < s.size() && token_char(s[end])) ++end;
      std::string_view t = s.substr(i, end - i);
      while (!t.empty() && (t.back() == '.' || t.back() == '-')) t.remove_suffix(1);
      if (secret_token(t)) {
        emit_redacted();
        i += t.size();
        continue;
      }
      out.append(s.substr(i, end - i));
      i = end;
      continue;
    }
    out += s[i++];
  }
  return out;
}

// Cuts at a character boundary so that the result and "…" fit in max_bytes.
std::string cap(std::string text, std::size_t max_bytes, bool& truncated) {
  if (text.size() <= max_bytes) return text;
  truncated = true;
  constexpr std::string_view kEllipsis = "\xe2\x80\xa6";
  std::size_t end = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
  text.resize(end);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (kEllipsis.size() <= max_bytes) text += kEllipsis;
  return text;
}

}  // namespace

std::string detail::redact_text(std::string_view text, std::size_t max_bytes) {
  bool changed = false;
  return cap(redact(clean(text, changed), changed), max_bytes, changed);
}

ModelText model_text(const Envelope& e, const ModelTextOptions& options) {
  ModelText out;
  std::string message = e.message ? clean(*e.message, out.stripped) : std::string();
  if (message.empty()) {
    const std::string code = e.code ? clean(*e.code, out.stripped) : std::string();
    message = code.empty() ? "The tool call failed without a description."
                           : "The tool call failed (" + code.substr(0, 64) + ").";
  }
  std::string text = message;
  if (e.field) {
    const std::string field = clean(*e.field, out.stripped);
    if (!field.empty()) text += " Field: " + field + ".";
  }
  if (e.suggestion) {
    const std::string suggestion = clean(*e.suggestion, out.stripped);
    if (!suggestion.empty()) text += " Suggestion: " + suggestion;
  }
  text = redact(text, out.redacted);
  // A record read back from a decision log carries what the texts as received gave.
  if (e.steering) out.steering = (*e.steering & 0xffffu) | *e.steering >> 16;
  for (const auto* part : {&e.message, &e.field, &e.suggestion})
    if (*part && (!e.steering || part == &e.field))
      out.steering |= detail::scan_steering(**part, options.steering);
  out.instruction_like = out.steering != 0;
  if (out.instruction_like)
    text = std::string(kFlag) + detail::steering_names(out.steering) + "] " + text;
  out.text = cap(std::move(text), options.max_bytes, out.truncated);
  return out;
}

}  // namespace recourse
