// The context's JSON writer (context.cpp); the reader is recourse::read_context().
#pragma once

#include <string>

#include "recourse/envelope.hpp"

namespace recourse::detail {

/// Why `value` cannot be a string of the context ("is longer than N bytes", "is not valid
/// UTF-8"), or "" when it can: read_context() and the C API's recourse_context hold every
/// string to the same rules.
std::string context_text_problem(std::string_view value, const ContextLimits& limits);

/// The context as one line of JSON, keys in the reader's names and one fixed order. Full
/// (`compact` false: the decision log, recourse::to_json(Context)): every field, optional ones
/// when set, texts when not empty. Compact (the inputs analysis and diff report): tool, attempt
/// and the fields set, then only what differs from a default Context. Either reads back through
/// read_context() to the same context.
std::string context_json(const Context& context, bool compact);

}  // namespace recourse::detail
