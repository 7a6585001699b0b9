// The C API (recourse/recourse.h) over recourse::Engine. Every entry point catches every
// exception; structs are copied in and out by their `size`, so older callers keep working.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>

#include "envelope/fields.hpp"
#include "model/fields.hpp"
#include "recourse/recourse.h"
#include "recourse/recourse.hpp"
#include "wire/context.hpp"

struct recourse_engine {
  recourse::Engine engine;
  explicit recourse_engine(recourse::EngineOptions options) : engine({}, options) {}
};

namespace {

// The smallest `size` a caller may declare for each struct: the end of its last field in ABI 1,
// the first version (later versions append fields after it).
constexpr std::size_t kOptionsSize = offsetof(recourse_engine_options, count) + sizeof(int);
constexpr std::size_t kEnvelopeSize = offsetof(recourse_envelope, trace_id) + sizeof(const char*);
constexpr std::size_t kContextSize = offsetof(recourse_context, args_hash) + sizeof(const char*);
constexpr std::size_t kDecisionSize = offsetof(recourse_decision, internal) + sizeof(void*);

// What a recourse_decision's `internal` owns: the decision (and so its policy) and the strings
// the struct points at.
struct Held {
  recourse::Decision decision;  // its strings view `pin`'s policies
  std::shared_ptr<const recourse::Bundle> pin;
  recourse::Envelope envelope;  // for recourse_decision_json
  std::string rule, reason, target, policy, policy_hash, exhausted, trace_id;
};

char* copy(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

void set(char** out, const std::string& s) {
  if (out) *out = copy(s);
}

// Why a struct the caller passed as `name` is NULL or smaller than ABI 1's (`first` bytes), or
// empty when it is neither.
template <typename T>
std::string bad_size(const T* in, const char* name, std::size_t first) {
  if (!in) return fmt::format("{} is NULL", name);
  if (in->size < first)
    return fmt::format("{}->size is {}, below the {} bytes of ABI 1's struct", name, in->size,
                       first);
  return {};
}

// The caller's struct (checked by bad_size()), with the fields it does not know (a struct of an
// older version than this library's) left as they are in `out`.
template <typename T>
void read_sized(const T& in, T& out) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(&out, &in, std::min(in.size, sizeof(T)));
}

// Why a flag of the structs is not 0 or 1 (nor RECOURSE_UNSET, where `unset` allows it), or
// empty when it is one of those.
std::string bad_flag(int value, const char* name, bool unset) {
  if (value == 0 || value == 1 || (unset && value == RECOURSE_UNSET)) return {};
  return fmt::format("{} must be {}, not {}", name,
                     unset ? "0, 1 or RECOURSE_UNSET (-1)" : "0 or 1", value);
}

// RECOURSE_INVALID_ARGUMENT, with `why` in `error`.
recourse_status invalid(char** error, const std::string& why) {
  set(error, why);
  return RECOURSE_INVALID_ARGUMENT;
}

// Runs `body`, turning any exception into a status (and a message in `error`).
template <typename Body>
recourse_status guarded(char** error, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return RECOURSE_NO_MEMORY;
  } catch (const std::exception& e) {
    try {
      set(error, std::string("internal error: ") + e.what());
    } catch (...) {
    }
    return RECOURSE_INTERNAL;
  } catch (...) {
    return RECOURSE_INTERNAL;
  }
}

recourse_status loaded(const recourse::Result<std::uint64_t>& r, char** diagnostics) {
  if (diagnostics) *diagnostics = copy(recourse::to_json(r.diagnostics()));
  return r.ok() ? RECOURSE_OK : RECOURSE_COMPILE_FAILED;
}

std::optional<std::string> text(const char* s) {
  return s ? std::optional<std::string>(s) : std::nullopt;
}

// The struct's fields, read by the rules read_envelope() applies to the same fields of JSON.
recourse::Envelope to_envelope(const recourse_envelope& e) {
  recourse::Envelope out;
  out.code = text(e.code);
  out.message = text(e.message);
  if (e.retryable != RECOURSE_UNSET) out.retryable = e.retryable != 0;
  out.field = text(e.field);
  out.suggestion = text(e.suggestion);
  if (e.retry_after_ms != RECOURSE_ABSENT) out.retry_after_ms = e.retry_after_ms;
  out.trace_id = text(e.trace_id);
  return recourse::detail::read_fields(std::move(out));
}

