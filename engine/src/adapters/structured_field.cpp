// The List parser of RFC 9651 section 4.2, one function per algorithm of that section, named
// and ordered as there (4.2.1 List, 4.2.1.1 Item or Inner List, 4.2.1.2 Inner List, 4.2.3
// Item, 4.2.3.1 Bare Item, 4.2.3.2 Parameters, 4.2.3.3 Key, 4.2.4 Integer or Decimal, 4.2.5
// String, 4.2.6 Token, 4.2.7 Byte Sequence, 4.2.8 Boolean, 4.2.9 Date, 4.2.10 Display String).
#include "adapters/structured_field.hpp"

#include "source/utf8.hpp"

namespace recourse::detail::adapt {

const SfBareItem* SfMember::parameter(std::string_view key) const {
  for (const auto& [k, v] : parameters)
    if (k == key) return &v;
  return nullptr;
}

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_lcalpha(char c) {
  return c >= 'a' && c <= 'z';
}
// tchar (RFC 9110 section 5.6.2).
bool is_tchar(char c) {
  return is_alpha(c) || is_digit(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}
bool is_base64(char c) {
  return is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=';
}
bool is_lchex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f');
}
int hex_value(char c) {
  return is_digit(c) ? c - '0' : c - 'a' + 10;
}

// The input of one parse; every step reads and consumes from its front.
class Parser {
 public:
  explicit Parser(std::string_view input) : in_(input) {}

  std::optional<std::vector<SfMember>> list() {  // 4.2 and 4.2.1
    discard(" ");
    std::vector<SfMember> members;
    while (!in_.empty()) {
      SfMember m;
      if (!item_or_inner_list(m)) return std::nullopt;
      members.push_back(std::move(m));
      discard(" \t");
      if (in_.empty()) return members;
      if (!consume(',')) return std::nullopt;
      discard(" \t");
      if (in_.empty()) return std::nullopt;  // a trailing comma
    }
    return members;
  }

 private:
  bool item_or_inner_list(SfMember& m) {  // 4.2.1.1
    if (peek() == '(') return inner_list(m);
    return bare_item(m.item) && parameters(m.parameters);
  }

  bool inner_list(SfMember& m) {  // 4.2.1.2
    m.inner_list = true;
    consume('(');
    while (!in_.empty()) {
      discard(" ");
      if (consume(')')) return parameters(m.parameters);
      SfBareItem item;
      std::vector<std::pair<std::string, SfBareItem>> item_parameters;
      if (!bare_item(item) || !parameters(item_parameters)) return false;
      if (peek() != ' ' && peek() != ')') return false;
    }
    return false;
  }

  bool bare_item(SfBareItem& out) {  // 4.2.3.1
    const char c = peek();
    if (c == '-' || is_digit(c)) return integer_or_decimal(out);
    if (c == '"') return string(out);
    if (is_alpha(c) || c == '*') return token(out);
    if (c == ':') return byte_sequence(out);
    if (c == '?') return boolean(out);
    if (c == '@') return date(out);
    if (c == '%') return display_string(out);
    return false;
  }

  bool parameters(std::vector<std::pair<std::string, SfBareItem>>& out) {  // 4.2.3.2
    while (consume(';')) {
      discard(" ");
      std::string k;
      if (!key(k)) return false;
      SfBareItem value{SfType::Boolean, 1, {}};
      if (consume('=') && !bare_item(value)) return false;
      auto same = out.begin();
      while (same != out.end() && same->first != k) ++same;
      if (same != out.end())
        same->second = std::move(value);
      else
        out.emplace_back(std::move(k), std::move(value));
    }
    return true;
  }

  bool key(std::string& out) {  // 4.2.3.3
    if (!is_lcalpha(peek()) && peek() != '*') return false;
    while (!in_.empty() && (is_lcalpha(peek()) || is_digit(peek()) || peek() == '_' ||
                            peek() == '-' || peek() == '.' || peek() == '*'))
      out += take();
    return true;
  }

