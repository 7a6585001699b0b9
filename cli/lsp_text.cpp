// `recourse lsp`: positions, tokens and places in a document (lsp.hpp).
#include <algorithm>
#include <cstring>

#include "lsp.hpp"

namespace recourse::cli::lsp {
namespace {

bool word_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}
bool line_break(char c) {
  return c == '\n' || c == '\r';
}

// The length of the UTF-8 sequence at text[i] (RFC 3629) and the UTF-16 units its code point
// takes; a byte that starts no valid sequence is one byte and one unit (U+FFFD).
std::pair<std::size_t, std::uint32_t> code_point(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  std::size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > text.size()) return {1, 1};
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return {1, 1};
  std::uint32_t cp = n == 1 ? b : b & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) cp = cp << 6 | (byte(i + k) & 0x3F);
  static constexpr std::uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLeast[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {1, 1};
  return {n, cp >= 0x10000 ? 2 : 1};
}

// The length of the line break at text[i] (2 for CR LF), 0 when there is none.
std::size_t break_at(std::string_view text, std::size_t i) {
  if (text[i] == '\n') return 1;
  if (text[i] != '\r') return 0;
  return i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
}

int hex(char c) {
  if (digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::vector<Position> positions_of(std::string_view text, const std::vector<std::size_t>& offsets) {
  std::vector<Position> out;
  out.reserve(offsets.size());
  Position p;
  std::size_t i = 0;
  for (const std::size_t wanted : offsets) {
    const std::size_t offset = std::min(wanted, text.size());
    while (i < offset) {
      if (const std::size_t b = break_at(text, i)) {
        if (i + b > offset) break;  // between CR and LF: the line's end
        ++p.line;
        p.character = 0;
        i += b;
        continue;
      }
      const auto [bytes, units] = code_point(text, i);
      if (i + bytes > offset) break;  // inside a sequence: its start
      p.character += units;
      i += bytes;
    }
    out.push_back(p);
  }
  return out;
}

Position position_of(std::string_view text, std::size_t offset) {
  return positions_of(text, {offset}).front();
}

std::size_t offset_of(std::string_view text, Position position) {
  std::size_t i = 0;
  for (std::uint32_t line = 0; line < position.line; ++line) {
    while (i < text.size() && !break_at(text, i)) ++i;
    if (i == text.size()) return i;
    i += break_at(text, i);
  }
  for (std::uint32_t units = 0; i < text.size() && !break_at(text, i);) {
    const auto [bytes, n] = code_point(text, i);
    if (units + n > position.character) break;
    units += n;
    i += bytes;
  }
  return i;
}

json to_json(Position position) {
  return {{"line", position.line}, {"character", position.character}};
}

Position position_from(const json& value) {
  return {value.at("line").get<std::uint32_t>(), value.at("character").get<std::uint32_t>()};
}

std::size_t token_end(std::string_view text, std::size_t i) {
  if (i >= text.size() || line_break(text[i])) return std::min(i, text.size());
  std::size_t j = i + 1;
  if (word_start(text[i])) {
    while (j < text.size() && word_char(text[j])) ++j;
  } else if (digit(text[i]) || (text[i] == '-' && j < text.size() && digit(text[j]))) {
    while (j < text.size() &&
           (word_char(text[j]) || (text[j] == '.' && j + 1 < text.size() && digit(text[j + 1]))))
      ++j;
  } else if (text[i] == '"') {
    while (j < text.size() && !line_break(text[j]) && text[j] != '"')
      j += text[j] == '\\' && j + 1 < text.size() && !line_break(text[j + 1]) ? 2 : 1;
    if (j < text.size() && text[j] == '"') ++j;
  } else {
    j = i + code_point(text, i).first;
  }
  return j;
}

std::vector<Token> tokenize(std::string_view text) {
  static constexpr const char* kPairs[] = {"->", "==", "!=", "<=", ">=", ".."};
  std::vector<Token> out;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && !line_break(text[i])) ++i;
    } else {
      Token t;
      t.begin = i;
      t.kind = word_start(c)                                                         ? Token::Word
               : c == '"'                                                            ? Token::String
               : digit(c) || (c == '-' && i + 1 < text.size() && digit(text[i + 1])) ? Token::Number
                                                                                     : Token::Mark;
      t.end = t.kind == Token::Mark ? i + 1 : token_end(text, i);
      if (t.kind == Token::Mark)
        for (const char* pair : kPairs)
          if (text.substr(i, 2) == pair) t.end = i + 2;
      t.text = text.substr(t.begin, t.end - t.begin);
      out.push_back(t);
      i = t.end;
    }
  }
  return out;
}

