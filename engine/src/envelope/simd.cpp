// The SIMD envelope reader: simdjson's DOM parser (Debian's libsimdjson-dev), which validates the
// whole input (JSON grammar, UTF-8, nesting) before anything is read, then the top-level members
// handed to EnvelopeMembers. Whatever it cannot read exactly as the portable reader does, it
// leaves to it (readers.hpp lists what): errors, numbers beyond int64 and uint64 (whose written
// value simdjson does not keep), a retryAfterMs with a fraction or an exponent, a top level that
// is no object, and inputs over ReaderLimits::max_simd_bytes.
#include "envelope/readers.hpp"

#if RECOURSE_HAVE_SIMDJSON

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "envelope/members.hpp"

namespace recourse::detail {

const bool kHaveSimdReader = true;

namespace {

// One thread's parser and the padded copy of the input it reads (simdjson reads up to
// SIMDJSON_PADDING bytes past the end). Both grow to the largest input read on the thread, in
// powers of two, never past max_simd_bytes.
struct ThreadParser {
  simdjson::dom::parser parser;
  std::unique_ptr<char[]> buffer;
  std::size_t capacity = 0;
  std::size_t depth = 0;

  // Ready for `bytes` bytes nested at most `max_depth` deep, or false (out of memory).
  bool reserve(std::size_t bytes, std::size_t max_depth) {
    if (bytes <= capacity && max_depth == depth) return true;
    std::size_t size = std::max<std::size_t>(capacity, 1024);
    while (size < bytes) size *= 2;
    // simdjson under a limit of N never accepts more than N levels as the portable reader counts
    // them (it may refuse N levels whose innermost value is not empty; the portable reader then
    // reads them), so the same limit never lets the SIMD reader accept what the other refuses.
    if (parser.allocate(size, max_depth) != simdjson::SUCCESS) return false;
    if (size != capacity) {
      buffer = std::make_unique<char[]>(size + simdjson::SIMDJSON_PADDING);
      capacity = size;
    }
    depth = max_depth;
    return true;
  }
};

}  // namespace

bool read_envelope_simd(std::string_view json, const ReaderLimits& limits, Envelope& out) {
  if (json.size() > std::min(limits.max_bytes, limits.max_simd_bytes)) return false;
  thread_local ThreadParser state;
  if (!state.reserve(json.size(), limits.max_depth)) return false;
  std::memcpy(state.buffer.get(), json.data(), json.size());
  std::memset(state.buffer.get() + json.size(), 0, simdjson::SIMDJSON_PADDING);
  simdjson::dom::object root;
  if (state.parser.parse(state.buffer.get(), json.size(), false).get_object().get(root) !=
      simdjson::SUCCESS)
    return false;
  Envelope envelope;
  EnvelopeMembers members(limits, envelope);
  for (const simdjson::dom::key_value_pair field : root) {
    members.key(field.key);
    const simdjson::dom::element& v = field.value;
    switch (v.type()) {
      case simdjson::dom::element_type::ARRAY:
      case simdjson::dom::element_type::OBJECT:
        members.container();
        break;
      case simdjson::dom::element_type::INT64:
        members.integer(v.get_int64().value_unsafe());
        break;
      case simdjson::dom::element_type::UINT64:
        members.unsigned_integer(v.get_uint64().value_unsafe());
        break;
      case simdjson::dom::element_type::DOUBLE:
        if (members.awaits_number()) return false;  // its written value is needed
        members.floating(v.get_double().value_unsafe(), {});
        break;
      case simdjson::dom::element_type::STRING:
        members.string(v.get_string().value_unsafe());
        break;
      case simdjson::dom::element_type::BOOL:
        members.boolean(v.get_bool().value_unsafe());
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        members.null();
        break;
    }
  }
  out = std::move(envelope);
  return true;
}

}  // namespace recourse::detail

#else

namespace recourse::detail {

const bool kHaveSimdReader = false;

bool read_envelope_simd(std::string_view, const ReaderLimits&, Envelope&) {
  return false;
}

}  // namespace recourse::detail

#endif
