// Entry point of the parse stage: policy text -> ast::File, or one syntax diagnostic (E001).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ast.hpp"
#include "recourse/diagnostic.hpp"

namespace recourse::grammar {

/// Parses `text` (named `path` in diagnostics). On a syntax error returns nullopt and appends
/// one E001 diagnostic at the failing position; nesting deeper than `max_depth` is E092.
std::optional<ast::File> parse(std::string_view path, std::string_view text, std::size_t max_depth,
                               std::vector<Diagnostic>& diagnostics);

/// The text of 1-based `line` in `text`, without its newline (empty when out of range).
std::string line_of(std::string_view text, std::uint32_t line);

}  // namespace recourse::grammar
