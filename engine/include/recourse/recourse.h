/* recourse C API: compile policies, decide how to recover from a failed tool call, reload, log.
 *
 * Library: librecourse_c.so (CMake target recourse_c); it exports only the recourse_* symbols.
 * Every function catches every C++ exception: none crosses this boundary. Errors come back as a
 * recourse_status, and, where a function takes `char** error`, a message the caller frees with
 * recourse_string_free (pass NULL to skip it). Strings in are UTF-8, NUL-terminated unless a
 * length is given; strings out are NUL-terminated and owned by the caller (recourse_string_free)
 * unless said otherwise.
 *
 * Versioning: recourse_abi_version() returns RECOURSE_ABI_VERSION of the library; a caller built
 * against another major ABI version must not use it. Structs passed in or out start with
 * `size`, set by the caller to sizeof(the struct) as it was compiled: the library reads and
 * writes only that many bytes, so fields appended in later versions keep old callers working.
 * A size below the struct's in ABI 1, the first version, is RECOURSE_INVALID_ARGUMENT.
 *
 * Flags (int fields that are true or false) are 0 or 1, and RECOURSE_UNSET where a field says
 * so; any other value is RECOURSE_INVALID_ARGUMENT, never read as true.
 *
 * Thread-safety: a recourse_engine may be used from any number of threads at once; decisions
 * made while another thread reloads use the bundle in use when they started (see
 * docs/embedding.md, and recourse/engine.hpp for the lock-free read path).
 */
#ifndef RECOURSE_RECOURSE_H
#define RECOURSE_RECOURSE_H

#include <stddef.h>
#include <stdint.h>

#if defined(RECOURSE_C_BUILD)
#define RECOURSE_API __attribute__((visibility("default")))
#else
#define RECOURSE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes. */
#define RECOURSE_ABI_VERSION 1
/** The minor version of ABI 1 this header describes: 0, the first; 1 adds the adapters, the
 * stores, Workflow and Health handles, and the runner (the functions marked "ABI 1.1"); 2 adds
 * shadow policies and recourse_engine_explain_json (marked "ABI 1.2"); 3 adds the authoring
 * tools recourse_format, recourse_engine_dump and recourse_engine_tests_json (marked "ABI 1.3").
 * A caller that uses a minor's functions checks recourse_abi_minor() at run time. */
#define RECOURSE_ABI_MINOR 3

/** Outcome of a call. */
typedef enum recourse_status {
  RECOURSE_OK = 0,
  RECOURSE_INVALID_ARGUMENT = 1, /**< a NULL handle or pointer, a struct size too small, or a
                                    flag other than 0, 1 (or RECOURSE_UNSET where allowed) */
  RECOURSE_COMPILE_FAILED = 2,   /**< the policies did not compile; the old bundle stays */
  RECOURSE_BAD_INPUT = 3,        /**< a bad context; in ABI 1.1 also a raw form, store spec,
                                    runner spec or outcome that cannot be read */
  RECOURSE_NO_MEMORY = 4,
  RECOURSE_INTERNAL = 5,   /**< an unexpected failure inside the library */
  RECOURSE_UNAVAILABLE = 6 /**< ABI 1.1: a state store that cannot be opened or reached */
} recourse_status;

/** What to do next (recourse::Route). */
typedef enum recourse_route {
  RECOURSE_RETRY = 0,
  RECOURSE_REPAIR = 1,
  RECOURSE_AUTHORIZE = 2,
  RECOURSE_REPLACE = 3,
  RECOURSE_DEGRADE = 4,
  RECOURSE_ESCALATE = 5,
  RECOURSE_STOP = 6
} recourse_route;

/** Side-effect state of the failed call; UNSET reads as UNKNOWN with a warning. */
typedef enum recourse_side_effect {
  RECOURSE_SIDE_EFFECT_UNSET = 0,
  RECOURSE_SIDE_EFFECT_NONE = 1,
  RECOURSE_SIDE_EFFECT_UNKNOWN = 2,
  RECOURSE_SIDE_EFFECT_COMMITTED = 3
} recourse_side_effect;