// The ranges and string rules read_context() enforces on JSON (model/fields.hpp,
// context_text_problem()); false with the reason otherwise.
bool to_context(const recourse_context& c, recourse::Context& out, std::string& error) {
  auto in_range = [&](std::int64_t v, std::string_view key) {
    const recourse::detail::Field f = recourse::detail::context_field(key);
    if (v >= f.min && v <= f.max) return true;
    error = fmt::format("context.{} must be an integer in [{}, {}]", key, f.min, f.max);
    return false;
  };
  auto optional = [&](std::int64_t v, std::string_view key, std::optional<std::int64_t>& field) {
    if (v == RECOURSE_ABSENT) return true;
    field = v;
    return in_range(v, key);
  };
  if (!in_range(c.attempt, "attempt") || !in_range(c.repairs, "repairs") ||
      !in_range(c.elapsed_ms, "elapsedMs") || !in_range(c.lower_retries, "lowerRetries") ||
      !in_range(c.repeats, "repeats") || !in_range(c.cost_spent, "costSpent") ||
      !optional(c.max_attempts, "maxAttempts", out.max_attempts) ||
      !optional(c.deadline_ms, "deadlineMs", out.deadline_ms) ||
      !optional(c.now_ms, "nowMs", out.now_ms))
    return false;
  if (c.side_effect < RECOURSE_SIDE_EFFECT_UNSET || c.side_effect > RECOURSE_SIDE_EFFECT_COMMITTED)
    return error = "context.side_effect is not a recourse_side_effect", false;
  if (c.circuit < RECOURSE_CIRCUIT_CLOSED || c.circuit > RECOURSE_CIRCUIT_HALF_OPEN)
    return error = "context.circuit is not a recourse_circuit", false;
  const recourse::ContextLimits limits;
  auto text = [&](const char* value, std::string_view key, std::string& field) {
    if (!value) return true;
    field = value;
    const std::string why = recourse::detail::context_text_problem(field, limits);
    if (!why.empty()) error = fmt::format("context.{} {}", key, why);
    return why.empty();
  };
  if (c.arguments && c.argument_count > limits.max_arguments)
    return error = fmt::format("context.arguments has more than {} names", limits.max_arguments),
           false;
  if (c.arguments) {
    out.arguments.emplace();
    for (std::size_t i = 0; i < c.argument_count; ++i)
      if (c.arguments[i] && !text(c.arguments[i], "arguments", out.arguments->emplace_back()))
        return false;
  }
  if (!text(c.tool, "tool", out.tool) || !text(c.operation_id, "operationId", out.operation_id) ||
      !text(c.workflow_id, "workflowId", out.workflow_id) ||
      !text(c.idempotency_key, "idempotencyKey", out.idempotency_key) ||
      !text(c.args_hash, "argsHash", out.args_hash))
    return false;
  if (c.idempotent != RECOURSE_UNSET) out.idempotent = c.idempotent != 0;
  if (c.side_effect != RECOURSE_SIDE_EFFECT_UNSET)
    out.side_effect = static_cast<recourse::SideEffect>(c.side_effect - 1);
  out.attempt = c.attempt;
  out.repairs = c.repairs;
  out.elapsed_ms = c.elapsed_ms;
  out.lower_retries = c.lower_retries;
  out.repeats = c.repeats;
  out.cost_spent = c.cost_spent;
  out.idempotency_key_pinned = c.idempotency_key_pinned != 0;
  out.circuit = static_cast<recourse::CircuitState>(c.circuit);
  out.retry_throttled = c.retry_throttled != 0;
  out.stream_output_emitted = c.stream_output_emitted != 0;
  out.stream_discard_supported = c.stream_discard_supported != 0;
  return true;
}

void fill(Held& h, recourse_decision& out) {
  const recourse::Decision& d = h.decision;
  h.rule = d.rule;
  h.reason = d.reason;
  h.target = d.target;
  h.policy = d.policy;
  h.policy_hash = d.policy_hash;
  h.exhausted = d.exhausted;
  h.trace_id = recourse::trace_id(d, h.envelope);
  out.route = static_cast<recourse_route>(d.route);
  out.delay_ms = d.delay_ms;
  out.jitter_ms = d.jitter_ms;
  out.rule = h.rule.c_str();
  out.reason = h.reason.c_str();
  out.target = h.target.c_str();
  out.policy = h.policy.c_str();
  out.policy_hash = h.policy_hash.c_str();
  out.exhausted = h.exhausted.c_str();
  out.trace_id = h.trace_id.c_str();
  out.attempt = d.attempt;
  out.attempts_left = d.attempts_left();
  out.repairs_left = d.repairs_left();
  out.retry_after_ms = d.retry_after_ms.value_or(RECOURSE_ABSENT);
  out.retry_at_ms = d.retry_at_ms.value_or(RECOURSE_ABSENT);
  out.timeout_ms = d.timeout_ms.value_or(RECOURSE_ABSENT);
  out.warnings = d.warnings;
  out.internal = &h;
}

}  // namespace

