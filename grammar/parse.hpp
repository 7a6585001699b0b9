// Entry point of the parse stage: policy text -> ast::File, or the syntax error that stopped it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ast.hpp"

namespace recourse::grammar {

/// Why a text did not parse: E001, a syntax error with the grammar's "expected ..." message, or
/// E092, a condition nested deeper than the limit; at `pos`, the failing token.
struct SyntaxError {
  const char* code = "E001";
  ast::Pos pos;
  std::string message;
  std::string help;
};

/// Parses `text` (named `path`, kept in ast::File::path). On a syntax error returns nullopt and
/// sets `error`; nesting deeper than `max_depth` is E092. Every ast::Pos of the result, and of
/// the error, carries `source`, the index of this text among the sources compiled together.
std::optional<ast::File> parse(std::string_view path, std::string_view text, std::size_t max_depth,
                               std::optional<SyntaxError>& error, std::uint32_t source = 0);

}  // namespace recourse::grammar
