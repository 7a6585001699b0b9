// The AST as policy text: the one printer of literals, values and conditions, used by
// `recourse fmt` (engine/src/tools/format.cpp) and by the checker for the condition text that
// dumps, `explain` and reports show, so all of them print a condition alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ast.hpp"

namespace recourse::grammar {

/// `s` as a string literal of the language: quotes, `\"` and `\\` escaped, newline and tab as
/// `\n` and `\t` (the escapes parse.cpp reads back); every other byte as it is.
std::string quote_literal(std::string_view s);

/// A value as written: a string literal quoted, a number with its unit, a name as it is.
std::string value_text(const ast::Value& v);

/// `[a, b, c]`.
std::string list_text(const std::vector<ast::Value>& values);

/// A condition with the fewest parentheses that keep its meaning: `not` binds tightest, then
/// `and`, then `or` (`a or (b or c)` prints as `a or b or c`).
std::string condition_text(const ast::Expr& e);

}  // namespace recourse::grammar
