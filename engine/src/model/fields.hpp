// The fields of the Envelope and the Context: one list each, in the order the writers print
// them, naming each field's JSON key, the attribute it gives (if any) and, for integers, the
// range the host may send.
//
// Read by the context reader and writer (wire/context.cpp), the envelope writer
// (recourse::to_json(Envelope)), make_point() (eval/decide.cpp), the witness builder
// (analyze/witness.cpp), the C API's range checks and the schema test. A field whose value is
// an attribute's value needs no code anywhere else: the visitors dispatch on the member's type
// (text, flag, integer, enum, each optional or not). docs/design.md has the checklist.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "model/model.hpp"

namespace recourse::detail {

/// Upper bounds of the trusted numbers. They stay far below INT64_MAX (which means "no limit"
/// inside the engine) so no sum or difference of two of them can overflow.
inline constexpr std::int64_t kMaxCount = 1'000'000'000;       ///< counts: 1e9
inline constexpr std::int64_t kMaxMs = 1'000'000'000'000'000;  ///< ms: 1e15, 31,000 years

/// One field of the Envelope or the Context.
struct Field {
  std::string_view key;          ///< JSON key (camelCase)
  std::optional<Attr> attr;      ///< the attribute whose value this field is, if any
  std::int64_t min = 0;          ///< integers: the smallest accepted value
  std::int64_t max = kMaxCount;  ///< integers: the largest accepted value
  bool always = false;           ///< written even where only what differs is (tool, attempt)
};

/// Calls `f(field, member)` for each field of the Envelope, in to_json(Envelope)'s order;
/// `member` is a pointer to the Envelope's member. The envelope reader (envelope/envelope.cpp)
/// reads these keys with the warnings of an untrusted source.
template <typename F>
[[gnu::always_inline]] constexpr void for_each_envelope_field(F&& f) {
  f(Field{"code", Attr::Code}, &Envelope::code);
  f(Field{"message", std::nullopt}, &Envelope::message);
  f(Field{"retryable", Attr::Retryable}, &Envelope::retryable);
  f(Field{"field", Attr::Field}, &Envelope::field);
  f(Field{"suggestion", Attr::Suggestion}, &Envelope::suggestion);
  f(Field{"retryAfterMs", Attr::RetryAfter}, &Envelope::retry_after_ms);
  f(Field{"traceId", Attr::TraceId}, &Envelope::trace_id);
}

/// Calls `f(field, member)` for each field of the Context the JSON carries, in the writer's
/// order; `member` is a pointer to the Context's member. read_context() reads one more key,
/// nextAttemptIdempotencyKey, which only decides the default of idempotencyKeyPinned. Inlined
/// always, so make_point()'s visit folds to the straight-line code the fields' constants give.
template <typename F>
[[gnu::always_inline]] constexpr void for_each_context_field(F&& f) {
  f(Field{"tool", Attr::Tool, 0, 0, true}, &Context::tool);
  f(Field{"idempotent", Attr::Idempotent}, &Context::idempotent);
  f(Field{"sideEffect", Attr::SideEffect}, &Context::side_effect);
  f(Field{"attempt", Attr::Attempt, 1, kMaxCount, true}, &Context::attempt);
  f(Field{"repairs", Attr::Repairs}, &Context::repairs);
  f(Field{"elapsedMs", Attr::Elapsed, 0, kMaxMs}, &Context::elapsed_ms);
  f(Field{"arguments", std::nullopt}, &Context::arguments);
  f(Field{"maxAttempts", std::nullopt, 1}, &Context::max_attempts);
  f(Field{"deadlineMs", std::nullopt, 0, kMaxMs}, &Context::deadline_ms);
  f(Field{"operationId", std::nullopt}, &Context::operation_id);
  f(Field{"workflowId", std::nullopt}, &Context::workflow_id);
  f(Field{"endpoint", std::nullopt}, &Context::endpoint);
  f(Field{"lowerRetries", std::nullopt}, &Context::lower_retries);
  f(Field{"repeats", Attr::Repeats}, &Context::repeats);
  f(Field{"costSpent", std::nullopt}, &Context::cost_spent);
  f(Field{"idempotencyKey", std::nullopt}, &Context::idempotency_key);
  f(Field{"idempotencyKeyPinned", Attr::IdempotencyKey}, &Context::idempotency_key_pinned);
  f(Field{"circuit", Attr::Circuit}, &Context::circuit);
  f(Field{"retryThrottled", Attr::RetryThrottled}, &Context::retry_throttled);
  f(Field{"nowMs", std::nullopt, 0, kMaxMs}, &Context::now_ms);
  f(Field{"argsHash", std::nullopt}, &Context::args_hash);
  f(Field{"streamOutputEmitted", std::nullopt}, &Context::stream_output_emitted);
  f(Field{"streamDiscardSupported", std::nullopt}, &Context::stream_discard_supported);
  f(Field{"pushbackAttempt", std::nullopt}, &Context::pushback_attempt);
  f(Field{"unavailableTools", std::nullopt}, &Context::unavailable_tools);
  f(Field{"outerRetries", std::nullopt}, &Context::outer_retries);
  f(Field{"runCalls", std::nullopt}, &Context::run_calls);
  f(Field{"runCost", std::nullopt}, &Context::run_cost);
  f(Field{"runFailures", std::nullopt}, &Context::run_failures);
  f(Field{"runToolCalls", std::nullopt}, &Context::run_tool_calls);
  f(Field{"runToolCost", std::nullopt}, &Context::run_tool_cost);
  f(Field{"runToolFailures", std::nullopt}, &Context::run_tool_failures);
}

/// The side effect the gates read: output a stream already handed to the caller, which the
/// host cannot discard or supersede, is a committed effect (a resend would deliver it twice),
/// whatever the call did downstream; else the context's sideEffect (absent: unknown).
inline std::optional<SideEffect> side_effect_of(const Context& c) {
  if (c.stream_output_emitted && !c.stream_discard_supported) return SideEffect::Committed;
  return c.side_effect;
}

/// The context field with JSON key `key`. Throws std::logic_error for a key
/// for_each_context_field() does not list (a typo in the caller, never input).
inline Field context_field(std::string_view key) {
  std::optional<Field> found;
  for_each_context_field([&](const Field& field, auto) {
    if (field.key == key) found = field;
  });
  if (!found) throw std::logic_error("no context field " + std::string(key));
  return *found;
}

/// T without std::optional: the type a field's value has when present.
template <typename T>
struct Unwrap {
  using type = T;
};
template <typename T>
struct Unwrap<std::optional<T>> {
  using type = T;
};
template <typename T>
using unwrapped_t = typename Unwrap<T>::type;

/// Whether a field of type T (optional or not) can be an attribute's value: a number (0/1, a
/// count, ms, an enum id) or a text. Lists (arguments) are not; `field in arguments` is derived.
template <typename T>
inline constexpr bool kNumberField =
    std::is_arithmetic_v<unwrapped_t<T>> || std::is_enum_v<unwrapped_t<T>>;
template <typename T>
inline constexpr bool kTextField = std::is_same_v<unwrapped_t<T>, std::string>;

/// Sets a field from an attribute's value: `num` for numbers, flags and enum ids, `text` for
/// texts. The inverse of make_point() for the fields that are an attribute's value.
template <typename T>
void set_from_attribute(T& out, std::int64_t num, const std::string& text) {
  if constexpr (!std::is_same_v<T, unwrapped_t<T>>) {
    unwrapped_t<T> value{};
    set_from_attribute(value, num, text);
    out = std::move(value);
  } else if constexpr (kTextField<T>) {
    out = text;
  } else if constexpr (std::is_same_v<T, bool>) {
    out = num != 0;
  } else if constexpr (kNumberField<T>) {
    out = static_cast<T>(num);
  }
}

}  // namespace recourse::detail