/** Circuit state of the tool (recourse::Health fills it in C++ hosts). */
typedef enum recourse_circuit {
  RECOURSE_CIRCUIT_CLOSED = 0,
  RECOURSE_CIRCUIT_OPEN = 1,
  RECOURSE_CIRCUIT_HALF_OPEN = 2
} recourse_circuit;

/** A tri-state boolean for optional flags. */
#define RECOURSE_UNSET (-1)
/** An absent optional integer field (ms or counts). */
#define RECOURSE_ABSENT INT64_MIN

/** The ABI version of the loaded library (RECOURSE_ABI_VERSION when it was built). */
RECOURSE_API uint32_t recourse_abi_version(void);
/** The library version, "major.minor.patch"; static storage, do not free. */
RECOURSE_API const char* recourse_version(void);
/** A sentence for a status, e.g. "the policies did not compile"; static storage. */
RECOURSE_API const char* recourse_status_string(recourse_status status);
/** Frees a string the library returned; NULL is ignored. */
RECOURSE_API void recourse_string_free(char* string);

/** An engine: the current bundle of compiled policies, reloadable while others decide. */
typedef struct recourse_engine recourse_engine;

/** One policy source: a path for diagnostics and the text (`text_len` bytes). */
typedef struct recourse_source {
  const char* path;
  const char* text;
  size_t text_len;
} recourse_source;

/** Options of recourse_engine_new. */
typedef struct recourse_engine_options {
  size_t size; /**< sizeof(recourse_engine_options) */
  int count;   /**< 1: count decisions per route, rule and budget (counters_json); 0: not */
} recourse_engine_options;

/** A new engine with no policies (every decision is stop, warning no_policy), or NULL without
 * memory or when `options` is invalid (its size below ABI 1's, `count` not 0 or 1). `options`
 * may be NULL. Free with recourse_engine_free. */
RECOURSE_API recourse_engine* recourse_engine_new(const recourse_engine_options* options);
/** Frees the engine; NULL is ignored. No other thread may use it any more. Decisions it made
 * stay valid until released. */
RECOURSE_API void recourse_engine_free(recourse_engine* engine);

/** Compiles `count` sources as one bundle and, when they compile, swaps it in. `diagnostics`
 * (may be NULL) receives every diagnostic as a JSON array of {severity, code, file, line,
 * column, offset, message, help}, warnings of a successful compile included.
 * RECOURSE_COMPILE_FAILED keeps the bundle in use. */
RECOURSE_API recourse_status recourse_engine_load_sources(recourse_engine* engine,
                                                          const recourse_source* sources,
                                                          size_t count, char** diagnostics);
/** The same for files and directories (every *.recourse file below, sorted by path). */
RECOURSE_API recourse_status recourse_engine_load_paths(recourse_engine* engine,
                                                        const char* const* paths, size_t count,
                                                        char** diagnostics);
/** Swaps so far (successful loads and log changes). */
RECOURSE_API uint64_t recourse_engine_generation(const recourse_engine* engine);

/** Decides from JSON: the envelope (untrusted; malformed fields read as absent with a warning)
 * and the context (trusted, read strictly; NULL or "" is an empty context). On RECOURSE_OK
 * `decision` receives the decision's JSON (docs/schema/decision.schema.json). An envelope that
 * is not a JSON object is still decided (stop, warning unreadable_envelope) and returns OK; a
 * malformed context (a wrong type or range, a key given twice) returns RECOURSE_BAD_INPUT with
 * the reason in `error`.
 * RECOURSE_INVALID_ARGUMENT (a NULL engine or `decision`, a NULL text with a length) also sets
 * `error`. */
RECOURSE_API recourse_status recourse_engine_decide_json(
    const recourse_engine* engine, const char* envelope_json, size_t envelope_len,
    const char* context_json, size_t context_len, char** decision, char** error);

/** An envelope the host has read: NULL strings and RECOURSE_UNSET / RECOURSE_ABSENT values are
 * absent. Every field is then read as recourse_engine_decide_json() reads the same JSON field: an
 * empty code, field or trace_id, a string beyond its limit (code 64 bytes, field and trace_id
 * 256, message and suggestion 8192), a string that is not valid UTF-8 (RFC 3629; JSON cannot
 * carry one) and a negative retry_after_ms other than RECOURSE_ABSENT are read as absent, with
 * the same warning ("malformed", "oversized"); an absent trace_id gets a
 * minted one (trace_id_minted), as in JSON. */
