/* The C API from C: versions, compile (text and files), decide (JSON and structs), reload with a
 * failed compile, decisions kept across a reload, the log callback, counters, argument errors.
 *
 *   c_api_test RULES_DIR
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recourse/recourse.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

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

static void count_record(void* user, const char* record, size_t len) {
  if (len == strlen(record) && contains(record, "\"policyHash\":\"sha256:")) ++*(int*)user;
}

static recourse_status load(recourse_engine* engine, const char* text, char** diagnostics) {
  recourse_source source = {"pay.recourse", text, strlen(text)};
  return recourse_engine_load_sources(engine, &source, 1, diagnostics);
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

  /* A caller built against a shorter struct: the fields past its size read as absent. */
  recourse_envelope shorter = e;
  shorter.trace_id = "t-ignored";
  shorter.size = offsetof(recourse_envelope, trace_id);
  recourse_decision older;
  memset(&older, 0, sizeof older);
  older.size = sizeof older;
  CHECK(recourse_engine_decide(engine, &shorter, &c, &older, NULL) == RECOURSE_OK);
  CHECK(strncmp(older.trace_id, "local-", 6) == 0);
  recourse_decision_release(&older);

  c.attempt = 0;
  recourse_decision rejected;
  memset(&rejected, 0, sizeof rejected);
  rejected.size = sizeof rejected;
  error = NULL;
  CHECK(recourse_engine_decide(engine, &e, &c, &rejected, &error) == RECOURSE_BAD_INPUT);
  CHECK(contains(error, "context.attempt"));
  recourse_string_free(error);
  c.attempt = 1;

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

  CHECK(logged == 5); /* every decision, the unreadable one included; not the rejected inputs */
  CHECK(recourse_engine_set_log(engine, NULL, NULL) == RECOURSE_OK);
  char* counters = recourse_engine_counters_json(engine);
  CHECK(contains(counters, "\"decisions\":5"));
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

  /* Argument errors are statuses, never crashes. */
  CHECK(recourse_engine_decide_json(NULL, envelope, 1, NULL, 0, &decision, NULL) ==
        RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_decide(engine, NULL, &c, &d, NULL) == RECOURSE_INVALID_ARGUMENT);
  recourse_decision small = {0};
  CHECK(recourse_engine_decide(engine, &e, &c, &small, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_load_sources(engine, NULL, 1, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_set_log(NULL, NULL, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_counters_json(NULL) == NULL);

  recourse_engine_free(engine);
  recourse_engine_free(NULL);
  if (failures == 0) printf("c_api_test: ok\n");
  return failures == 0 ? 0 : 1;
}
