// The C API (recourse/recourse.h) over recourse::Engine, the adapters, the stores, Workflow,
// Health and Runner. Every entry point catches every exception; structs are copied in and out
// by their `size`, so older callers keep working.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>

#include "api/handles.hpp"
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

using recourse::capi::copy;
using recourse::capi::set;

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

// Compiles sources or paths into the engine's live bundle or its candidate.
recourse_status load_sources(recourse_engine* engine, const recourse_source* sources, size_t count,
                             char** diagnostics, bool candidate) {
  return guarded(diagnostics, [&] {
    if (!engine || (!sources && count > 0)) return RECOURSE_INVALID_ARGUMENT;
    std::vector<recourse::Source> in;
    for (size_t i = 0; i < count; ++i) {
      if (!sources[i].text && sources[i].text_len > 0) return RECOURSE_INVALID_ARGUMENT;
      in.push_back({sources[i].path ? sources[i].path : "",
                    std::string(sources[i].text ? sources[i].text : "", sources[i].text_len)});
    }
    return loaded(candidate ? engine->engine.reload_candidate(in) : engine->engine.reload(in),
                  diagnostics);
  });
}

recourse_status load_paths(recourse_engine* engine, const char* const* paths, size_t count,
                           char** diagnostics, bool candidate) {
  return guarded(diagnostics, [&] {
    if (!engine || (!paths && count > 0)) return RECOURSE_INVALID_ARGUMENT;
    std::vector<std::string> in;
    for (size_t i = 0; i < count; ++i) {
      if (!paths[i]) return RECOURSE_INVALID_ARGUMENT;
      in.emplace_back(paths[i]);
    }
    return loaded(
        candidate ? engine->engine.reload_candidate_paths(in) : engine->engine.reload_paths(in),
        diagnostics);
  });
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
    case RECOURSE_UNAVAILABLE:
      return "the state store cannot be opened or reached";
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
  return load_sources(engine, sources, count, diagnostics, false);
}

recourse_status recourse_engine_load_paths(recourse_engine* engine, const char* const* paths,
                                           size_t count, char** diagnostics) {
  return load_paths(engine, paths, count, diagnostics, false);
}

uint64_t recourse_engine_generation(const recourse_engine* engine) {
  return engine ? engine->engine.generation() : 0;
}

}  // extern "C"

namespace {

// The JSON inputs of recourse_engine_decide_json() and recourse_engine_explain_json(): the
// pointers checked and the context read into `context`; RECOURSE_OK, or the status with the
// reason in `error`.
recourse_status read_json_inputs(const recourse_engine* engine, const char* envelope_json,
                                 size_t envelope_len, const char* context_json, size_t context_len,
                                 char** out, const char* out_name, recourse::Context& context,
                                 char** error) {
  if (!engine) return invalid(error, "engine is NULL");
  if (!out) return invalid(error, fmt::format("{} is NULL", out_name));
  if (!envelope_json && envelope_len > 0)
    return invalid(error, fmt::format("envelope_json is NULL, envelope_len {}", envelope_len));
  if (!context_json && context_len > 0)
    return invalid(error, fmt::format("context_json is NULL, context_len {}", context_len));
  if (context_len == 0) return RECOURSE_OK;
  recourse::Result<recourse::Context> c = recourse::read_context({context_json, context_len});
  if (!c.ok()) {
    std::string why;
    for (const auto& d : c.diagnostics()) why += (why.empty() ? "" : "; ") + d.message;
    set(error, why);
    return RECOURSE_BAD_INPUT;
  }
  context = std::move(*c);
  return RECOURSE_OK;
}

}  // namespace

