/* The C API from C: versions, compile (text and files), decide (JSON and structs), reload with a
 * failed compile, decisions kept across a reload, the log callback, counters, argument errors
 * (NULL pointers, struct sizes below ABI 1's, flags other than 0 and 1) and their messages.
 *
 *   c_api_test RULES_DIR
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"
#include "recourse/recourse.h"

static const char* kRetry =
    "policy \"pay\" {\n"
    "  tool { idempotent = true }\n"
    "  limits { attempts = 3 }\n"
    "  rule throttled when code == RATE_LIMITED -> retry\n"
    "  default -> stop\n"
    "}\n";
static const char* kEscalate =
    "policy \"pay\" {\n"
    "  rule throttled when code == RATE_LIMITED -> escalate \"call the bank\"\n"
    "  default -> stop\n"
    "}\n";

static int contains(const char* text, const char* part) {
  return text != NULL && strstr(text, part) != NULL;
}

/* Whether `status` is RECOURSE_INVALID_ARGUMENT with `expected` in *error, which it frees. */
static int invalid(recourse_status status, char** error, const char* expected) {
  const int ok =
      status == RECOURSE_INVALID_ARGUMENT && *error != NULL && strcmp(*error, expected) == 0;
  if (!ok) fprintf(stderr, "status %d, error \"%s\"\n", (int)status, *error ? *error : "(null)");
  recourse_string_free(*error);
  *error = NULL;
  return ok;
}

static void count_record(void* user, const char* record, size_t len) {
  if (len == strlen(record) && contains(record, "\"policyHash\":\"sha256:")) ++*(int*)user;
}

/* Keeps the last record, in a string the caller frees. */
static void keep_record(void* user, const char* record, size_t len) {
  char** kept = (char**)user;
  free(*kept);
  *kept = malloc(len + 1);
  if (*kept) memcpy(*kept, record, len + 1);
}

static recourse_status load(recourse_engine* engine, const char* text, char** diagnostics) {
  recourse_source source = {"pay.recourse", text, strlen(text)};
  return recourse_engine_load_sources(engine, &source, 1, diagnostics);
}

/* Decides `context` and releases the decision: its route, or -1 when the call fails and -2 when
 * its rule is not `rule`. */