  bool integer_or_decimal(SfBareItem& out) {  // 4.2.4
    out.type = SfType::Integer;
    const bool negative = consume('-');
    if (!is_digit(peek())) return false;
    std::string number;
    while (!in_.empty()) {
      const char c = peek();
      if (is_digit(c)) {
        number += take();
      } else if (out.type == SfType::Integer && c == '.') {
        if (number.size() > 12) return false;
        number += take();
        out.type = SfType::Decimal;
      } else {
        break;
      }
      if (out.type == SfType::Integer && number.size() > 15) return false;
      if (out.type == SfType::Decimal && number.size() > 16) return false;
    }
    if (out.type == SfType::Integer) {
      std::int64_t value = 0;
      for (const char c : number) value = value * 10 + (c - '0');  // 15 digits fit
      out.integer = negative ? -value : value;
      return true;
    }
    const std::size_t fraction = number.size() - number.find('.') - 1;
    if (fraction == 0 || fraction > 3) return false;
    out.text = (negative ? "-" : "") + number;
    return true;
  }

  bool string(SfBareItem& out) {  // 4.2.5
    out.type = SfType::String;
    consume('"');
    while (!in_.empty()) {
      const char c = take();
      if (c == '\\') {
        if (in_.empty() || (peek() != '"' && peek() != '\\')) return false;
        out.text += take();
      } else if (c == '"') {
        return true;
      } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
        return false;
      } else {
        out.text += c;
      }
    }
    return false;
  }

  bool token(SfBareItem& out) {  // 4.2.6
    out.type = SfType::Token;
    while (!in_.empty() && (is_tchar(peek()) || peek() == ':' || peek() == '/')) out.text += take();
    return true;
  }

  bool byte_sequence(SfBareItem& out) {  // 4.2.7
    out.type = SfType::ByteSequence;
    consume(':');
    const std::size_t end = in_.find(':');
    if (end == std::string_view::npos) return false;
    out.text = std::string(in_.substr(0, end));
    in_.remove_prefix(end + 1);
    for (const char c : out.text)
      if (!is_base64(c)) return false;
    return true;
  }

  bool boolean(SfBareItem& out) {  // 4.2.8
    out.type = SfType::Boolean;
    consume('?');
    if (peek() != '0' && peek() != '1') return false;
    out.integer = take() == '1';
    return true;
  }

  bool date(SfBareItem& out) {  // 4.2.9
    consume('@');
    if (!integer_or_decimal(out) || out.type != SfType::Integer) return false;
    out.type = SfType::Date;
    return true;
  }

  bool display_string(SfBareItem& out) {  // 4.2.10
    out.type = SfType::DisplayString;
    if (in_.substr(0, 2) != "%\"") return false;
    in_.remove_prefix(2);
    while (!in_.empty()) {
      const char c = take();
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
        return false;
      if (c == '%') {
        if (in_.size() < 2 || !is_lchex(in_[0]) || !is_lchex(in_[1])) return false;
        out.text += static_cast<char>(hex_value(in_[0]) * 16 + hex_value(in_[1]));
        in_.remove_prefix(2);
      } else if (c == '"') {
        return is_valid_utf8(out.text);
      } else {
        out.text += c;
      }
    }
    return false;
  }

  char peek() const { return in_.empty() ? '\0' : in_.front(); }
  char take() {
    const char c = in_.front();
    in_.remove_prefix(1);
    return c;
  }
  bool consume(char c) {
    if (peek() != c) return false;
    in_.remove_prefix(1);
    return true;
  }
  void discard(std::string_view chars) {
    while (!in_.empty() && chars.find(in_.front()) != std::string_view::npos) in_.remove_prefix(1);
  }

  std::string_view in_;
};

}  // namespace

std::optional<std::vector<SfMember>> parse_sf_list(std::string_view field) {
  for (const char c : field)  // section 4.2 step 1: the input is ASCII
    if (static_cast<unsigned char>(c) >= 0x80) return std::nullopt;
  return Parser(field).list();
}

}  // namespace recourse::detail::adapt
