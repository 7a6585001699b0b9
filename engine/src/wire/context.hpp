// The context's JSON writer (context.cpp); the reader is recourse::read_context().
#pragma once

#include <string>

#include "recourse/envelope.hpp"

namespace recourse::detail {

/// The context as one line of JSON, keys in the reader's names and one fixed order. Full
/// (`compact` false: the decision log, recourse::to_json(Context)): every field, optional ones
/// when set, texts when not empty. Compact (the inputs analysis and diff report): tool, attempt
/// and the fields set, then only what differs from a default Context. Either reads back through
/// read_context() to the same context.
std::string context_json(const Context& context, bool compact);

}  // namespace recourse::detail