extern "C" {

uint32_t recourse_abi_version(void) {
  return RECOURSE_ABI_VERSION;
}

const char* recourse_version(void) {
  return RECOURSE_VERSION;
}

const char* recourse_status_string(recourse_status status) {
  switch (status) {
    case RECOURSE_OK:
      return "ok";
    case RECOURSE_INVALID_ARGUMENT:
      return "invalid argument: a NULL pointer, a struct size too small or a flag not 0 or 1";
    case RECOURSE_COMPILE_FAILED:
      return "the policies did not compile; the bundle in use is kept";
    case RECOURSE_BAD_INPUT:
      return "bad input: the context is malformed";
    case RECOURSE_NO_MEMORY:
      return "out of memory";
    case RECOURSE_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

void recourse_string_free(char* string) {
  std::free(string);
}

recourse_engine* recourse_engine_new(const recourse_engine_options* options) {
  try {
    recourse::EngineOptions o;
    if (options) {
      recourse_engine_options in{};
      if (!bad_size(options, "options", kOptionsSize).empty()) return nullptr;
      read_sized(*options, in);
      if (!bad_flag(in.count, "options.count", false).empty()) return nullptr;
      o.count = in.count == 1;
    }
    return new recourse_engine(o);
  } catch (...) {
    return nullptr;
  }
}

void recourse_engine_free(recourse_engine* engine) {
  delete engine;
}

recourse_status recourse_engine_load_sources(recourse_engine* engine,
                                             const recourse_source* sources, size_t count,
                                             char** diagnostics) {
  return guarded(diagnostics, [&] {
    if (!engine || (!sources && count > 0)) return RECOURSE_INVALID_ARGUMENT;
    std::vector<recourse::Source> in;
    for (size_t i = 0; i < count; ++i) {
      if (!sources[i].text && sources[i].text_len > 0) return RECOURSE_INVALID_ARGUMENT;
      in.push_back({sources[i].path ? sources[i].path : "",
                    std::string(sources[i].text ? sources[i].text : "", sources[i].text_len)});
    }
    return loaded(engine->engine.reload(in), diagnostics);
  });
}

recourse_status recourse_engine_load_paths(recourse_engine* engine, const char* const* paths,
                                           size_t count, char** diagnostics) {
  return guarded(diagnostics, [&] {
    if (!engine || (!paths && count > 0)) return RECOURSE_INVALID_ARGUMENT;
    std::vector<std::string> in;
    for (size_t i = 0; i < count; ++i) {
      if (!paths[i]) return RECOURSE_INVALID_ARGUMENT;
      in.emplace_back(paths[i]);
    }
    return loaded(engine->engine.reload_paths(in), diagnostics);
  });
}

uint64_t recourse_engine_generation(const recourse_engine* engine) {
  return engine ? engine->engine.generation() : 0;
}

recourse_status recourse_engine_decide_json(const recourse_engine* engine,
                                            const char* envelope_json, size_t envelope_len,
                                            const char* context_json, size_t context_len,
                                            char** decision, char** error) {
  return guarded(error, [&] {
    if (!engine) return invalid(error, "engine is NULL");
    if (!decision) return invalid(error, "decision is NULL");
    if (!envelope_json && envelope_len > 0)
      return invalid(error, fmt::format("envelope_json is NULL, envelope_len {}", envelope_len));
    if (!context_json && context_len > 0)
      return invalid(error, fmt::format("context_json is NULL, context_len {}", context_len));
    recourse::Context context;
    if (context_len > 0) {
      recourse::Result<recourse::Context> c = recourse::read_context({context_json, context_len});
      if (!c.ok()) {
        std::string why;
        for (const auto& d : c.diagnostics()) why += (why.empty() ? "" : "; ") + d.message;
        set(error, why);
        return RECOURSE_BAD_INPUT;
      }
      context = std::move(*c);
    }
    const recourse::Result<recourse::Envelope> e =
        recourse::read_envelope({envelope_json ? envelope_json : "", envelope_len});
    static const recourse::Envelope unread;
    const recourse::Envelope& envelope = e.ok() ? *e : unread;
    const recourse::Decision d =
        e.ok() ? engine->engine.decide(envelope, context) : engine->engine.unreadable(context);
    *decision = copy(recourse::to_json(d, envelope));
    return *decision ? RECOURSE_OK : RECOURSE_NO_MEMORY;
  });
}

void recourse_context_init(recourse_context* context) {
  if (!context) return;
  *context = recourse_context{};
  context->size = sizeof(recourse_context);
  context->idempotent = RECOURSE_UNSET;
  context->attempt = 1;
  context->max_attempts = context->deadline_ms = context->now_ms = RECOURSE_ABSENT;
}

recourse_status recourse_engine_decide(const recourse_engine* engine,
                                       const recourse_envelope* envelope,
                                       const recourse_context* context, recourse_decision* decision,
                                       char** error) {
  return guarded(error, [&] {
    recourse_envelope e{};
    e.retryable = RECOURSE_UNSET;
    e.retry_after_ms = RECOURSE_ABSENT;
    recourse_context c;
    recourse_context_init(&c);
    if (!engine) return invalid(error, "engine is NULL");
    std::string why = bad_size(decision, "decision", kDecisionSize);
    if (why.empty()) why = bad_size(envelope, "envelope", kEnvelopeSize);
    if (why.empty()) why = bad_size(context, "context", kContextSize);
    if (!why.empty()) return invalid(error, why);
    read_sized(*envelope, e);
    read_sized(*context, c);
    for (const auto& [value, name, unset] :
         {std::tuple{e.retryable, "envelope.retryable", true},
          std::tuple{c.idempotent, "context.idempotent", true},
          std::tuple{c.idempotency_key_pinned, "context.idempotency_key_pinned", false},
          std::tuple{c.retry_throttled, "context.retry_throttled", false},
          std::tuple{c.stream_output_emitted, "context.stream_output_emitted", false},
          std::tuple{c.stream_discard_supported, "context.stream_discard_supported", false}})
      if (why = bad_flag(value, name, unset); !why.empty()) return invalid(error, why);
    recourse::Context ctx;
    if (!to_context(c, ctx, why)) {
      set(error, why);
      return RECOURSE_BAD_INPUT;
    }
    auto held = std::make_unique<Held>();
    held->envelope = to_envelope(e);
    held->decision = engine->engine.decide(held->envelope, ctx);
    held->pin = engine->engine.pinned();
    recourse_decision out{};
    fill(*held, out);
    out.size = decision->size;
    std::memcpy(decision, &out, std::min(decision->size, sizeof(recourse_decision)));
    held.release();
    return RECOURSE_OK;
  });
}

void recourse_decision_release(recourse_decision* decision) {
  if (!decision || decision->size < kDecisionSize) return;
  delete static_cast<Held*>(decision->internal);
  decision->internal = nullptr;
}

char* recourse_decision_json(const recourse_decision* decision) {
  try {
    if (!decision || decision->size < kDecisionSize || !decision->internal) return nullptr;
    const Held& h = *static_cast<const Held*>(decision->internal);
    return copy(recourse::to_json(h.decision, h.envelope));
  } catch (...) {
    return nullptr;
  }
}

const char* recourse_route_string(recourse_route route) {
  if (route < RECOURSE_RETRY || route > RECOURSE_STOP) return "unknown";
  return recourse::to_string(static_cast<recourse::Route>(route));
}

recourse_status recourse_engine_set_log(recourse_engine* engine, recourse_log_fn fn, void* user) {
  return guarded(nullptr, [&] {
    if (!engine) return RECOURSE_INVALID_ARGUMENT;
    recourse::DecisionLog log;
    if (fn)
      log = [fn, user](const recourse::DecisionRecord& r) {
        const std::string record = recourse::to_json(r);
        fn(user, record.c_str(), record.size());
      };
    engine->engine.set_log(std::move(log));
    return RECOURSE_OK;
  });
}

char* recourse_engine_counters_json(const recourse_engine* engine) {
  try {
    return engine ? copy(recourse::to_json(engine->engine.counters())) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"
