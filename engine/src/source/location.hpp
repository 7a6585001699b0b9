// Where the engine's diagnostics point: the sources of one compilation (ast::Pos::source is an
// index into them) and report(), the one place an ast::Pos becomes a located Diagnostic. Every
// stage that reports on policy text (the parser's errors, inherit, check, compile, analyze, the
// bundle, diff, fmt) goes through it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast.hpp"
#include "parse.hpp"
#include "recourse/diagnostic.hpp"

namespace recourse::detail {

/// One source of a compilation: its path and text, indexed by ast::Pos::source.
struct SourceRef {
  std::string_view path;
  std::string_view text;
};
using Sources = std::vector<SourceRef>;

/// Appends a diagnostic of `severity` and `code` at `pos`: its file, line, column and the source
/// line for the caret. A position whose source is not in `sources` leaves file and source line
/// empty; a position with line 0 (none) leaves the source line empty. Returns the diagnostic.
Diagnostic& report(std::vector<Diagnostic>& out, const Sources& sources, ast::Pos pos,
                   Severity severity, std::string code, std::string message, std::string help = {});

/// Parses sources[index] (grammar::parse()); a syntax error (E001, E092) is reported at its
/// position and gives nullopt.
std::optional<ast::File> parse_source(const Sources& sources, std::uint32_t index,
                                      std::size_t max_depth, std::vector<Diagnostic>& out);

}  // namespace recourse::detail