typedef struct recourse_envelope {
  size_t size; /**< sizeof(recourse_envelope) */
  const char* code;
  const char* message;
  int retryable; /**< 0, 1 or RECOURSE_UNSET */
  const char* field;
  const char* suggestion;
  int64_t retry_after_ms; /**< ms >= 0, or RECOURSE_ABSENT */
  const char* trace_id;
} recourse_envelope;

/** What the host knows about the failed call (recourse::Context). Start from
 * recourse_context_init(); NULL strings are empty. Held to read_context()'s rules and its
 * default ContextLimits: the ranges below, each string valid UTF-8 of at most 4096 bytes, at
 * most 1024 arguments; otherwise RECOURSE_BAD_INPUT. */
typedef struct recourse_context {
  size_t size; /**< sizeof(recourse_context) */
  const char* tool;
  int idempotent;                   /**< 0, 1 or RECOURSE_UNSET (the tool block's default) */
  recourse_side_effect side_effect; /**< UNSET reads as UNKNOWN */
  int64_t attempt;                  /**< calls made for this operation, >= 1 */
  int64_t repairs;                  /**< repaired calls so far, >= 0 */
  int64_t elapsed_ms;               /**< ms spent on the operation, >= 0 */
  const char* const* arguments;     /**< argument names, or NULL (the tool block's list) */
  size_t argument_count;
  int64_t max_attempts;     /**< >= 1, or RECOURSE_ABSENT */
  int64_t deadline_ms;      /**< ms >= 0, or RECOURSE_ABSENT */
  const char* operation_id; /**< keys jitter */
  const char* workflow_id;
  int64_t lower_retries;       /**< >= 0 */
  int64_t repeats;             /**< >= 0 */
  int64_t cost_spent;          /**< >= 0 */
  const char* idempotency_key; /**< the key the call carried, or NULL */
  int idempotency_key_pinned;  /**< 1: the key is pinned to the operation; 0: not */
  recourse_circuit circuit;
  int retry_throttled; /**< 1: retry tokens at or below half; 0: not */
  int64_t now_ms;      /**< ms since the epoch, or RECOURSE_ABSENT */
  const char* args_hash;
  /* Appended after ABI 1's first struct (a caller whose size ends above leaves them 0). */
  int stream_output_emitted;    /**< 1: a stream handed output to the caller before failing */
  int stream_discard_supported; /**< 1: the host can discard or supersede that output */
} recourse_context;

/** Fills `context` with the defaults (attempt 1, absent optionals) and its size. */
RECOURSE_API void recourse_context_init(recourse_context* context);

/** One decision. Its strings are NUL-terminated and valid until recourse_decision_release. */
typedef struct recourse_decision {
  size_t size; /**< set by the caller: sizeof(recourse_decision) */
  recourse_route route;
  int64_t delay_ms;   /**< wait before the next call (retry), ms */
  int64_t jitter_ms;  /**< the random part of delay_ms, ms */
  const char* rule;   /**< the rule or guard that decided */
  const char* reason; /**< "" when none */
  const char* target; /**< replace/degrade target tool, "" when none */
  const char* policy; /**< "" without a policy */
  const char* policy_hash;
  const char* exhausted; /**< the budget that ran out, "" when none */
  const char* trace_id;  /**< the envelope's, or the minted "local-..." one */
  int64_t attempt;
  int64_t attempts_left;
  int64_t repairs_left;
  int64_t retry_after_ms; /**< the server's valid hint, or RECOURSE_ABSENT */
  int64_t retry_at_ms;    /**< with now_ms: when to send the retry, or RECOURSE_ABSENT */
  int64_t timeout_ms;     /**< per-try timeout of the next call, or RECOURSE_ABSENT */
  uint32_t warnings;      /**< recourse::DecisionWarning bits */
  void* internal;         /**< owned by the library */
} recourse_decision;

/** Decides from structs. `decision->size` must be set; release the result with
 * recourse_decision_release. RECOURSE_BAD_INPUT for a context out of range;
 * RECOURSE_INVALID_ARGUMENT for a NULL engine or struct, a size below ABI 1's or a flag that is
 * not 0 or 1 (nor RECOURSE_UNSET where allowed). Either sets `error` to the reason, which the
 * caller frees with recourse_string_free. */
