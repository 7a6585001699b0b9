// Formatting policy text: the canonical layout that `recourse fmt` writes.
//
// format() parses the text (a file that does not parse is never formatted) and prints its AST
// in one canonical layout, keeping every comment; docs/language.md ("Formatting") gives the
// rules. The result is idempotent (format(format(x)) == format(x)) and compiles to the same
// policies as the input (the same Policy::hash()).
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
/// would not give back the same policies or comments. Never throws.
std::optional<std::string> format(std::string_view text, std::vector<Diagnostic>& diagnostics,
                                  std::string_view path = "", const CompileOptions& options = {});

}  // namespace recourse
