// Formatting policy text: the canonical layout that `recourse fmt` writes.
//
// format() parses the text (a file that does not parse is never formatted) and prints its AST
// in one canonical layout, keeping every comment; docs/language.md ("Formatting") gives the
// rules. The result is idempotent (format(format(x)) == format(x)) and compiles to the same
// policies as the input (the same Policy::hash()): format() checks that with verify_format()
// and returns no text that would compile otherwise or exceed the size limit.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recourse/diagnostic.hpp"
#include "recourse/policy.hpp"

namespace recourse {

/// The canonical form of one .recourse file's text, or nullopt with diagnostics (`path` names
/// the file in them): a syntax error (E001), nesting beyond options.max_depth (E092), a text
/// beyond options.max_source_bytes (E090), or an internal error (E099) when the printed text
/// would not give back the same policies or comments; a printed text that differs from `text`
/// must also pass verify_format(text, printed, diagnostics, path, options), which may read the
/// files of bases beside `path`. Never throws.
std::optional<std::string> format(std::string_view text, std::vector<Diagnostic>& diagnostics,
                                  std::string_view path = "", const CompileOptions& options = {});

/// Whether `formatted` may replace `original`, the text of the file at `path`: true when it
/// fits in options.max_source_bytes and compiles as `original` does. Both are compiled as
/// compile_paths() would compile that file alone (bases named by `extends` read from
/// NAME.recourse beside `path`; the analysis left out, as it changes no table) and must give
/// the same policies with the same decision tables (names and Policy::hash(), which covers the
/// settings and the rows but not source positions), or, when `original` does not compile, the
/// same errors (codes and messages). Otherwise false, with one diagnostic naming `path`: E090
/// when the formatted text would exceed the limit (its size and the limit), E099 naming the
/// first policy or error that differs. Never throws.
bool verify_format(std::string_view original, std::string_view formatted,
                   std::vector<Diagnostic>& diagnostics, std::string_view path = "",
                   const CompileOptions& options = {});

}  // namespace recourse