RECOURSE_API recourse_status recourse_engine_decide(const recourse_engine* engine,
                                                    const recourse_envelope* envelope,
                                                    const recourse_context* context,
                                                    recourse_decision* decision, char** error);
/** Frees what a decision holds (its strings); the struct may be reused. NULL is ignored. */
RECOURSE_API void recourse_decision_release(recourse_decision* decision);
/** The decision as JSON, as recourse_engine_decide_json returns it. */
RECOURSE_API char* recourse_decision_json(const recourse_decision* decision);
/** "retry", "repair", ... ; static storage. */
RECOURSE_API const char* recourse_route_string(recourse_route route);

/** Receives each decision's log record (one JSON object, `len` bytes, NUL-terminated; valid
 * during the call) on the deciding thread. Must be thread-safe when several threads decide. */
typedef void (*recourse_log_fn)(void* user, const char* record, size_t len);
/** Sets (or, with NULL, removes) the decision log; takes effect for decisions that start after
 * it returns. */
RECOURSE_API recourse_status recourse_engine_set_log(recourse_engine* engine, recourse_log_fn fn,
                                                     void* user);
/** The counters as JSON {"decisions", "routes", "rules", "exhausted"} (zero unless the engine
 * was made with count set), or NULL without memory. */
RECOURSE_API char* recourse_engine_counters_json(const recourse_engine* engine);

/* ---- ABI 1.1 ---------------------------------------------------------------------------- */

/** The minor version of ABI 1 the loaded library implements (RECOURSE_ABI_MINOR when it was
 * built); 0 for a library without the functions below. */
RECOURSE_API uint32_t recourse_abi_minor(void);

/** Reads what a failed call returned (a protocol's raw form: an HTTP response, a transport
 * error, a gRPC status, an MCP or JSON-RPC error; recourse::from_raw, docs/adapters.md) into an
 * envelope. `protocol` is "http", "grpc", "mcp", "jsonrpc", or NULL or "auto" (the raw form's
 * "protocol" member, else its shape). `now_ms` (ms since the epoch, or RECOURSE_ABSENT) turns
 * HTTP-dates into delays. On RECOURSE_OK `adapted` receives {"envelope": {...}, "mapping":
 * "http 429", "warnings": [{"kind", "field", "message"}], "idempotent": true | false | null};
 * its "envelope" is what recourse_engine_decide_json() takes. A raw form that cannot be read
 * (not a JSON object, over a limit, no protocol) is RECOURSE_BAD_INPUT; an unknown `protocol`,
 * a NULL `adapted` or a NULL `raw_json` with a length RECOURSE_INVALID_ARGUMENT; both set
 * `error`. */
RECOURSE_API recourse_status recourse_adapt_json(const char* protocol, const char* raw_json,
                                                 size_t raw_len, int64_t now_ms, char** adapted,
                                                 char** error);

/** A state store (recourse::Store): "memory", "sqlite:PATH", "redis://HOST:PORT",
 * "redis+unix://PATH" (docs/state.md). Thread-safe; shared by the handles made with it, which
 * keep it alive. */
typedef struct recourse_store recourse_store;
/** Opens a store from its spec. A malformed spec, or a kind this build left out, is
 * RECOURSE_BAD_INPUT; a store that cannot be opened or reached RECOURSE_UNAVAILABLE; NULL `spec`
 * or `store` RECOURSE_INVALID_ARGUMENT. Warnings (a Redis ledger refused) come in `error` with
 * RECOURSE_OK. Free with recourse_store_free. */
RECOURSE_API recourse_status recourse_store_open(const char* spec, recourse_store** store,
                                                 char** error);
/** Releases the caller's reference; NULL is ignored. Handles made with it keep the store. */
RECOURSE_API void recourse_store_free(recourse_store* store);

/** Per-process tool health (recourse::Health): breakers, retry tokens, the ledger's answer.
 * Thread-safe; share one among every runner of the process. */
