// `recourse lsp`'s reading of a document (cli/lsp_text.cpp): LSP positions (UTF-16 code units)
// from byte offsets and back, tokens and places, file URIs. editors/test/lsp.js drives the whole
// server over its stdio.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "lsp.hpp"
#include "support.hpp"

namespace {

using recourse::cli::lsp::offset_of;
using recourse::cli::lsp::Position;
using recourse::cli::lsp::position_of;

std::pair<std::uint32_t, std::uint32_t> at(std::string_view text, std::size_t offset) {
  const Position p = position_of(text, offset);
  return {p.line, p.character};
}

// A message as the base protocol frames it.
std::string framed(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Runs `recourse lsp ARGS` on `input`; its status and stdout.
test::Run serve(const std::string& input, const std::string& args = "") {
  // One file per process and call: ctest runs the test cases as processes side by side.
  static int calls = 0;
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/recourse-lsp-test-input-" + std::to_string(::getpid()) + "-" +
                           std::to_string(++calls);
  std::ofstream(path, std::ios::binary) << input;
  const test::Run r = test::run(test::cli() + " lsp " + args + " < " + path + " 2>&1");
  std::remove(path.c_str());
  return r;
}

}  // namespace

TEST_CASE("lsp: a byte offset is a line and UTF-16 units, and back", "[lsp]") {
  // "é" is 2 bytes and 1 unit, "€" 3 bytes and 1 unit, U+1F680 4 bytes and 2 units.
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x9A\x80z\nx";
  CHECK(at(text, 0) == std::make_pair(0u, 0u));
  CHECK(at(text, 1) == std::make_pair(0u, 1u));
  CHECK(at(text, 3) == std::make_pair(0u, 2u));
  CHECK(at(text, 6) == std::make_pair(0u, 3u));
  CHECK(at(text, 10) == std::make_pair(0u, 5u));  // after the surrogate pair
  CHECK(at(text, 11) == std::make_pair(0u, 6u));  // the line break
  CHECK(at(text, 12) == std::make_pair(1u, 0u));
  CHECK(at(text, 8) == std::make_pair(0u, 3u));   // inside a sequence: its start
  CHECK(at(text, 99) == std::make_pair(1u, 1u));  // clamped to the end
  CHECK(offset_of(text, {0, 5}) == 10);
  CHECK(offset_of(text, {0, 4}) == 6);    // inside the pair: the code point's start
  CHECK(offset_of(text, {0, 99}) == 11);  // past the line: its end
  CHECK(offset_of(text, {1, 1}) == 13);
  CHECK(offset_of(text, {7, 0}) == text.size());
  for (std::size_t o : {0, 1, 3, 6, 10, 11, 12, 13})
    CHECK(offset_of(text, position_of(text, o)) == o);
}

TEST_CASE("lsp: lines end at LF, CR LF and a lone CR", "[lsp]") {
  const std::string text = "a\r\nb\rc\nd";
  CHECK(at(text, 3) == std::make_pair(1u, 0u));
  CHECK(at(text, 5) == std::make_pair(2u, 0u));
  CHECK(at(text, 7) == std::make_pair(3u, 0u));
  CHECK(at(text, 2) == std::make_pair(0u, 1u));  // between CR and LF: the line's end
  CHECK(offset_of(text, {1, 0}) == 3);
  CHECK(offset_of(text, {2, 0}) == 5);
  CHECK(offset_of(text, {3, 1}) == 8);
}

TEST_CASE("lsp: bytes that are not UTF-8 count one unit each", "[lsp]") {
  // A stray continuation byte, an overlong "/" and an encoded surrogate (U+D800).
  const std::string text = "\x80x\xC0\xAFy\xED\xA0\x80z";
  CHECK(at(text, 1) == std::make_pair(0u, 1u));
  CHECK(at(text, 4) == std::make_pair(0u, 4u));
  CHECK(at(text, 8) == std::make_pair(0u, 8u));
}

TEST_CASE("lsp: tokens, the token at an offset and a token's end", "[lsp]") {
  using recourse::cli::lsp::Token;
  const std::string text = "rule a when code==TIMEOUT -> retry \"x \\\" y\" # c\n  max 1.5s";
  const auto tokens = recourse::cli::lsp::tokenize(text);
  std::vector<std::string> words;
  for (const Token& t : tokens) words.emplace_back(t.text);
  CHECK(words == std::vector<std::string>{"rule", "a", "when", "code", "==", "TIMEOUT", "->",
                                          "retry", "\"x \\\" y\"", "max", "1.5s"});
  CHECK(tokens[8].kind == Token::String);
  CHECK(tokens[10].kind == Token::Number);
  using recourse::cli::lsp::token_at;
  CHECK(token_at(tokens, 12) == 3);  // inside `code`
  CHECK(token_at(tokens, 16) == 3);  // between `code` and `==`: the word
  CHECK(token_at(tokens, 18) == 5);  // between `==` and `TIMEOUT`: the word
  CHECK(token_at(tokens, 7) == 2);   // the start of `when`
  CHECK(token_at(tokens, 6) == 1);   // just after `a`
  CHECK(recourse::cli::lsp::token_end(text, 12) == 16);
  CHECK(recourse::cli::lsp::token_end(text, 35) == 43);  // the string, its escape included
  CHECK(recourse::cli::lsp::token_end(text, 47) == 47);  // a line break: empty
}

TEST_CASE("lsp: the place of a token: its block and item", "[lsp]") {
  const std::string text =
      "policy \"p\" {\n"
      "  limits { attempts = 3 }\n"
      "  backoff exponential base 1s\n"
      "  backoff slow { constant base 2s }\n"
      "  rule r when code == TIMEOUT -> retry with backoff slow\n"
      "  test \"t\" { envelope {\"code\": \"TIMEOUT\"} expect retry rule r }\n"
      "}\n";
  const auto tokens = recourse::cli::lsp::tokenize(text);
  const auto places = recourse::cli::lsp::places(tokens);
  REQUIRE(places.size() == tokens.size() + 1);
  CHECK(places.back().block.empty());  // every brace closed: the top of the file
  auto place = [&](std::string_view word, int nth = 0) {
    for (std::size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].text == word && nth-- == 0)
        return std::string(places[i].block) + "/" + std::string(places[i].item);
    return std::string("none");
  };
  CHECK(place("policy") == "/");
  CHECK(place("attempts") == "limits/");
  CHECK(place("base") == "policy/backoff");
  CHECK(place("constant") == "schedule/");
  CHECK(place("TIMEOUT") == "policy/rule");
  CHECK(place("slow", 1) == "policy/rule");  // `with backoff slow` stays in the rule
  CHECK(place("\"code\"") == "json/");
  CHECK(place("r", 1) == "test/expect");  // `expect ... rule r` stays in the expectation
}