static int route_of(const recourse_engine* engine, const recourse_envelope* envelope,
                    const recourse_context* context, const char* rule) {
  recourse_decision d;
  memset(&d, 0, sizeof d);
  d.size = sizeof d;
  if (recourse_engine_decide(engine, envelope, context, &d, NULL) != RECOURSE_OK) return -1;
  const int route = strcmp(d.rule, rule) == 0 ? (int)d.route : -2;
  recourse_decision_release(&d);
  return route;
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: c_api_test RULES_DIR\n"), 2;
  CHECK(recourse_abi_version() == RECOURSE_ABI_VERSION);
  CHECK(strchr(recourse_version(), '.') != NULL);
  CHECK(contains(recourse_status_string(RECOURSE_COMPILE_FAILED), "did not compile"));

  recourse_engine_options options = {sizeof options, 1};
  recourse_engine* engine = recourse_engine_new(&options);
  CHECK(engine != NULL);
  char* diagnostics = NULL;
  CHECK(load(engine, "policy \"pay\" { rule r when code == NOPE -> stop }", &diagnostics) ==
        RECOURSE_COMPILE_FAILED);
  CHECK(contains(diagnostics, "\"code\":\"E0"));
  recourse_string_free(diagnostics);
  CHECK(recourse_engine_generation(engine) == 0);
  CHECK(load(engine, kRetry, NULL) == RECOURSE_OK);
  CHECK(recourse_engine_generation(engine) == 1);

  int logged = 0;
  CHECK(recourse_engine_set_log(engine, count_record, &logged) == RECOURSE_OK);

  /* JSON in, JSON out. */
  const char* envelope = "{\"code\":\"RATE_LIMITED\",\"retryAfterMs\":700,\"traceId\":\"t-1\"}";
  const char* context = "{\"tool\":\"pay\",\"sideEffect\":\"none\",\"attempt\":1}";
  char* decision = NULL;
  char* error = NULL;
  CHECK(recourse_engine_decide_json(engine, envelope, strlen(envelope), context, strlen(context),
                                    &decision, &error) == RECOURSE_OK);
  CHECK(contains(decision, "\"route\":\"retry\""));
  CHECK(contains(decision, "\"delayMs\":700"));
  CHECK(contains(decision, "\"traceId\":\"t-1\""));
  recourse_string_free(decision);
  decision = NULL;
  CHECK(recourse_engine_decide_json(engine, "not json", 8, context, strlen(context), &decision,
                                    NULL) == RECOURSE_OK);
  CHECK(contains(decision, "unreadable_envelope"));
  recourse_string_free(decision);
  decision = NULL;
  const char* bad_context = "{\"tool\":\"pay\",\"attempt\":0}";
  CHECK(recourse_engine_decide_json(engine, envelope, strlen(envelope), bad_context,
                                    strlen(bad_context), &decision, &error) == RECOURSE_BAD_INPUT);
  CHECK(decision == NULL);
  CHECK(contains(error, "context.attempt must be an integer"));
  recourse_string_free(error);

  /* Structs in and out. */
  recourse_envelope e = {sizeof e, "RATE_LIMITED",  NULL, RECOURSE_UNSET, NULL,
                         NULL,     RECOURSE_ABSENT, NULL};
  recourse_context c;
  recourse_context_init(&c);
  c.tool = "pay";
  c.side_effect = RECOURSE_SIDE_EFFECT_NONE;
  c.operation_id = "op-7";
  recourse_decision d;
  memset(&d, 0, sizeof d);
  d.size = sizeof d;
  CHECK(recourse_engine_decide(engine, &e, &c, &d, NULL) == RECOURSE_OK);
  CHECK(d.route == RECOURSE_RETRY);
  CHECK(strcmp(recourse_route_string(d.route), "retry") == 0);
  CHECK(strcmp(d.rule, "throttled") == 0);
  CHECK(strcmp(d.policy, "pay") == 0);
  CHECK(strncmp(d.policy_hash, "sha256:", 7) == 0);
  CHECK(strncmp(d.trace_id, "local-", 6) == 0);
  CHECK(d.attempts_left == 2);
  CHECK(d.retry_after_ms == RECOURSE_ABSENT);
  char* as_json = recourse_decision_json(&d);
  CHECK(contains(as_json, "\"rule\":\"throttled\""));
  recourse_string_free(as_json);

  /* Structs smaller than ABI 1's, the first version, and flags other than 0 and 1 (or
   * RECOURSE_UNSET where allowed) are invalid arguments, with the reason in `error`. */
  recourse_decision refused;
  memset(&refused, 0, sizeof refused);
  refused.size = sizeof refused;
  char expected[160];
  error = NULL;
  /* A stream's output the host cannot discard is a committed effect: the gate stops the retry
   * (an idempotent tool included); output the host can discard lets it through. A caller built
   * against ABI 1's first struct (size ending at args_hash) leaves both flags 0. */
  recourse_engine* streams = recourse_engine_new(NULL); /* its own: the counters below stay */
  CHECK(load(streams, kRetry, NULL) == RECOURSE_OK);
  recourse_context streamed = c;
  streamed.stream_output_emitted = 1;
  CHECK(route_of(streams, &e, &streamed, "gate:committed") == RECOURSE_STOP);
  streamed.stream_discard_supported = 1;
  CHECK(route_of(streams, &e, &streamed, "throttled") == RECOURSE_RETRY);
  streamed.stream_discard_supported = 0;
  streamed.size = offsetof(recourse_context, args_hash) + sizeof(const char*);
  CHECK(route_of(streams, &e, &streamed, "throttled") == RECOURSE_RETRY);
  recourse_engine_free(streams);
  streamed.size = sizeof streamed;
  streamed.stream_discard_supported = 2;
  CHECK(invalid(recourse_engine_decide(engine, &e, &streamed, &refused, &error), &error,
                "context.stream_discard_supported must be 0 or 1, not 2"));

  recourse_envelope shorter = e;
  shorter.size = offsetof(recourse_envelope, trace_id);
  snprintf(expected, sizeof expected,
           "envelope->size is %zu, below the %zu bytes of ABI 1's struct", shorter.size,
           sizeof(recourse_envelope));
  CHECK(invalid(recourse_engine_decide(engine, &shorter, &c, &refused, &error), &error, expected));
  recourse_context tiny = c;
  tiny.size = 8;
  snprintf(expected, sizeof expected, "context->size is 8, below the %zu bytes of ABI 1's struct",
           offsetof(recourse_context, args_hash) + sizeof(const char*));
  CHECK(invalid(recourse_engine_decide(engine, &e, &tiny, &refused, &error), &error, expected));
  recourse_envelope two = e;
  two.retryable = 2;
  CHECK(invalid(recourse_engine_decide(engine, &two, &c, &refused, &error), &error,
                "envelope.retryable must be 0, 1 or RECOURSE_UNSET (-1), not 2"));
  recourse_context flags = c;
  flags.idempotent = -2;
  CHECK(invalid(recourse_engine_decide(engine, &e, &flags, &refused, &error), &error,
                "context.idempotent must be 0, 1 or RECOURSE_UNSET (-1), not -2"));
  flags.idempotent = RECOURSE_UNSET;
  flags.idempotency_key_pinned = RECOURSE_UNSET;
  CHECK(invalid(recourse_engine_decide(engine, &e, &flags, &refused, &error), &error,
                "context.idempotency_key_pinned must be 0 or 1, not -1"));
  flags.idempotency_key_pinned = 1;
  flags.retry_throttled = 255;
  CHECK(invalid(recourse_engine_decide(engine, &e, &flags, &refused, &error), &error,
                "context.retry_throttled must be 0 or 1, not 255"));
  CHECK(refused.internal == NULL); /* nothing decided, nothing to release */
  flags.idempotent = 1;
  flags.retry_throttled = 0;
  CHECK(recourse_engine_decide(engine, &e, &flags, &refused, NULL) == RECOURSE_OK);
  CHECK(refused.route == RECOURSE_RETRY);
  recourse_decision_release(&refused);
  recourse_engine_options too_small = {4, 1};
  CHECK(recourse_engine_new(&too_small) == NULL);
  recourse_engine_options not_a_flag = {sizeof not_a_flag, 2};
  CHECK(recourse_engine_new(&not_a_flag) == NULL);

  c.attempt = 0;
  recourse_decision rejected;
  memset(&rejected, 0, sizeof rejected);
  rejected.size = sizeof rejected;
  error = NULL;
  CHECK(recourse_engine_decide(engine, &e, &c, &rejected, &error) == RECOURSE_BAD_INPUT);
  CHECK(contains(error, "context.attempt"));
  recourse_string_free(error);
  c.attempt = 1;

  /* Strings are held to read_context()'s rules: valid UTF-8, at most 4096 bytes. */
  c.operation_id = "op-\xff";
  error = NULL;
  CHECK(recourse_engine_decide(engine, &e, &c, &rejected, &error) == RECOURSE_BAD_INPUT);
  CHECK(contains(error, "context.operationId is not valid UTF-8"));
  recourse_string_free(error);
  static char long_tool[4098];
  memset(long_tool, 't', sizeof long_tool - 1);
  c.operation_id = NULL;
  c.tool = long_tool;
  error = NULL;
  CHECK(recourse_engine_decide(engine, &e, &c, &rejected, &error) == RECOURSE_BAD_INPUT);
  CHECK(contains(error, "context.tool is longer than 4096 bytes"));
  recourse_string_free(error);
  long_tool[4096] = '\0';
  CHECK(recourse_engine_decide(engine, &e, &c, &rejected, &error) == RECOURSE_OK);
  recourse_decision_release(&rejected);
  c.tool = "pay";
  c.operation_id = "op-7";

  /* Reload: new decisions see the new bundle, the kept one still reads its strings. */
  CHECK(load(engine, kEscalate, NULL) == RECOURSE_OK);
  recourse_decision after;
  memset(&after, 0, sizeof after);
  after.size = sizeof after;
  CHECK(recourse_engine_decide(engine, &e, &c, &after, NULL) == RECOURSE_OK);
  CHECK(after.route == RECOURSE_ESCALATE);
  CHECK(strcmp(after.reason, "call the bank") == 0);
  CHECK(strcmp(after.policy_hash, d.policy_hash) != 0);
  CHECK(strcmp(d.rule, "throttled") == 0 && d.route == RECOURSE_RETRY);
  recourse_decision_release(&after);
  recourse_decision_release(&d);
  recourse_decision_release(&d); /* twice is harmless */

  CHECK(logged ==
        5); /* every decision a policy made, the unreadable one included; not the rejected inputs */
  CHECK(recourse_engine_set_log(engine, NULL, NULL) == RECOURSE_OK);
  char* counters = recourse_engine_counters_json(engine);
  CHECK(contains(counters, "\"decisions\":6"));
  CHECK(contains(counters, "\"retry\":3"));
  recourse_string_free(counters);

  /* Files. */
  const char* paths[] = {argv[1]};
  CHECK(recourse_engine_load_paths(engine, paths, 1, NULL) == RECOURSE_OK);
  const char* missing[] = {"/nonexistent/rules"};
  diagnostics = NULL;
  CHECK(recourse_engine_load_paths(engine, missing, 1, &diagnostics) == RECOURSE_COMPILE_FAILED);
  CHECK(contains(diagnostics, "E000"));
  recourse_string_free(diagnostics);
  const char* pay = "{\"tool\":\"payments.create\",\"sideEffect\":\"committed\"}";
  decision = NULL;
  CHECK(recourse_engine_decide_json(engine, envelope, strlen(envelope), pay, strlen(pay), &decision,
                                    NULL) == RECOURSE_OK);
  CHECK(contains(decision, "\"rule\":\"already_charged\""));
  recourse_string_free(decision);
  /* A key given twice makes the context malformed, whichever value comes last. */
  const char* twice =
      "{\"tool\":\"payments.create\",\"sideEffect\":\"committed\",\"sideEffect\":\"none\"}";
  decision = NULL;
  CHECK(recourse_engine_decide_json(engine, envelope, strlen(envelope), twice, strlen(twice),
                                    &decision, &error) == RECOURSE_BAD_INPUT);
  CHECK(decision == NULL);
  CHECK(contains(error, "context.sideEffect appears more than once"));
  recourse_string_free(error);

  /* Argument errors are statuses with the reason in `error`, never crashes. */
  CHECK(invalid(recourse_engine_decide_json(NULL, envelope, 1, NULL, 0, &decision, &error), &error,
                "engine is NULL"));
  CHECK(invalid(recourse_engine_decide_json(engine, NULL, 3, NULL, 0, &decision, &error), &error,
                "envelope_json is NULL, envelope_len 3"));
  CHECK(invalid(recourse_engine_decide(engine, NULL, &c, &d, &error), &error, "envelope is NULL"));
  recourse_decision small = {0};
  snprintf(expected, sizeof expected, "decision->size is 0, below the %zu bytes of ABI 1's struct",
           sizeof(recourse_decision));
  CHECK(invalid(recourse_engine_decide(engine, &e, &c, &small, &error), &error, expected));
  CHECK(recourse_engine_decide(engine, &e, &c, NULL, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_load_sources(engine, NULL, 1, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_set_log(NULL, NULL, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_counters_json(NULL) == NULL);

  /* ABI 1.2: a candidate decides beside the live bundle; its disagreements are counted and
   * logged, the live decision is unchanged, and a candidate that fails to compile or a drop
   * leaves the live bundle as it was. */
  CHECK(recourse_abi_minor() >= 2);
  recourse_engine* shadowed = recourse_engine_new(NULL);
  CHECK(load(shadowed, kRetry, NULL) == RECOURSE_OK);
  recourse_source candidate = {"pay.recourse", kEscalate, strlen(kEscalate)};
  CHECK(recourse_engine_load_candidate_sources(shadowed, &candidate, 1, NULL) == RECOURSE_OK);
  recourse_source broken = {"pay.recourse", "policy \"pay\" {", 14};
  diagnostics = NULL;
  CHECK(recourse_engine_load_candidate_sources(shadowed, &broken, 1, &diagnostics) ==
        RECOURSE_COMPILE_FAILED);
  CHECK(contains(diagnostics, "\"severity\":\"error\""));
  recourse_string_free(diagnostics);
  char* record = NULL;
  CHECK(recourse_engine_set_log(shadowed, keep_record, &record) == RECOURSE_OK);
  CHECK(route_of(shadowed, &e, &c, "throttled") == RECOURSE_RETRY);
  CHECK(contains(record, "\"shadow\":{\"differences\":[\"route\",\"delay\""));
  CHECK(contains(record, "\"reason\":\"call the bank\""));
  char* shadow = recourse_engine_shadow_json(shadowed);
  CHECK(contains(shadow, "\"decisions\":1,\"disagreements\":1"));
  CHECK(contains(shadow, "\"throttled -> throttled\":1"));
  recourse_string_free(shadow);
  CHECK(recourse_engine_drop_candidate(shadowed) == RECOURSE_OK);
  CHECK(route_of(shadowed, &e, &c, "throttled") == RECOURSE_RETRY);
  CHECK(!contains(record, "\"shadow\""));
  const char* candidate_paths[] = {"/nonexistent/rules"};
  CHECK(recourse_engine_load_candidate_paths(shadowed, candidate_paths, 1, NULL) ==
        RECOURSE_COMPILE_FAILED);
  CHECK(recourse_engine_drop_candidate(NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_shadow_json(NULL) == NULL);
  CHECK(recourse_engine_load_candidate_paths(NULL, candidate_paths, 1, NULL) ==
        RECOURSE_INVALID_ARGUMENT);
  recourse_engine_set_log(shadowed, NULL, NULL);
  free(record);
  recourse_engine_free(shadowed);

  recourse_engine_free(engine);
  recourse_engine_free(NULL);
  if (failures == 0) printf("c_api_test: ok\n");
  return failures == 0 ? 0 : 1;
}
