// The Structured Fields List parser (RFC 9651 section 4.2), against vectors derived from the
// HTTP working group's structured-field-tests (list, param-list, listlist, number, string,
// token, binary, boolean, date and display-string): the same inputs and verdicts, written here
// in a compact form of our own.
#include <catch2/catch.hpp>
#include <string>

#include "adapters/structured_field.hpp"

namespace {

using recourse::detail::adapt::parse_sf_list;
using recourse::detail::adapt::SfBareItem;
using recourse::detail::adapt::SfMember;
using recourse::detail::adapt::SfType;

std::string render(const SfBareItem& v) {
  switch (v.type) {
    case SfType::Integer:
      return std::to_string(v.integer);
    case SfType::Decimal:
      return "d" + v.text;
    case SfType::String:
      return "\"" + v.text + "\"";
    case SfType::Token:
      return "t:" + v.text;
    case SfType::ByteSequence:
      return ":" + v.text + ":";
    case SfType::Boolean:
      return v.integer ? "?1" : "?0";
    case SfType::Date:
      return "@" + std::to_string(v.integer);
    case SfType::DisplayString:
      return "%\"" + v.text + "\"";
  }
  return "?";
}

// A parse in one line: members separated by " | ", an inner list as "()", parameters as ";k=v".
std::string render(const std::optional<std::vector<SfMember>>& list) {
  if (!list) return "FAIL";
  std::string out;
  for (const SfMember& m : *list) {
    if (!out.empty()) out += " | ";
    out += m.inner_list ? "()" : render(m.item);
    for (const auto& [k, v] : m.parameters) out += ";" + k + "=" + render(v);
  }
  return out;
}

}  // namespace

TEST_CASE("structured fields: lists, parameters and inner lists", "[adapters][sf]") {
  const std::vector<std::pair<std::string, std::string>> vectors = {
      // list.json
      {"1, 42", "1 | 42"},
      {"", ""},
      {"42", "42"},
      {"1,42", "1 | 42"},
      {"1 , 42", "1 | 42"},
      {"1\t,\t42", "1 | 42"},
      {"1, 42,", "FAIL"},
      {"1,,42", "FAIL"},
      {"   42   ", "42"},
      // param-list.json
      {"abc_123;a=1;b=2; cdef_456, ghi;q=9;r=\"+w\"",
       "t:abc_123;a=1;b=2;cdef_456=?1 | t:ghi;q=9;r=\"+w\""},
      {"text/html;q=1.0", "t:text/html;q=d1.0"},
      {"text/html;a;q=1.0", "t:text/html;a=?1;q=d1.0"},
      {"text/html,text/plain;q=0.5", "t:text/html | t:text/plain;q=d0.5"},
      {"text/html, text/plain;q =0.5", "FAIL"},
      {"text/html, text/plain;q= 0.5", "FAIL"},
      {"text/html, text/plain ;q=0.5", "FAIL"},
      {"text/html, text/plain; q=0.5", "t:text/html | t:text/plain;q=d0.5"},
      {"text/html  ,  text/plain;  q=0.5;  charset=utf-8",
       "t:text/html | t:text/plain;q=d0.5;charset=t:utf-8"},
      {"a;q=1;q=2", "t:a;q=2"},  // a repeated key keeps its last value, in its first place
      {"a;Q=1", "FAIL"},         // keys are lowercase
      {"a;*k-._9=1", "t:a;*k-._9=1"},
      // listlist.json and param-listlist.json
      {"(1 2), (42 43)", "() | ()"},
      {"(42)", "()"},
      {"()", "()"},
      {"(1 2);a=1, 3", "();a=1 | 3"},
      {"(1 2", "FAIL"},
      {"(1,2)", "FAIL"},
      {"(  1  2  )", "()"},
      {"(abc;a=1;b=2 cde_456)", "()"},
      // number.json (RFC 9651: at most 15 integer digits, decimals 12.3)
      {"42", "42"},
      {"00", "0"},
      {"-0", "0"},
      {"-42", "-42"},
      {"042", "42"},
      {"999999999999999", "999999999999999"},
      {"-999999999999999", "-999999999999999"},
      {"1000000000000000", "FAIL"},
      {"-a23", "FAIL"},
      {"4-2", "FAIL"},
      {"1.23", "d1.23"},
      {"-1.23", "d-1.23"},
      {"123456789012.123", "d123456789012.123"},
      {"1234567890123.0", "FAIL"},
      {"1.2345", "FAIL"},
      {"1.", "FAIL"},
      {"1.5.4", "FAIL"},
      {"1..4", "FAIL"},
      {"-", "FAIL"},
      // string.json
      {"\"foo bar\"", "\"foo bar\""},
      {"\"\"", "\"\""},
      {"\"foo \\\"bar\\\"\"", "\"foo \"bar\"\""},
      {"\"foo \\\\bar\"", "\"foo \\bar\""},
      {"\"foo \\,\"", "FAIL"},
      {"\"foo", "FAIL"},
      {"\"foo\tbar\"", "FAIL"},
      {"\"caf\xc3\xa9\"", "FAIL"},  // not ASCII
      // token.json
      {"a_b-c.d3:f%00/*", "t:a_b-c.d3:f%00/*"},
      {"*foo", "t:*foo"},
      {"3abc", "FAIL"},  // an integer followed by a token
      {"!abc", "FAIL"},
      // binary.json
      {":aGVsbG8=:", ":aGVsbG8=:"},
      {"::", "::"},
      {":aGVsbG8=", "FAIL"},
      {":aGVsb G8=:", "FAIL"},
      {":aGVsbG!8=:", "FAIL"},
      // boolean.json
      {"?1", "?1"},
      {"?0", "?0"},
      {"?2", "FAIL"},
      {"?", "FAIL"},
      {"?1;a", "?1;a=?1"},
      // date.json
      {"@1659578233", "@1659578233"},
      {"@-1659578233", "@-1659578233"},
      {"@1659578233.12", "FAIL"},
      // display-string.json
      {"%\"This is a test\"", "%\"This is a test\""},
      {"%\"f%c3%bc%c3%bc\"", "%\"f\xc3\xbc\xc3\xbc\""},
      {"%\"f%C3%BC\"", "FAIL"},  // hex digits are lowercase
      {"%\"%c3\"", "FAIL"},      // not UTF-8
      {"%\"abc", "FAIL"},
  };
  for (const auto& [input, expected] : vectors) {
    INFO("input: " << input);
    CHECK(render(parse_sf_list(input)) == expected);
  }
}
