// The envelope's two JSON readers (envelope/envelope.cpp explains how they share the work).
// read_envelope() is the entry point; these are for it and for the fuzz target that compares
// them.
#pragma once

#include <string_view>

#include "recourse/envelope.hpp"

namespace recourse::detail {

/// Whether this build has the SIMD reader (simdjson, RECOURSE_SIMDJSON in CMakeLists.txt).
extern const bool kHaveSimdReader;

/// The SIMD reader: true, with the envelope in `out`, when `json` is a valid JSON object of at
/// most min(limits.max_bytes, limits.max_simd_bytes) bytes, nested within limits.max_depth,
/// whose numbers are all within int64 or uint64 range and whose retryAfterMs, if any, is an
/// integer; false for every other input, which the portable reader then reads (giving the
/// errors). Without simdjson in the build, always false. Throws only std::bad_alloc.
bool read_envelope_simd(std::string_view json, const ReaderLimits& limits, Envelope& out);

/// The portable reader: read_envelope()'s result for every input, with nlohmann's SAX parser.
Result<Envelope> read_envelope_portable(std::string_view json, const ReaderLimits& limits) noexcept;

}  // namespace recourse::detail