extern "C" {

recourse_status recourse_engine_decide_json(const recourse_engine* engine,
                                            const char* envelope_json, size_t envelope_len,
                                            const char* context_json, size_t context_len,
                                            char** decision, char** error) {
  return guarded(error, [&] {
    recourse::Context context;
    const recourse_status read =
        read_json_inputs(engine, envelope_json, envelope_len, context_json, context_len, decision,
                         "decision", context, error);
    if (read != RECOURSE_OK) return read;
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

// ABI 1.1: the adapters, the stores, Workflow and Health handles, and the runner.

struct recourse_health {
  std::shared_ptr<recourse::Store> store;  // kept alive for the health's life
  recourse::Health health;
  explicit recourse_health(std::shared_ptr<recourse::Store> s) : store(s), health(std::move(s)) {}
};

struct recourse_workflow {
  recourse::Workflow workflow;
  recourse_workflow(std::shared_ptr<recourse::Store> s, std::string scope)
      : workflow(std::move(s), std::move(scope)) {}
};

struct recourse_runner {
  std::unique_ptr<recourse::Runner> runner;
};

namespace {

using ordered_json = nlohmann::ordered_json;

// A diagnostics list as one line for `error`.
std::string reasons(const std::vector<recourse::Diagnostic>& diagnostics) {
  std::string why;
  for (const auto& d : diagnostics) why += (why.empty() ? "" : "; ") + d.message;
  return why;
}

std::string adapted_json(const recourse::Adapted& a) {
  ordered_json j = ordered_json::object();
  j["envelope"] = ordered_json::parse(recourse::to_json(a.envelope));
  j["mapping"] = a.mapping;
  j["warnings"] = ordered_json::array();
  for (const auto& w : a.envelope.warnings)
    j["warnings"].push_back({{"kind", w.kind}, {"field", w.field}, {"message", w.message}});
  j["idempotent"] = a.idempotent ? ordered_json(*a.idempotent) : ordered_json(nullptr);
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// The runner's spec from its JSON (recourse_runner_new), or the reason it is not one.
std::optional<recourse::RunnerSpec> runner_spec(std::string_view text, std::string& why) {
  const ordered_json j = ordered_json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return why = "spec: not a JSON object", std::nullopt;
  recourse::RunnerSpec spec;
  for (const auto& item : j.items()) {
    // Named, not a structured binding: C++17 lambdas cannot capture one (clang refuses).
    const std::string& key = item.key();
    const ordered_json& value = item.value();
    auto integer = [&](std::int64_t& out) {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 0)
        return why = "spec." + key + " must be an integer >= 0", false;
      out = value.get<std::int64_t>();
      return true;
    };
    auto string = [&](std::string& out) {
      if (!value.is_string()) return why = "spec." + key + " must be a string", false;
      out = value.get<std::string>();
      return true;
    };
    bool ok = true;
    if (key == "tool")
      ok = string(spec.tool);
    else if (key == "operationId")
      ok = string(spec.operation_id);
    else if (key == "workflowId")
      ok = string(spec.workflow_id);
    else if (key == "arguments")
      spec.arguments = value.dump();
    else if (key == "deadlineMs")
      ok = integer(spec.deadline_ms.emplace());
    else if (key == "maxReplacements")
      ok = integer(spec.max_replacements);
    else if (key == "ledgerLeaseMs")
      ok = integer(spec.ledger_lease_ms);
    else if (key == "idempotent" && value.is_boolean())
      spec.idempotent = value.get<bool>();
    else if (key == "idempotent")
      ok = false, why = "spec.idempotent must be a boolean";
    if (!ok) return std::nullopt;
  }
  return spec;
}

std::shared_ptr<recourse::Store> store_of(recourse_store* store) {
  return store ? store->store : std::make_shared<recourse::MemoryStore>();
}

}  // namespace

extern "C" {

uint32_t recourse_abi_minor(void) {
  return RECOURSE_ABI_MINOR;
}

recourse_status recourse_adapt_json(const char* protocol, const char* raw_json, size_t raw_len,
                                    int64_t now_ms, char** adapted, char** error) {
  return guarded(error, [&] {
    if (!adapted) return invalid(error, "adapted is NULL");
    if (!raw_json && raw_len > 0)
      return invalid(error, fmt::format("raw_json is NULL, raw_len {}", raw_len));
    std::optional<recourse::Protocol> p;
    if (protocol && std::string_view(protocol) != "auto" && !(p = recourse::protocol_of(protocol)))
      return invalid(
          error, fmt::format("protocol \"{}\" is not http, grpc, mcp, jsonrpc or auto", protocol));
    const std::string_view raw(raw_json ? raw_json : "", raw_len);
    if (!p) p = recourse::raw_form_protocol(raw);  // the "protocol" member, else the shape
    const recourse::Result<recourse::Adapted> a = recourse::from_raw(
        p, raw, now_ms == RECOURSE_ABSENT ? std::nullopt : std::optional<std::int64_t>(now_ms));
    if (!a.ok()) {
      set(error, reasons(a.diagnostics()));
      return RECOURSE_BAD_INPUT;
    }
    *adapted = copy(adapted_json(*a));
    return *adapted ? RECOURSE_OK : RECOURSE_NO_MEMORY;
  });
}

recourse_status recourse_store_open(const char* spec, recourse_store** store, char** error) {
  return guarded(error, [&] {
    if (!spec) return invalid(error, "spec is NULL");
    if (!store) return invalid(error, "store is NULL");
    *store = nullptr;
    recourse::Result<std::shared_ptr<recourse::Store>> r = recourse::open_store(spec);
    if (!r.ok()) {
      set(error, reasons(r.diagnostics()));
      return r.diagnostics().front().code == "S002" ? RECOURSE_UNAVAILABLE : RECOURSE_BAD_INPUT;
    }
    if (!r.diagnostics().empty()) set(error, reasons(r.diagnostics()));
    *store = new recourse_store{std::move(*r)};
    return RECOURSE_OK;
  });
}

void recourse_store_free(recourse_store* store) {
  delete store;
}

recourse_health* recourse_health_new(recourse_store* store) {
  try {
    return new recourse_health(store_of(store));
  } catch (...) {
    return nullptr;
  }
}

void recourse_health_free(recourse_health* health) {
  delete health;
}

recourse_status recourse_health_circuit(const recourse_health* health, const char* tool,
                                        recourse_circuit* circuit) {
  return guarded(nullptr, [&] {
    if (!health || !tool || !circuit) return RECOURSE_INVALID_ARGUMENT;
    *circuit = static_cast<recourse_circuit>(health->health.get(tool).circuit);
    return RECOURSE_OK;
  });
}

char* recourse_health_json(const recourse_health* health) {
  try {
    return health ? copy(health->health.to_json()) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

recourse_workflow* recourse_workflow_new(recourse_store* store, const char* scope) {
  try {
    return new recourse_workflow(store_of(store), scope ? scope : "");
  } catch (...) {
    return nullptr;
  }
}

void recourse_workflow_free(recourse_workflow* workflow) {
  delete workflow;
}

char* recourse_workflow_json(const recourse_workflow* workflow) {
  try {
    return workflow ? copy(workflow->workflow.to_json()) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

recourse_status recourse_runner_new(const recourse_engine* engine, recourse_workflow* workflow,
                                    recourse_health* health, recourse_store* store,
                                    const char* spec_json, size_t spec_len,
                                    recourse_runner** runner, char** error) {
  return guarded(error, [&] {
    if (!engine) return invalid(error, "engine is NULL");
    if (!workflow) return invalid(error, "workflow is NULL");
    if (!health) return invalid(error, "health is NULL");
    if (!runner) return invalid(error, "runner is NULL");
    *runner = nullptr;
    if (!spec_json && spec_len > 0)
      return invalid(error, fmt::format("spec_json is NULL, spec_len {}", spec_len));
    std::string why;
    std::optional<recourse::RunnerSpec> spec =
        runner_spec({spec_json ? spec_json : "", spec_len}, why);
    if (!spec) return set(error, why), RECOURSE_BAD_INPUT;
    auto made = recourse::Runner::make(engine->engine, workflow->workflow, health->health,
                                       store ? store->store : nullptr, std::move(*spec));
    if (!made.ok()) return set(error, reasons(made.diagnostics())), RECOURSE_BAD_INPUT;
    *runner = new recourse_runner{std::move(*made)};
    return RECOURSE_OK;
  });
}

void recourse_runner_free(recourse_runner* runner) {
  delete runner;
}

recourse_status recourse_runner_next(recourse_runner* runner, int64_t now_ms, char** action,
                                     char** error) {
  return guarded(error, [&] {
    if (!runner) return invalid(error, "runner is NULL");
    if (!action) return invalid(error, "action is NULL");
    *action = copy(recourse::to_json(runner->runner->next(now_ms)));
    return *action ? RECOURSE_OK : RECOURSE_NO_MEMORY;
  });
}

recourse_status recourse_runner_report(recourse_runner* runner, const char* outcome_json,
                                       size_t outcome_len, int64_t now_ms, char** error) {
  return guarded(error, [&] {
    if (!runner) return invalid(error, "runner is NULL");
    if (!outcome_json) return invalid(error, "outcome_json is NULL");
    const recourse::Result<recourse::Outcome> o =
        recourse::read_outcome({outcome_json, outcome_len});
    if (!o.ok()) return set(error, reasons(o.diagnostics())), RECOURSE_BAD_INPUT;
    const recourse::Status s = runner->runner->report(*o, now_ms);
    if (!s.ok()) return set(error, reasons(s.diagnostics())), RECOURSE_BAD_INPUT;
    return RECOURSE_OK;
  });
}

recourse_status recourse_runner_set_arguments(recourse_runner* runner, const char* arguments_json,
                                              size_t arguments_len, char** error) {
  return guarded(error, [&] {
    if (!runner) return invalid(error, "runner is NULL");
    if (!arguments_json) return invalid(error, "arguments_json is NULL");
    const std::string_view text(arguments_json, arguments_len);
    if (!ordered_json::accept(text.begin(), text.end()))
      return set(error, "arguments: not JSON"), RECOURSE_BAD_INPUT;
    const recourse::Status s = runner->runner->set_arguments(std::string(text));
    if (!s.ok()) return set(error, reasons(s.diagnostics())), RECOURSE_BAD_INPUT;
    return RECOURSE_OK;
  });
}

void recourse_runner_cancel(recourse_runner* runner) {
  if (runner) runner->runner->cancel();
}

recourse_status recourse_engine_explain_json(const recourse_engine* engine,
                                             const char* envelope_json, size_t envelope_len,
                                             const char* context_json, size_t context_len,
                                             char** explanation, char** error) {
  return guarded(error, [&] {
    recourse::Context context;
    const recourse_status read =
        read_json_inputs(engine, envelope_json, envelope_len, context_json, context_len,
                         explanation, "explanation", context, error);
    if (read != RECOURSE_OK) return read;
    const recourse::Result<recourse::Envelope> e =
        recourse::read_envelope({envelope_json ? envelope_json : "", envelope_len});
    if (!e.ok()) return set(error, reasons(e.diagnostics())), RECOURSE_BAD_INPUT;
    const std::shared_ptr<const recourse::Bundle> bundle = engine->engine.bundle();
    const recourse::Policy* policy = bundle->find(context.tool);
    if (!policy)
      return set(error, fmt::format("no policy for tool \"{}\" and no \"*\" policy", context.tool)),
             RECOURSE_BAD_INPUT;
    *explanation = copy(recourse::to_json(recourse::explain(*policy, *e, context), *e));
    return *explanation ? RECOURSE_OK : RECOURSE_NO_MEMORY;
  });
}

}  // extern "C"

// ABI 1.2: shadow policies.

extern "C" {

recourse_status recourse_engine_load_candidate_sources(recourse_engine* engine,
                                                       const recourse_source* sources, size_t count,
                                                       char** diagnostics) {
  return load_sources(engine, sources, count, diagnostics, true);
}

recourse_status recourse_engine_load_candidate_paths(recourse_engine* engine,
                                                     const char* const* paths, size_t count,
                                                     char** diagnostics) {
  return load_paths(engine, paths, count, diagnostics, true);
}

recourse_status recourse_engine_drop_candidate(recourse_engine* engine) {
  return guarded(nullptr, [&] {
    if (!engine) return RECOURSE_INVALID_ARGUMENT;
    engine->engine.drop_candidate();
    return RECOURSE_OK;
  });
}

char* recourse_engine_shadow_json(const recourse_engine* engine) {
  try {
    return engine ? copy(recourse::to_json(engine->engine.shadow_counters())) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"

// ABI 1.3: the authoring tools.

namespace {

// One test block's outcome as recourse_engine_tests_json() writes it.
ordered_json test_json(const recourse::TestResult& t) {
  return {{"policy", t.policy},
          {"name", t.name},
          {"file", t.file},
          {"line", t.line},
          {"column", t.column},
          {"offset", t.offset},
          {"passed", t.passed},
          {"expected", t.expected},
          {"actual", t.actual},
          {"mismatches", t.mismatches},
          {"decision", ordered_json::parse(t.decision_json)},
          {"envelope", ordered_json::parse(t.input.envelope)},
          {"context", ordered_json::parse(t.input.context)}};
}

}  // namespace

extern "C" {

recourse_status recourse_format(const char* path, const char* text, size_t text_len,
                                char** formatted, char** diagnostics) {
  return guarded(diagnostics, [&] {
    if (!formatted || (!text && text_len > 0)) return RECOURSE_INVALID_ARGUMENT;
    const recourse::Result<std::string> r =
        recourse::format({text ? text : "", text_len}, path ? path : "");
    if (diagnostics && !(*diagnostics = copy(recourse::to_json(r.diagnostics()))))
      return RECOURSE_NO_MEMORY;
    if (!r.ok()) return RECOURSE_COMPILE_FAILED;
    *formatted = copy(*r);
    return *formatted ? RECOURSE_OK : RECOURSE_NO_MEMORY;
  });
}

char* recourse_engine_dump(const recourse_engine* engine) {
  try {
    if (!engine) return nullptr;
    std::string dump;
    for (const recourse::Policy& p : engine->engine.bundle()->policies()) dump += p.dump();
    return copy(dump);
  } catch (...) {
    return nullptr;
  }
}

char* recourse_engine_tests_json(const recourse_engine* engine) {
  try {
    if (!engine) return nullptr;
    ordered_json results = ordered_json::array();
    for (const recourse::Policy& p : engine->engine.bundle()->policies())
      for (const recourse::TestResult& t : recourse::run_tests(p)) results.push_back(test_json(t));
    return copy(results.dump(-1, ' ', false, ordered_json::error_handler_t::replace));
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"
