// Diagnostics: the one record every stage and every command reports problems in.
//
// A diagnostic is data, never an exception: {severity, code, file, line, column, offset, message,
// help}, and the witness (envelope, context, route) when it shows a concrete input.
// Codes are stable (E0xx syntax and checking, W0xx warnings); tests assert on them. Rendering as
// `file:line:col: error[E012]: message`, the source line and a caret, or as JSON, is done by
// to_text() and to_json() so the CLI, editors and CI all see the same record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace recourse {

/// How bad a diagnostic is. Errors stop a policy from compiling; warnings do not (unless the
/// caller asks for strictness, as `recourse check --strict` does).
enum class Severity : std::uint8_t { Error, Warning, Note };

/// A concrete input a diagnostic is about (a counterexample, an example): the envelope and the
/// context as the JSON objects `recourse decide --envelope --context` reads, and the route that
/// decision takes ("retry", "stop", ...).
struct Witness {
  std::string envelope;  ///< a JSON object (docs/schema/envelope.schema.json)
  std::string context;   ///< a JSON object (docs/schema/context.schema.json)
  std::string route;     ///< the route the input decides
};

/// One problem found in a policy, an envelope or a context.
struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;          ///< stable identifier, e.g. "E012"
  std::string file;          ///< path as given by the caller; empty for non-file input
  std::uint32_t line = 0;    ///< 1-based; 0 when the problem has no position
  std::uint32_t column = 0;  ///< 1-based, in characters (code points); 0 when no position
  std::uint64_t offset = 0;  ///< bytes from the start of the file to the position; 0 when none
  std::string message;       ///< one sentence, no trailing period
  std::string help;          ///< how to fix it, or empty
  std::string source_line;   ///< the text of `line` (no line break), for the caret; may be empty
  std::optional<Witness> witness;  ///< the input the message is about, when it shows one
};

/// "error", "warning" or "note".
const char* to_string(Severity severity) noexcept;

/// Renders `file:line:col: error[CODE]: message` (col: the character column), then the source
/// line and a caret under the column (after column - 1 characters of the line, tabs kept), then
/// `help: ...` when present. Deterministic; ends with a newline.
std::string to_text(const Diagnostic& diagnostic);

/// Renders the list as a JSON array of {severity, code, file, line, column, offset, message,
/// help}, plus `envelope` and `context` (objects) and `route` when the diagnostic has a witness.
/// Editors that count UTF-16 code units (LSP) convert from `offset`, the byte offset.
std::string to_json(const std::vector<Diagnostic>& diagnostics);

/// `text` as a JSON string literal: quotes, backslashes and control characters escaped, bytes
/// that are not UTF-8 replaced. How text output shows a user's string on one line. Call it
/// qualified (`recourse::quoted`) where <iomanip> is included: argument-dependent lookup also
/// finds std::quoted for a std::string argument.
std::string quoted(std::string_view text);

/// True when any diagnostic is an error (or, with `strict`, a warning).
bool has_errors(const std::vector<Diagnostic>& diagnostics, bool strict = false) noexcept;

}  // namespace recourse
