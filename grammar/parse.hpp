// Entry point of the parse stage: policy text -> ast::File, or one syntax diagnostic (E001).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast.hpp"
#include "recourse/diagnostic.hpp"

namespace recourse::grammar {

/// Parses `text` (named `path` in diagnostics). On a syntax error returns nullopt and appends
/// one E001 diagnostic at the failing position; nesting deeper than `max_depth` is E092. Every
/// ast::Pos of the result carries `source`, the index of this text in its compilation's Sources.
std::optional<ast::File> parse(std::string_view path, std::string_view text, std::size_t max_depth,
                               std::vector<Diagnostic>& diagnostics, std::uint32_t source = 0);

/// The text of 1-based `line` in `text`, without its newline (empty when out of range).
std::string line_of(std::string_view text, std::uint32_t line);

/// One source of a compilation: its path and text, indexed by ast::Pos::source.
struct SourceRef {
  SourceRef() = default;
  SourceRef(std::string_view path, std::string_view text) : path(path), text(text) {}
  std::string_view path;
  std::string_view text;
  /// line_of(text, line), from an index of the lines' starts built on the first call: a
  /// diagnostic per rule of a 20,000-rule file then costs no scan of the text each.
  std::string line(std::uint32_t line) const;
  mutable std::vector<std::size_t> starts;  ///< line()'s index: each line's first byte
};
using Sources = std::vector<SourceRef>;

/// Points `d` at `pos`: file, line, column and the source line for the caret. A position whose
/// source is not in `sources` leaves file and source line empty.
void locate(Diagnostic& d, const Sources& sources, ast::Pos pos);

}  // namespace recourse::grammar