typedef struct recourse_health recourse_health;
/** Health kept in `store` (NULL: a memory store of its own), or NULL without memory. */
RECOURSE_API recourse_health* recourse_health_new(recourse_store* store);
/** Frees it; NULL is ignored. No runner made with it may be used any more. */
RECOURSE_API void recourse_health_free(recourse_health* health);
/** `tool`'s circuit as its breaker says now (closed when never recorded). NULL arguments are
 * RECOURSE_INVALID_ARGUMENT. */
RECOURSE_API recourse_status recourse_health_circuit(const recourse_health* health,
                                                     const char* tool, recourse_circuit* circuit);
/** The local state as JSON (recourse::Health::to_json), or NULL (a NULL handle, no memory). */
RECOURSE_API char* recourse_health_json(const recourse_health* health);

/** Per-loop budget counters (recourse::Workflow). Not thread-safe: one per runner at a time. */
typedef struct recourse_workflow recourse_workflow;
/** Counters kept in `store` (NULL: a memory store of its own) under `scope` (NULL: none), or
 * NULL without memory. */
RECOURSE_API recourse_workflow* recourse_workflow_new(recourse_store* store, const char* scope);
/** Frees it; NULL is ignored. No runner made with it may be used any more. */
RECOURSE_API void recourse_workflow_free(recourse_workflow* workflow);
/** The local counters as JSON (recourse::Workflow::to_json), or NULL. */
RECOURSE_API char* recourse_workflow_json(const recourse_workflow* workflow);

/** One operation's recovery loop (recourse::Runner; docs/embedding.md, section 5): a step
 * machine driven with JSON. Not thread-safe, except recourse_runner_cancel. */
typedef struct recourse_runner recourse_runner;
/** A runner deciding with `engine`, counting in `workflow`, with `health` and `store`'s ledger
 * (NULL: no ledger), all of which must outlive it. `spec_json` is {"tool", "operationId",
 * "arguments": any JSON, "workflowId", "deadlineMs", "maxReplacements", "ledgerLeaseMs"}
 * (tool and operationId required). A spec that is not such an object is RECOURSE_BAD_INPUT;
 * NULL handles or `runner` RECOURSE_INVALID_ARGUMENT; both set `error`. Free with
 * recourse_runner_free. */
RECOURSE_API recourse_status recourse_runner_new(const recourse_engine* engine,
                                                 recourse_workflow* workflow,
                                                 recourse_health* health, recourse_store* store,
                                                 const char* spec_json, size_t spec_len,
                                                 recourse_runner** runner, char** error);
/** Frees the runner; NULL is ignored. */
RECOURSE_API void recourse_runner_free(recourse_runner* runner);
/** The next action at `now_ms` (ms since the epoch) as JSON: {"step": "call" | "wait" |
 * "repair" | "authorize" | "escalate" | "done", "tool", "attempt", "elapsedMs", and per step
 * "arguments", "idempotencyKey", "timeoutMs", "waitMs", "ending", "decision", "envelope"}. */
RECOURSE_API recourse_status recourse_runner_next(recourse_runner* runner, int64_t now_ms,
                                                  char** action, char** error);
/** Reports the outcome of the action at `now_ms`: {"outcome": "success" | "failure" | "resume" |
 * "abandon", "envelope": {...} or "raw": {...} with "protocol", "sideEffect", "arguments"}.
 * RECOURSE_BAD_INPUT, with the reason in `error`, for JSON that is not such an outcome or an
 * outcome that answers no pending action (the runner is then unchanged). */
RECOURSE_API recourse_status recourse_runner_report(recourse_runner* runner,
                                                    const char* outcome_json, size_t outcome_len,
                                                    int64_t now_ms, char** error);
/** Changes the next call's arguments (any JSON; a changed body takes a new idempotency key).
 * RECOURSE_BAD_INPUT while a call or a question is out, or for text that is not JSON. */
RECOURSE_API recourse_status recourse_runner_set_arguments(recourse_runner* runner,
                                                           const char* arguments_json,
                                                           size_t arguments_len, char** error);
/** Ends the operation: the next recourse_runner_next() is done ("cancelled"). Any thread; NULL
 * is ignored. */
RECOURSE_API void recourse_runner_cancel(recourse_runner* runner);

/* ---- ABI 1.2: shadow policies ----------------------------------------------------------- */

