// The context's JSON writer (context.cpp); the reader is recourse::read_context().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "recourse/envelope.hpp"

namespace recourse::detail {

/// A context member's value as a reader found it, whatever the reader: the JSON reader's DOM
/// values and a binding's native objects (python/) both come here, so ContextMembers states the
/// field rules once.
struct ContextValue {
  enum class Kind : std::uint8_t {
    Null,      ///< JSON null, Python None: the member is absent
    Boolean,   ///< `boolean`
    Integer,   ///< `integer`
    Unsigned,  ///< an integer above INT64_MAX (out of every range)
    Text,      ///< `text`
    Texts,     ///< an array whose items are all strings: `texts`
    Other      ///< anything else (a fraction, an object, a mixed array): a wrong type
  };
  Kind kind = Kind::Other;
  bool boolean = false;
  std::int64_t integer = 0;
  std::string_view text;
  std::vector<std::string> texts;
};

/// The members of one context, read by read_context()'s rules (docs/language.md section 13): a
/// known key with a wrong type or range is a C001 naming it; the fields' keys and ranges are
/// model/fields.hpp's. Members are read by index (for_each_context_field()'s order, then
/// nextAttemptIdempotencyKey); a reader reads them in that order so the errors come in it.
class ContextMembers {
 public:
  /// The members read: the context's fields and nextAttemptIdempotencyKey.
  static constexpr std::size_t kCount = 33;
  /// The member named `key`, or kCount for a key the context does not know (ignored).
  static std::size_t index(std::string_view key) noexcept;
  /// The key of member `i` (< kCount).
  static std::string_view key(std::size_t i) noexcept;

  explicit ContextMembers(const ContextLimits& limits) : limits_(limits) {}
  /// Reads member `i`'s value; Null leaves the field as a default Context has it.
  void read(std::size_t i, const ContextValue& value);
  /// The context, or C001 with every error found; afterwards *this is spent.
  Result<Context> finish();

 private:
  void fail(std::string_view key, const std::string& what);
  template <typename T>
  void read_value(const ContextValue& value, std::string_view key, std::int64_t min,
                  std::int64_t max, T& out);

  const ContextLimits& limits_;
  Context context_;
  std::string next_key_;       // nextAttemptIdempotencyKey
  bool pinned_given_ = false;  // idempotencyKeyPinned was given
  std::vector<Diagnostic> errors_;
};

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
