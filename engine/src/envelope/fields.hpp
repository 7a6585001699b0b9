// The envelope reader's rules for one field at a time, for an envelope a host hands over field
// by field (the C API's recourse_envelope) rather than as JSON: the two ways in read every field
// alike.
#pragma once

#include "recourse/envelope.hpp"

namespace recourse::detail {

/// `fields` read as read_envelope() reads the same fields of JSON: a code, field or traceId that
/// is empty is dropped as "malformed", a string longer than its ReaderLimits cap as "oversized",
/// a string that is not valid UTF-8 (which JSON cannot carry) and a negative retry_after_ms as
/// "malformed"; each with the warning read_envelope() gives, in the
/// envelope's key order (code, message, retryable, field, suggestion, retryAfterMs, traceId).
/// Warnings already in `fields` stay first. Never throws but for allocation failure.
Envelope read_fields(Envelope fields, const ReaderLimits& limits = {});

}  // namespace recourse::detail
