// Grammar and parse stage: the grammar has no rule that loops without input, every bundled
// policy parses, and syntax errors point at the failing token with the grammar's message.
#include <tao/pegtl/contrib/analyze.hpp>

#include "grammar.hpp"
#include "lines.hpp"
#include "source/location.hpp"
#include "support.hpp"

namespace {

std::optional<recourse::ast::File> parse(const std::string& text,
                                         std::vector<recourse::Diagnostic>& d,
                                         std::size_t depth = 64) {
  const recourse::detail::Sources sources{{"t.recourse", text}};
  return recourse::detail::parse_source(sources, 0, depth, d);
}

recourse::Diagnostic syntax_error(const std::string& text) {
  std::vector<recourse::Diagnostic> d;
  REQUIRE_FALSE(parse(text, d).has_value());
  REQUIRE(d.size() == 1);
  return d.front();
}

}  // namespace

TEST_CASE("grammar: analyze finds no rule that can loop without consuming input", "[grammar]") {
  CHECK(tao::pegtl::analyze<recourse::grammar::file>() == 0);
}

TEST_CASE("grammar: a policy parses into the AST with positions", "[grammar]") {
  std::vector<recourse::Diagnostic> d;
  auto file = parse(
      "version 1\n"
      "policy \"p\" {\n"
      "  tool { idempotent = false arguments = [a, \"b\"] }\n"
      "  backoff exponential base 250ms factor 1.5 max 20s jitter full\n"
      "  codes { X, Y }\n"
      "  rule r when not (code in [X, Y] or retryable) and field in arguments -> replace \"t\" "
      "\"why\"\n"
      "  default -> stop\n"
      "}\n",
      d);
  REQUIRE(file);
  REQUIRE(d.empty());
  CHECK(file->version->text == "1");
  const auto& p = file->policies.at(0);
  CHECK(p.name == "p");
  CHECK(p.tool.size() == 2);
  CHECK(p.tool[1].values.size() == 2);
  CHECK(p.tool[1].values[1].kind == recourse::ast::Value::Kind::String);
  REQUIRE(p.backoff.size() == 1);
  CHECK(p.backoff[0].params.size() == 4);
  CHECK(p.backoff[0].params[1].values[0].text == "1.5");
  CHECK(p.backoff[0].params[0].values[0].unit == "ms");
  CHECK(p.codes.size() == 2);
  REQUIRE(p.rules.size() == 1);
  const auto& r = p.rules[0];
  CHECK(r.pos.line == 6);
  CHECK(r.pos.column == 3);
  REQUIRE(r.when);
  CHECK(r.when->kind == recourse::ast::Expr::Kind::And);
  CHECK(r.when->children[0].kind == recourse::ast::Expr::Kind::Not);
  CHECK(r.when->children[0].children[0].kind == recourse::ast::Expr::Kind::Or);
  CHECK(r.when->children[1].op == recourse::ast::Op::InArguments);
  CHECK(r.route.kind == "replace");
  CHECK(r.route.args.size() == 2);
  CHECK(p.defaults.size() == 1);
}

TEST_CASE("grammar: keywords are whole words", "[grammar]") {
  std::vector<recourse::Diagnostic> d;
  // `notable` and `order` are attribute names (unknown to the checker), not `not` and `or`.
  auto file = parse("policy \"p\" { rule r when notable or order -> stop default -> stop }", d);
  REQUIRE(file);
  const auto& when = *file->policies[0].rules[0].when;
  CHECK(when.kind == recourse::ast::Expr::Kind::Or);
  CHECK(when.children[0].attr == "notable");
  CHECK(when.children[1].attr == "order");
}