/** Compiles `count` sources as the engine's candidate bundle (recourse/engine.hpp, "Shadow
 * policies"): every decision is then also decided by the candidate, read-only, and a
 * disagreement is counted and logged (the record's "shadow" member). `diagnostics` as in
 * recourse_engine_load_sources; RECOURSE_COMPILE_FAILED keeps both bundles as they were. */
RECOURSE_API recourse_status recourse_engine_load_candidate_sources(recourse_engine* engine,
                                                                    const recourse_source* sources,
                                                                    size_t count,
                                                                    char** diagnostics);
/** The same for files and directories. */
RECOURSE_API recourse_status recourse_engine_load_candidate_paths(recourse_engine* engine,
                                                                  const char* const* paths,
                                                                  size_t count, char** diagnostics);
/** Drops the candidate; RECOURSE_INVALID_ARGUMENT for a NULL engine. */
RECOURSE_API recourse_status recourse_engine_drop_candidate(recourse_engine* engine);
/** The shadow counters as JSON {"decisions", "disagreements", "rules": {policy: {"live ->
 * candidate": n}}, "differences": {"route": n, ...}}, or NULL for a NULL engine or without
 * memory. */
RECOURSE_API char* recourse_engine_shadow_json(const recourse_engine* engine);

/* ABI 1.2: explanations. */

/** Why the engine's current bundle decides as it does (recourse::explain, the reference
 * interpreter walking the rules): the envelope and context are read as
 * recourse_engine_decide_json() reads them, and on RECOURSE_OK `explanation` receives {"policy",
 * "rules": [{"rule", "line", "column", "matched", "tests": [{"test", "value", "result"}]}],
 * "guard", "decision"} (what `recourse explain --format json` prints). A malformed context, an
 * envelope that is not a JSON object, or no policy for the context's tool (and no "*" policy)
 * is RECOURSE_BAD_INPUT; a NULL engine or `explanation` RECOURSE_INVALID_ARGUMENT; both set
 * `error`. */
RECOURSE_API recourse_status recourse_engine_explain_json(
    const recourse_engine* engine, const char* envelope_json, size_t envelope_len,
    const char* context_json, size_t context_len, char** explanation, char** error);

/* ---- ABI 1.3: authoring tools ---------------------------------------------------------- */

/** The canonical layout of one policy file's text (recourse::format, docs/language.md,
 * "Formatting"): on RECOURSE_OK `formatted` receives the text, which formats to itself and
 * compiles to the same policies. A text that does not parse, nests too deep, exceeds the size
 * limit or would not compile as it did is RECOURSE_COMPILE_FAILED. `diagnostics` (NULL to skip)
 * receives the diagnostics as JSON, as recourse_engine_load_sources() gives them ("[]" when
 * there are none). `path` (NULL: "") names the file in the diagnostics; the bases the text
 * `extends` are read from NAME.recourse beside it. A NULL `formatted`, or a NULL `text` with
 * `text_len` above 0, is RECOURSE_INVALID_ARGUMENT. */
RECOURSE_API recourse_status recourse_format(const char* path, const char* text, size_t text_len,
                                             char** formatted, char** diagnostics);
/** The decision tables of the engine's current bundle, policy after policy in the bundle's
 * order, as `recourse compile --dump` prints them (recourse::Policy::dump(): text for people,
 * not a stable format); "" for an empty bundle, NULL for a NULL engine or without memory. */
RECOURSE_API char* recourse_engine_dump(const recourse_engine* engine);
/** Runs the `test` blocks of every policy of the engine's current bundle (recourse::run_tests,
 * docs/language.md, "Tests"; a base's tests once, with the base), policy after policy, each in
 * file order, as a JSON array: [{"policy", "name", "file", "line", "column", "offset",
 * "passed", "expected", "actual", "mismatches": [strings], "decision": {...}, "envelope":
 * {...}, "context": {...}}]. line and column (1-based, characters) and offset (bytes) are of
 * the test's `test` keyword; expected and actual in the policy's words (`retry delay
 * 250ms..20s`); decision as recourse_engine_decide_json() writes it; envelope and context the
 * input the test decides. NULL for a NULL engine or without memory. */
RECOURSE_API char* recourse_engine_tests_json(const recourse_engine* engine);

#ifdef __cplusplus
}
#endif

#endif /* RECOURSE_RECOURSE_H */