TEST_CASE("lsp: file URIs and paths", "[lsp]") {
  using recourse::cli::lsp::path_of;
  using recourse::cli::lsp::uri_of;
  CHECK(path_of("file:///home/a%20b/p%C3%A9.recourse") == "/home/a b/p\xC3\xA9.recourse");
  CHECK(path_of("file://host/x.recourse") == "/x.recourse");
  CHECK(path_of("untitled:Untitled-1") == "untitled:Untitled-1");
  CHECK(uri_of("/home/a b/p\xC3\xA9.recourse") == "file:///home/a%20b/p%C3%A9.recourse");
  CHECK(path_of(uri_of("/tmp/100%/x#y?.recourse")) == "/tmp/100%/x#y?.recourse");
}

TEST_CASE("lsp: the session refuses what comes out of order, and exit's status", "[lsp]") {
  const std::string initialize =
      framed(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
  const std::string shutdown = framed(R"({"jsonrpc":"2.0","id":9,"method":"shutdown"})");
  const std::string exit = framed(R"({"jsonrpc":"2.0","method":"exit"})");
  // A request before initialize: ServerNotInitialized; exit without shutdown: status 1.
  auto early =
      serve(framed(R"({"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}})") + exit);
  CHECK(early.status == 1);
  CHECK_THAT(early.out,
             Catch::Contains(R"("error":{"code":-32002,"message":"initialize first"},"id":1)"));
  // An unknown method, params that are not what the method needs, then a clean end.
  auto session = serve(
      initialize + framed(R"({"jsonrpc":"2.0","id":2,"method":"workspace/symbol","params":{}})") +
      framed(R"({"jsonrpc":"2.0","id":3,"method":"textDocument/hover","params":{}})") + shutdown +
      framed(R"({"jsonrpc":"2.0","id":4,"method":"textDocument/hover","params":{}})") + exit);
  CHECK(session.status == 0);
  CHECK_THAT(
      session.out,
      Catch::Contains(R"("code":-32601,"message":"unsupported method workspace/symbol"},"id":2)"));
  CHECK_THAT(session.out, Catch::Contains(R"("code":-32602,"message":"invalid params: )"));
  CHECK_THAT(session.out, Catch::Contains(R"({"id":9,"jsonrpc":"2.0","result":null})"));
  CHECK_THAT(
      session.out,
      Catch::Contains(
          R"("code":-32600,"message":"the server is shut down; only exit is accepted"},"id":4)"));
  // The end of stdin without exit: status 1.
  CHECK(serve(initialize).status == 1);
}

TEST_CASE("lsp: a message past --max-message-bytes is read past and refused", "[lsp]") {
  const std::string big =
      framed(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":")" +
             std::string(200, 'a') + R"("}})");
  auto r = serve(big + framed(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{}})") +
                     framed(R"({"jsonrpc":"2.0","method":"exit"})"),
                 "--max-message-bytes 100");
  CHECK_THAT(r.out,
             Catch::Contains("a message of 264 bytes; the limit is 100 (--max-message-bytes)"));
  CHECK_THAT(r.out, Catch::Contains(R"("id":2,"jsonrpc":"2.0","result":{"capabilities")"));
  // Not JSON: a parse error, and the session goes on; no Content-Length: the stream is lost.
  auto bad = serve(framed("{") + "X-Other: 1\r\n\r\n{}");
  CHECK_THAT(bad.out, Catch::Contains(R"("code":-32700)"));
  CHECK_THAT(bad.out,
             Catch::Contains("error: lsp: a message without a readable Content-Length header"));
  CHECK(bad.status == 1);
}