TEST_CASE("grammar: syntax errors carry position and the expected token", "[grammar]") {
  SECTION("missing arrow") {
    auto d = syntax_error("policy \"p\" {\n  rule r when code == X stop\n}");
    CHECK(d.code == "E001");
    CHECK(d.line == 2);
    CHECK(d.column == 25);
    CHECK(d.message == "syntax error: expected '->' and a route (or 'when' and a condition)");
    CHECK(d.source_line == "  rule r when code == X stop");
  }
  SECTION("dangling and") {
    auto d = syntax_error("policy \"p\" { rule r when retryable and -> retry }");
    CHECK(d.line == 1);
    CHECK(d.column == 40);
    CHECK(d.message == "syntax error: expected a condition after 'not', 'and' or 'or'");
  }
  SECTION("unquoted policy name") {
    auto d = syntax_error("policy payments {}");
    CHECK(d.column == 8);
    CHECK(d.message == "syntax error: expected the policy's name as a \"string\"");
  }
  SECTION("unknown item") {
    auto d = syntax_error("policy \"p\" {\n  rules r -> stop\n}");
    CHECK(d.line == 2);
    CHECK(d.column == 3);
    CHECK(d.message ==
          "syntax error: expected a policy item (tool, limits, breaker, throttle, backoff, codes, "
          "rule, default, assert, waive, map, hit, test) or '}'");
  }
  SECTION("unterminated string") {
    auto d = syntax_error("policy \"p { default -> stop }");
    CHECK(d.code == "E001");
  }
  SECTION("rule named by a keyword") {
    auto d = syntax_error("policy \"p\" { rule default -> stop }");
    CHECK(d.message == "syntax error: expected a rule name (a name that is not a keyword)");
  }
  SECTION("a missing '}' at the end of the file") {
    // The end of a file that ends in a line break is a line of its own, with no text for a caret;
    // the error is at the end of the last line instead, and names the brace left open.
    auto d = syntax_error(
        "policy \"p\" {\n  rule r when code == TIMEOUT -> retry\n  default -> stop\n\n");
    CHECK(d.line == 3);
    CHECK(d.column == 18);
    CHECK(d.source_line == "  default -> stop");
    CHECK(d.help == "the '{' opened at line 1, column 12 is never closed");
    CHECK_THAT(recourse::to_text(d), Catch::Contains("  default -> stop\n                   ^\n"));
    // The innermost brace left open, past the braces of strings, comments and JSON.
    auto test =
        syntax_error("policy \"p\" { # {\n  test \"t {\" {\n    envelope {\"code\": \"X\"}\n");
    CHECK(test.line == 3);
    CHECK(test.help == "the '{' opened at line 2, column 14 is never closed");
  }
  SECTION("garbage after the last policy") {
    auto d = syntax_error("policy \"p\" { default -> stop }\n}");
    CHECK(d.line == 2);
    CHECK(d.message == "syntax error: expected 'policy' (or 'version' at the top of the file)");
  }
}

TEST_CASE("grammar: nesting deeper than the limit is E092, not a stack overflow", "[grammar]") {
  std::vector<recourse::Diagnostic> d;
  const std::string deep = "policy \"p\" { rule r when " + std::string(5000, '(') + "retryable" +
                           std::string(5000, ')') + " -> retry default -> stop }";
  REQUIRE_FALSE(parse(deep, d, 64));
  REQUIRE(d.size() == 1);
  CHECK(d[0].code == "E092");
  d.clear();
  const std::string nots = "policy \"p\" { rule r when " + [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "not ";
    return s;
  }() + "retryable -> retry default -> stop }";
  REQUIRE_FALSE(parse(nots, d, 64));
  CHECK(d.at(0).code == "E092");
  d.clear();
  CHECK(parse("policy \"p\" { rule r when ((((retryable)))) -> retry default -> stop }", d, 64));
}

TEST_CASE("grammar: comments and CRLF line endings", "[grammar]") {
  std::vector<recourse::Diagnostic> d;
  auto file =
      parse("# head\r\npolicy \"p\" { # trailing\r\n  default -> stop # end\r\n}\r\n# tail", d);
  REQUIRE(file);
  CHECK(file->policies[0].defaults[0].pos.line == 3);
}

TEST_CASE("grammar: lines end at LF, CR LF or CR; columns count characters", "[grammar]") {
  using recourse::grammar::line_at;
  const std::string text = "a\r\nb\rc\n\xc3\xa9x\n";  // x is byte 9, character 2 of line 4
  const recourse::grammar::Lines lines(text);
  CHECK(lines.count() == 5);     // a, b, c, éx and the empty line after the last break
  CHECK(lines.line_of(1) == 1);  // a line break belongs to the line it ends
  CHECK(lines.line_of(2) == 1);
  CHECK(lines.line_of(3) == 2);
  CHECK(lines.start(4) == 7);
  CHECK(lines.end(4) == 10);
  const recourse::ast::Pos p = lines.pos(9, 2);
  CHECK(p.line == 4);
  CHECK(p.column == 2);
  CHECK(p.offset == 9);
  CHECK(p.source == 2);
  CHECK(line_at(text, 2) == "a");
  CHECK(line_at(text, 4) == "b");
  CHECK(line_at(text, 9) == "\xc3\xa9x");
  CHECK(line_at(text, text.size()).empty());
  CHECK(line_at("no break", 100) == "no break");
  // A byte-order mark is in no line: line 1 starts after it.
  const std::string marked = "\xef\xbb\xbf\xc3\xa9x";
  CHECK(recourse::grammar::Lines(marked).pos(5, 0).column == 2);
  CHECK(recourse::grammar::Lines(marked).start(1) == 3);
  CHECK(line_at(marked, 5) == "\xc3\xa9x");
  // A comment ends at any of them.
  std::vector<recourse::Diagnostic> d;
  const auto file = parse("# head\rpolicy \"p\" { # trailing\r  default -> stop }", d);
  REQUIRE(file);
  CHECK(file->policies.at(0).defaults.at(0).pos.line == 3);
}