std::size_t token_at(const std::vector<Token>& tokens, std::size_t offset) {
  // The first token ending at or after the offset; a cursor right after a word is on it.
  const auto it = std::lower_bound(tokens.begin(), tokens.end(), offset,
                                   [](const Token& t, std::size_t o) { return t.end < o; });
  if (it == tokens.end() || it->begin > offset) return tokens.size();
  // Between two tokens that touch (`a==`), the word is the one meant.
  if (it->end == offset && it->kind == Token::Mark && it + 1 != tokens.end() &&
      (it + 1)->begin == offset)
    return static_cast<std::size_t>(it - tokens.begin()) + 1;
  return static_cast<std::size_t>(it - tokens.begin());
}

std::vector<Place> places(const std::vector<Token>& tokens) {
  static constexpr std::string_view kItems[] = {
      "policy",  "version", "tool", "limits",  "breaker",  "throttle",
      "backoff", "codes",   "rule", "default", "assert",   "waive",
      "map",     "hit",     "test", "expect",  "envelope", "context"};
  static constexpr std::string_view kBlocks[] = {"policy",   "tool",  "limits", "breaker",
                                                 "throttle", "codes", "test"};
  std::vector<Place> out;
  out.reserve(tokens.size() + 1);
  std::vector<Place> stack(1);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    out.push_back(stack.back());
    const Token& t = tokens[i];
    Place& top = stack.back();
    if (t.text == "{") {
      // A test's envelope and context are JSON; a brace inside them nests JSON.
      std::string_view block = top.block == "json" || top.block == "test" ? "json"
                               : top.item == "backoff"                    ? "schedule"
                                                                          : "policy";
      for (std::string_view b : kBlocks)
        if (top.item == b && top.block != "json" && top.block != "test") block = b;
      stack.push_back({block, {}});
    } else if (t.text == "}") {
      if (stack.size() > 1) stack.pop_back();
      stack.back().item = {};
    } else if (t.kind == Token::Word && top.block != "json" &&
               std::find(std::begin(kItems), std::end(kItems), t.text) != std::end(kItems)) {
      // Within a rule, `backoff` is an option of its route; within an expectation, `rule` names
      // the rule expected; neither starts an item.
      const bool option = top.item == "rule" && t.text == "backoff";
      const bool expected = top.item == "expect" && t.text == "rule";
      if (!option && !expected) top.item = t.text;
    }
  }
  out.push_back(stack.back());
  return out;
}

std::string path_of(std::string_view uri) {
  constexpr std::string_view kScheme = "file://";
  if (uri.substr(0, kScheme.size()) != kScheme) return std::string(uri);
  std::string_view rest = uri.substr(kScheme.size());
  rest = rest.substr(std::min(rest.find('/'), rest.size()));  // an authority (a host) is dropped
  std::string out;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex(rest[i + 1]) >= 0 && hex(rest[i + 2]) >= 0) {
      out += static_cast<char>(hex(rest[i + 1]) * 16 + hex(rest[i + 2]));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return out;
}

std::string uri_of(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "file://";
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || std::strchr("/-._~!$&'()*+,;=:@", c)) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace recourse::cli::lsp
