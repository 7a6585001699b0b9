// `recourse lsp`: the Language Server Protocol server's stages, shared by cli/lsp*.cpp.
//
// lsp.cpp owns the transport (JSON-RPC 2.0 messages framed by Content-Length headers on stdin
// and stdout, LSP 3.17 "Base Protocol") and the session (initialize, the open documents,
// shutdown, exit); lsp_text.cpp reads positions and tokens of a document; lsp_features.cpp
// answers with diagnostics, hover, completion, definition and formatting. Positions are LSP's:
// 0-based lines and UTF-16 code units within the line (the protocol's default encoding).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace recourse::cli::lsp {

using json = nlohmann::json;

/// An LSP position: a 0-based line and a UTF-16 code unit within it.
struct Position {
  std::uint32_t line = 0, character = 0;
};

// lsp_text.cpp

/// The position of byte `offset` of `text` (clamped to its size). Lines end at LF, CR LF or a
/// lone CR, as the language's and LSP's do; a code point above U+FFFF counts 2 units, a byte
/// that is not valid UTF-8 one (as U+FFFD).
Position position_of(std::string_view text, std::size_t offset);
/// The positions of `offsets`, ascending byte offsets of `text`, in one pass over the text.
std::vector<Position> positions_of(std::string_view text, const std::vector<std::size_t>& offsets);
/// The byte offset of `position`: a character past the line's end is the line's end, a line past
/// the last is the text's end, a position inside a surrogate pair is the code point's start.
std::size_t offset_of(std::string_view text, Position position);
/// {"line", "character"}.
json to_json(Position position);
/// Reads {"line", "character"}; throws json::exception when the members are missing or wrong.
Position position_from(const json& value);

/// One token of a policy, as grammar/grammar.hpp splits the text: a word ([A-Za-z_][A-Za-z0-9_]*),
/// a number with its unit, a string (quotes included), or one punctuation mark ("->", "==",
/// "!=", "<=", ">=", "..", or one character). Comments and whitespace are not tokens.
struct Token {
  enum Kind : std::uint8_t { Word, Number, String, Mark } kind = Mark;
  std::size_t begin = 0, end = 0;  ///< byte offsets, [begin, end)
  std::string_view text;
};
/// The tokens of `text`, in order. Never fails: a string without its closing quote ends at the
/// line's end, a byte no token starts with is a one-byte mark.
std::vector<Token> tokenize(std::string_view text);

/// Where a token stands: the innermost block around it (`tool`, `limits`, `breaker`, `throttle`,
/// `codes`, `policy`, `schedule` for a named backoff, `test`, `json` inside a test's envelope or
/// context, or empty at the top of the file) and the item keyword it follows within that block
/// (`rule`, `backoff`, `assert`, `waive`, `map`, `hit`, `default`, `expect`, ... or empty).
struct Place {
  std::string_view block;  ///< a literal, or empty
  std::string_view item;   ///< the keyword's text in the document, or empty
};
/// The place of every token of `tokens`, and one more for the end of the text: element i is the
/// place of token i, from the tokens before it. One pass over the tokens.
std::vector<Place> places(const std::vector<Token>& tokens);

/// The index of the token that holds byte `offset` or ends at it (a cursor just after a word
/// is on it), or tokens.size() when none does.
std::size_t token_at(const std::vector<Token>& tokens, std::size_t offset);

/// The end of the token that starts at byte `offset` of `text` (a word, a number, a string, one
/// code point), the end of the line at most; `offset` itself at a line break or the text's end.
std::size_t token_end(std::string_view text, std::size_t offset);

/// The file path of a `file://` URI (RFC 8089, percent-decoding per RFC 3986); the URI itself,
/// unchanged, for any other scheme.
std::string path_of(std::string_view uri);
/// The `file://` URI of an absolute path, percent-encoding what RFC 3986 does not allow.
std::string uri_of(std::string_view path);

// lsp_features.cpp

/// An open document.
struct Document {
  std::string uri;
  std::string path;  ///< path_of(uri): the file's path in diagnostics and for its bases
  std::string text;
  std::int64_t version = 0;
};

/// The document's diagnostics as LSP Diagnostic objects: everything compile_file() reports
/// (check's diagnostics), each at the range of the token at its byte offset, with its code,
/// help and witness; one from another file (a base) at the document's start, naming its place.
json diagnostics(const Document& document, const CompileOptions& options);
/// textDocument/hover: a Hover or null.
json hover(const Document& document, Position position, const CompileOptions& options);
/// textDocument/completion: a list of CompletionItems for the place of `position`.
json completion(const Document& document, Position position, const CompileOptions& options);
/// textDocument/definition: a Location or null.
json definition(const Document& document, Position position, const CompileOptions& options);
/// textDocument/formatting: the TextEdits that turn the text into format()'s, [] when it is
/// already formatted, or null when format() refuses it (its diagnostics say why).
json formatting(const Document& document, const CompileOptions& options);

// lsp.cpp

/// Runs the server on `in` and `out` until `exit` or the end of `in`; returns the exit status
/// (0 after shutdown, 1 otherwise, as LSP's `exit` says).
int serve(std::istream& in, std::ostream& out, const LspLimits& limits,
          const CompileOptions& options);

}  // namespace recourse::cli::lsp
