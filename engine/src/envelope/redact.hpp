// The redaction of one untrusted text, shared by the model-facing text (model_text.cpp) and the
// decision log (wire/log.cpp, LogText::Redact).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace recourse::detail {

/// `text` with model_text()'s passes 1, 2 and 4 (adapters.hpp): controls, ANSI escapes,
/// invisible Unicode and HTML stripped and white space collapsed, likely secrets replaced by
/// "[redacted]", the whole cut at `max_bytes` (UTF-8 bytes, the ellipsis included) on a
/// character boundary. Pass 3 (the steering flag) is left to the caller. Idempotent: a redacted
/// text redacts to itself. Never throws on any input (std::bad_alloc aside).
std::string redact_text(std::string_view text, std::size_t max_bytes);

}  // namespace recourse::detail
