// fuzz_readers: arbitrary bytes as envelope JSON, read by both envelope readers (the SIMD one
// and the portable one, engine/src/envelope/readers.hpp) under limits drawn from the input.
//
// Properties:
//  - whenever the SIMD reader reads an input, the portable reader reads it too, to the same
//    envelope with the same warnings (kind, field and message, in the same order);
//  - read_envelope() gives the portable reader's result on every input (the envelope, the
//    warnings, or the same N001 message).
// Without simdjson in the build the first property holds trivially.
#include "envelope/readers.hpp"
#include "fuzz.hpp"

namespace {

std::string show(const recourse::Envelope& e) {
  std::string s = recourse::to_json(e);
  for (const auto& w : e.warnings) s += "\n  " + w.kind + " " + w.field + ": " + w.message;
  return s;
}

bool same(const recourse::Envelope& a, const recourse::Envelope& b) {
  if (!(a.code == b.code && a.message == b.message && a.retryable == b.retryable &&
        a.field == b.field && a.suggestion == b.suggestion &&
        a.retry_after_ms == b.retry_after_ms && a.trace_id == b.trace_id &&
        a.warnings.size() == b.warnings.size()))
    return false;
  for (std::size_t i = 0; i < a.warnings.size(); ++i)
    if (a.warnings[i].kind != b.warnings[i].kind || a.warnings[i].field != b.warnings[i].field ||
        a.warnings[i].message != b.warnings[i].message)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::uint64_t h = recourse::detail::fnv1a(text);
  recourse::ReaderLimits limits;
  if ((h & 3) == 0) {  // tight limits now and then, so every cap and the depth bound are reached
    limits.max_depth = 1 + (h >> 4) % 6;
    limits.max_code_bytes = 8;
    limits.max_field_bytes = 8;
    limits.max_text_bytes = 16;
    limits.max_overflow_numbers = 1;
    limits.max_bytes = 64 + (h >> 8) % 256;
    limits.max_simd_bytes = 32 + (h >> 16) % 256;
  }
  const recourse::Result<recourse::Envelope> portable =
      recourse::detail::read_envelope_portable(text, limits);
  const std::string where = "input: " + std::string(text.substr(0, 2000)) + "\nportable: " +
                            (portable.ok() ? show(*portable) : "unreadable: " + portable.message());
  recourse::Envelope simd;
  if (recourse::detail::read_envelope_simd(text, limits, simd)) {
    FUZZ_CHECK(portable.ok() && same(simd, *portable), where + "\nsimd: " + show(simd));
  }
  const recourse::Result<recourse::Envelope> read = recourse::read_envelope(text, limits);
  FUZZ_CHECK(read.ok() == portable.ok(), where);
  if (read.ok())
    FUZZ_CHECK(same(*read, *portable), where + "\nread_envelope: " + show(*read));
  else
    FUZZ_CHECK(read.message() == portable.message(), where + "\nread_envelope: " + read.message());
  return 0;
}
