/* The C API's ABI 1.1 and 1.2 from C: the minor version, the adapters (a raw form to an envelope),
 * the stores, Workflow and Health handles, and the runner's step machine driven with JSON on a fake
 * clock (a 429 waited out with the same key, a repair with a new key, success, cancellation);
 * and, for every new entry point, its argument errors (NULL pointers, invalid JSON, outcomes out
 * of order), each a status with a reason, never a crash; and ABI 1.2's explanation as JSON.
 *
 *   c_api_runner_test
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"
#include "recourse/recourse.h"

static const char* kOrders =
    "version 1\n"
    "policy \"orders.create\" {\n"
    "  tool { idempotent = false  arguments = [amount]  idempotency_keys = true }\n"
    "  limits { attempts = 4  repairs = 1  deadline = 2m }\n"
    "  backoff constant base 100ms jitter none\n"
    "  rule throttled when code == RATE_LIMITED and side_effect == none -> retry\n"
    "  rule fix when code == VALIDATION and field in arguments -> repair\n"
    "  default -> stop\n"
    "}\n";

/* A read whose breaker opens on one failure, with a fallback. */
static const char* kSearch =
    "version 1\n"
    "policy \"search.query\" {\n"
    "  tool { idempotent = true  fallback = \"search.cache\" }\n"
    "  breaker { failures = 1  cooldown = 30s }\n"
    "  backoff constant base 100ms jitter none\n"
    "  rule transient when code == TRANSIENT -> retry\n"
    "  default -> stop\n"
    "}\n";

static const int64_t kT0 = 1700000000000;

static int contains(const char* text, const char* part) {
  return text != NULL && strstr(text, part) != NULL;
}

/* The string value of "idempotencyKey" in an action, copied into `key` (empty when absent). */
static void key_of(const char* action, char* key, size_t size) {
  const char* at = action ? strstr(action, "\"idempotencyKey\":\"") : NULL;
  size_t n = 0;
  if (at)
    for (at += strlen("\"idempotencyKey\":\""); at[n] != '"' && n + 1 < size; ++n) key[n] = at[n];
  key[n] = '\0';
}

/* A status `want`, with a reason in `error` (freed here). */
static int fails_with(recourse_status got, recourse_status want, char** error) {
  const int ok = got == want && *error != NULL && (*error)[0] != '\0';
  if (!ok) fprintf(stderr, "status %d (want %d), error: %s\n", got, want, *error ? *error : "-");
  recourse_string_free(*error);
  *error = NULL;
  return ok;
}

/* Reports `outcome` and expects RECOURSE_OK. */
static int report(recourse_runner* runner, const char* outcome, int64_t now) {
  char* error = NULL;
  const recourse_status s = recourse_runner_report(runner, outcome, strlen(outcome), now, &error);
  if (s != RECOURSE_OK) fprintf(stderr, "report: %s\n", error ? error : "-");
  recourse_string_free(error);
  return s == RECOURSE_OK;
}

/* The next action's JSON (the caller frees it). */
static char* next(recourse_runner* runner, int64_t now) {
  char *action = NULL, *error = NULL;
  CHECK(recourse_runner_next(runner, now, &action, &error) == RECOURSE_OK);
  recourse_string_free(error);
  return action;
}

static void test_adapters(void) {
  char *adapted = NULL, *error = NULL;
  const char* raw = "{\"status\":429,\"headers\":{\"Retry-After\":\"2\"},\"body\":\"slow\"}";
  CHECK(recourse_adapt_json("http", raw, strlen(raw), RECOURSE_ABSENT, &adapted, &error) ==
        RECOURSE_OK);
  CHECK(contains(adapted, "\"envelope\":{\"code\":\"RATE_LIMITED\""));
  CHECK(contains(adapted, "\"retryAfterMs\":2000"));
  CHECK(contains(adapted, "\"mapping\":\"http 429\""));
  recourse_string_free(adapted);
  adapted = NULL;
  const char* grpc =
      "{\"status\":\"UNAVAILABLE\",\"metadata\":{\"grpc-retry-pushback-ms\":\"-1\"}}";
  CHECK(recourse_adapt_json(NULL, grpc, strlen(grpc), kT0, &adapted, &error) == RECOURSE_OK);
  CHECK(contains(adapted, "\"code\":\"TRANSIENT\""));
  CHECK(contains(adapted, "\"retryable\":false"));
  CHECK(contains(adapted, "\"warnings\":[{"));
  recourse_string_free(adapted);
  adapted = NULL;

  CHECK(fails_with(recourse_adapt_json("http", "nope", 4, kT0, &adapted, &error),
                   RECOURSE_BAD_INPUT, &error));
  CHECK(fails_with(recourse_adapt_json("auto", "{}", 2, kT0, &adapted, &error), RECOURSE_BAD_INPUT,
                   &error));
  CHECK(fails_with(recourse_adapt_json(NULL, NULL, 0, kT0, &adapted, &error), RECOURSE_BAD_INPUT,
                   &error));
  CHECK(fails_with(recourse_adapt_json("smtp", raw, strlen(raw), kT0, &adapted, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(fails_with(recourse_adapt_json("http", NULL, 3, kT0, &adapted, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(fails_with(recourse_adapt_json("http", raw, strlen(raw), kT0, NULL, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(adapted == NULL);
  CHECK(recourse_adapt_json("http", raw, strlen(raw), kT0, NULL, NULL) ==
        RECOURSE_INVALID_ARGUMENT);
}

static void test_state(void) {
  recourse_store* store = NULL;
  char* error = NULL;
  CHECK(recourse_store_open("memory", &store, &error) == RECOURSE_OK);
  CHECK(store != NULL && error == NULL);
  recourse_store* other = (recourse_store*)1;
  CHECK(fails_with(recourse_store_open("floppy:/a", &other, &error), RECOURSE_BAD_INPUT, &error));
  CHECK(other == NULL);
  CHECK(fails_with(recourse_store_open("redis://host:99999", &other, &error), RECOURSE_BAD_INPUT,
                   &error));
  /* A store that cannot be opened (or a kind this build left out). */
  const recourse_status s = recourse_store_open("sqlite:/nonexistent/dir/x.db", &other, &error);
  CHECK(s == RECOURSE_UNAVAILABLE || s == RECOURSE_BAD_INPUT);
  CHECK(fails_with(s, s, &error));
  CHECK(fails_with(recourse_store_open(NULL, &other, &error), RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(fails_with(recourse_store_open("memory", NULL, &error), RECOURSE_INVALID_ARGUMENT, &error));

  recourse_health* health = recourse_health_new(store);
  recourse_workflow* workflow = recourse_workflow_new(store, "scope");
  recourse_store_free(store); /* the handles keep it */
  CHECK(health != NULL && workflow != NULL);
  recourse_circuit circuit = RECOURSE_CIRCUIT_OPEN;
  CHECK(recourse_health_circuit(health, "search.query", &circuit) == RECOURSE_OK);
  CHECK(circuit == RECOURSE_CIRCUIT_CLOSED);
  CHECK(recourse_health_circuit(NULL, "t", &circuit) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_health_circuit(health, NULL, &circuit) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_health_circuit(health, "t", NULL) == RECOURSE_INVALID_ARGUMENT);
  char* json = recourse_health_json(health);
  CHECK(contains(json, "\"tools\""));
  recourse_string_free(json);
  json = recourse_workflow_json(workflow);
  CHECK(contains(json, "\"version\":2"));
  recourse_string_free(json);
  CHECK(recourse_health_json(NULL) == NULL);
  CHECK(recourse_workflow_json(NULL) == NULL);
  recourse_health_free(health);
  recourse_workflow_free(workflow);
  recourse_health_free(NULL);
  recourse_workflow_free(NULL);
  recourse_store_free(NULL);
}

/* An engine over one policy file, and a memory store with a Health and a Workflow on it. */
typedef struct {
  recourse_engine* engine;
  recourse_store* store;
  recourse_health* health;
  recourse_workflow* workflow;
} Loop;

static Loop loop_of(const char* path, const char* policy) {
  Loop loop = {recourse_engine_new(NULL), NULL, NULL, NULL};
  recourse_source source = {path, policy, strlen(policy)};
  char* diagnostics = NULL;
  CHECK(recourse_engine_load_sources(loop.engine, &source, 1, &diagnostics) == RECOURSE_OK);
  recourse_string_free(diagnostics);
  CHECK(recourse_store_open("memory", &loop.store, NULL) == RECOURSE_OK);
  loop.health = recourse_health_new(loop.store);
  loop.workflow = recourse_workflow_new(loop.store, NULL);
  return loop;
}

static void loop_free(Loop* loop) {
  recourse_workflow_free(loop->workflow);
  recourse_health_free(loop->health);
  recourse_store_free(loop->store);
  recourse_engine_free(loop->engine);
}

static void test_runner(void) {
  Loop loop = loop_of("orders.recourse", kOrders);
  const char* spec =
      "{\"tool\":\"orders.create\",\"operationId\":\"op-7\",\"arguments\":{\"amount\":-1}}";
  recourse_runner* runner = NULL;
  char* error = NULL;

  /* Argument errors. */
  recourse_runner* none = (recourse_runner*)1;
  CHECK(fails_with(recourse_runner_new(NULL, loop.workflow, loop.health, loop.store, spec,
                                       strlen(spec), &none, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(fails_with(recourse_runner_new(loop.engine, NULL, loop.health, loop.store, spec,
                                       strlen(spec), &none, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(fails_with(recourse_runner_new(loop.engine, loop.workflow, NULL, loop.store, spec,
                                       strlen(spec), &none, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(fails_with(recourse_runner_new(loop.engine, loop.workflow, loop.health, loop.store, spec,
                                       strlen(spec), NULL, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(fails_with(recourse_runner_new(loop.engine, loop.workflow, loop.health, loop.store, NULL, 5,
                                       &none, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  CHECK(none == NULL);
  const char* bad_specs[] = {"",
                             "[1]",
                             "{\"tool\":",
                             "{\"tool\":7,\"operationId\":\"x\"}",
                             "{\"tool\":\"t\"}",
                             "{\"tool\":\"t\",\"operationId\":\"x\",\"deadlineMs\":-1}"};
  for (size_t i = 0; i < sizeof bad_specs / sizeof *bad_specs; ++i)
    CHECK(fails_with(recourse_runner_new(loop.engine, loop.workflow, loop.health, loop.store,
                                         bad_specs[i], strlen(bad_specs[i]), &none, &error),
                     RECOURSE_BAD_INPUT, &error));

  CHECK(recourse_runner_new(loop.engine, loop.workflow, loop.health, loop.store, spec, strlen(spec),
                            &runner, &error) == RECOURSE_OK);
  char first_key[80], key[80];
  char* action = next(runner, kT0);
  CHECK(contains(action, "\"step\":\"call\""));
  CHECK(contains(action, "\"arguments\":{\"amount\":-1}"));
  key_of(action, first_key, sizeof first_key);
  CHECK(strlen(first_key) == 32);
  recourse_string_free(action);

  /* Out of order, or not an outcome: refused, the call still out. */
  CHECK(fails_with(recourse_runner_report(runner, "{\"outcome\":\"resume\"}", 20, kT0, &error),
                   RECOURSE_BAD_INPUT, &error));
  CHECK(fails_with(recourse_runner_report(runner, "{oops", 5, kT0, &error), RECOURSE_BAD_INPUT,
                   &error));
  CHECK(fails_with(recourse_runner_report(runner, "{\"outcome\":\"failure\"}", 21, kT0, &error),
                   RECOURSE_BAD_INPUT, &error));
  CHECK(fails_with(recourse_runner_report(runner, NULL, 0, kT0, &error), RECOURSE_INVALID_ARGUMENT,
                   &error));
  CHECK(fails_with(recourse_runner_report(NULL, "{}", 2, kT0, &error), RECOURSE_INVALID_ARGUMENT,
                   &error));
  CHECK(fails_with(recourse_runner_set_arguments(runner, "{}", 2, &error), RECOURSE_BAD_INPUT,
                   &error));
  CHECK(fails_with(recourse_runner_next(NULL, kT0, &action, &error), RECOURSE_INVALID_ARGUMENT,
                   &error));
  CHECK(fails_with(recourse_runner_next(runner, kT0, NULL, &error), RECOURSE_INVALID_ARGUMENT,
                   &error));

  /* A 429 with Retry-After: 2 waits 2000 ms, then the same key. */
  CHECK(report(runner,
               "{\"outcome\":\"failure\",\"protocol\":\"http\",\"sideEffect\":\"none\","
               "\"raw\":{\"status\":429,\"headers\":{\"Retry-After\":\"2\"}}}",
               kT0 + 10));
  action = next(runner, kT0 + 10);
  CHECK(contains(action, "\"step\":\"wait\",\"tool\":\"orders.create\""));
  CHECK(contains(action, "\"waitMs\":2000"));
  CHECK(contains(action, "\"rule\":\"throttled\""));
  recourse_string_free(action);
  CHECK(fails_with(recourse_runner_set_arguments(runner, "{not json", 9, &error),
                   RECOURSE_BAD_INPUT, &error));
  CHECK(fails_with(recourse_runner_set_arguments(NULL, "{}", 2, &error), RECOURSE_INVALID_ARGUMENT,
                   &error));
  CHECK(fails_with(recourse_runner_set_arguments(runner, NULL, 0, &error),
                   RECOURSE_INVALID_ARGUMENT, &error));
  /* The same value spelt otherwise (spaces, -1.0): the same key, the arguments sent as given. */
  const char* respelt = "{ \"amount\": -1.0 }";
  CHECK(recourse_runner_set_arguments(runner, respelt, strlen(respelt), NULL) == RECOURSE_OK);
  action = next(runner, kT0 + 2010);
  CHECK(contains(action, "\"step\":\"call\""));
  CHECK(contains(action, "\"attempt\":2"));
  CHECK(contains(action, "\"arguments\":{\"amount\":-1.0}"));
  key_of(action, key, sizeof key);
  CHECK(strcmp(key, first_key) == 0);
  recourse_string_free(action);

  /* A validation error on amount: a repair, then a new key for the new body. */
  CHECK(report(runner,
               "{\"outcome\":\"failure\",\"sideEffect\":\"none\",\"envelope\":{\"code\":"
               "\"VALIDATION\",\"field\":\"amount\",\"suggestion\":\"positive\"}}",
               kT0 + 2050));
  action = next(runner, kT0 + 2050);
  CHECK(contains(action, "\"step\":\"repair\""));
  CHECK(contains(action, "\"suggestion\":\"positive\""));
  recourse_string_free(action);
  CHECK(report(runner, "{\"outcome\":\"resume\",\"arguments\":{\"amount\":1}}", kT0 + 2060));
  action = next(runner, kT0 + 2060);
  CHECK(contains(action, "\"arguments\":{\"amount\":1}"));
  key_of(action, key, sizeof key);
  CHECK(strlen(key) == 32 && strcmp(key, first_key) != 0);
  recourse_string_free(action);
  CHECK(report(runner, "{\"outcome\":\"success\"}", kT0 + 2100));
  action = next(runner, kT0 + 2100);
  CHECK(contains(action, "\"step\":\"done\""));
  CHECK(contains(action, "\"ending\":\"success\""));
  CHECK(contains(action, "\"elapsedMs\":2100"));
  recourse_string_free(action);
  CHECK(fails_with(recourse_runner_report(runner, "{\"outcome\":\"success\"}", 21, kT0, &error),
                   RECOURSE_BAD_INPUT, &error));
  recourse_runner_free(runner);

  /* Cancellation. */
  const char* spec2 = "{\"tool\":\"orders.create\",\"operationId\":\"op-8\",\"deadlineMs\":60000}";
  CHECK(recourse_runner_new(loop.engine, loop.workflow, loop.health, NULL, spec2, strlen(spec2),
                            &runner, &error) == RECOURSE_OK);
  recourse_runner_cancel(runner);
  recourse_runner_cancel(NULL);
  action = next(runner, kT0);
  CHECK(contains(action, "\"ending\":\"cancelled\""));
  recourse_string_free(action);
  recourse_runner_free(runner);
  recourse_runner_free(NULL);

  loop_free(&loop);
}

/* A circuit opened by one operation refuses the next operation's call before it is made: its
 * first action calls the fallback, with the circuit:open decision. */
static void test_open_circuit(void) {
  Loop loop = loop_of("search.recourse", kSearch);
  const char* spec = "{\"tool\":\"search.query\",\"operationId\":\"op-1\",\"arguments\":{}}";
  recourse_runner* runner = NULL;
  CHECK(recourse_runner_new(loop.engine, loop.workflow, loop.health, loop.store, spec, strlen(spec),
                            &runner, NULL) == RECOURSE_OK);
  char* action = next(runner, kT0);
  CHECK(contains(action, "\"step\":\"call\",\"tool\":\"search.query\""));
  recourse_string_free(action);
  CHECK(
      report(runner, "{\"outcome\":\"failure\",\"envelope\":{\"code\":\"TRANSIENT\"}}", kT0 + 10));
  recourse_runner_free(runner);
  recourse_circuit circuit = RECOURSE_CIRCUIT_CLOSED;
  CHECK(recourse_health_circuit(loop.health, "search.query", &circuit) == RECOURSE_OK);
  CHECK(circuit == RECOURSE_CIRCUIT_OPEN);

  const char* spec2 = "{\"tool\":\"search.query\",\"operationId\":\"op-2\",\"arguments\":{}}";
  CHECK(recourse_runner_new(loop.engine, loop.workflow, loop.health, loop.store, spec2,
                            strlen(spec2), &runner, NULL) == RECOURSE_OK);
  action = next(runner, kT0 + 1000);
  CHECK(contains(action, "\"step\":\"call\",\"tool\":\"search.cache\",\"attempt\":1"));
  CHECK(contains(action, "\"rule\":\"circuit:open\""));
  CHECK(contains(action, "\"route\":\"replace\""));
  recourse_string_free(action);
  CHECK(report(runner, "{\"outcome\":\"success\"}", kT0 + 1010));
  action = next(runner, kT0 + 1010);
  CHECK(contains(action, "\"ending\":\"success\""));
  CHECK(contains(action, "\"tool\":\"search.cache\""));
  recourse_string_free(action);
  recourse_runner_free(runner);
  loop_free(&loop);
}

/* ABI 1.2: recourse_engine_explain_json names the rules tried and the test that held. */
static void test_explain(void) {
  recourse_engine* engine = recourse_engine_new(NULL);
  recourse_source source = {"orders.recourse", kOrders, strlen(kOrders)};
  CHECK(recourse_engine_load_sources(engine, &source, 1, NULL) == RECOURSE_OK);
  const char* envelope = "{\"code\":\"RATE_LIMITED\",\"retryAfterMs\":500}";
  const char* context = "{\"tool\":\"orders.create\",\"sideEffect\":\"none\"}";
  char* explanation = NULL;
  char* error = NULL;
  CHECK(recourse_engine_explain_json(engine, envelope, strlen(envelope), context, strlen(context),
                                     &explanation, &error) == RECOURSE_OK);
  CHECK(contains(explanation, "\"policy\":\"orders.create\",\"rules\":[{\"rule\":\"throttled\""));
  CHECK(contains(explanation, "\"matched\":true"));
  CHECK(contains(explanation, "\"guard\":\"\",\"decision\":{\"route\":\"retry\",\"delayMs\":500"));
  recourse_string_free(explanation);
  const char* other = "{\"tool\":\"other\"}";
  explanation = NULL;
  CHECK(recourse_engine_explain_json(engine, envelope, strlen(envelope), other, strlen(other),
                                     &explanation, &error) == RECOURSE_BAD_INPUT);
  CHECK(explanation == NULL && contains(error, "no policy for tool \"other\""));
  recourse_string_free(error);
  error = NULL;
  CHECK(recourse_engine_explain_json(engine, "[]", 2, context, strlen(context), &explanation,
                                     &error) == RECOURSE_BAD_INPUT);
  CHECK(error != NULL);
  recourse_string_free(error);
  CHECK(recourse_engine_explain_json(NULL, envelope, strlen(envelope), context, strlen(context),
                                     &explanation, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_engine_explain_json(engine, envelope, strlen(envelope), context, strlen(context),
                                     NULL, NULL) == RECOURSE_INVALID_ARGUMENT);
  recourse_engine_free(engine);
}

/* ABI 1.3: recourse_format, recourse_engine_dump and recourse_engine_tests_json. */
static void test_authoring(void) {
  const char* messy = "version 1\npolicy \"a\" {   default   ->   stop\n}\n";
  char* formatted = NULL;
  char* diagnostics = NULL;
  CHECK(recourse_format("a.recourse", messy, strlen(messy), &formatted, &diagnostics) ==
        RECOURSE_OK);
  CHECK(formatted != NULL &&
        strcmp(formatted, "version 1\npolicy \"a\" {\n  default -> stop\n}\n") == 0);
  CHECK(diagnostics != NULL && strcmp(diagnostics, "[]") == 0);
  recourse_string_free(diagnostics);
  char* again = NULL;
  CHECK(recourse_format("a.recourse", formatted, strlen(formatted), &again, NULL) == RECOURSE_OK);
  CHECK(again != NULL && strcmp(again, formatted) == 0);
  recourse_string_free(again);
  recourse_string_free(formatted);
  const char* broken = "version 1\npolicy \"a\" {\n  default -> \n}\n";
  formatted = NULL;
  CHECK(recourse_format("a.recourse", broken, strlen(broken), &formatted, &diagnostics) ==
        RECOURSE_COMPILE_FAILED);
  CHECK(formatted == NULL &&
        contains(diagnostics, "\"code\":\"E001\",\"column\":1,\"file\":\"a.recourse\"") &&
        contains(diagnostics, "\"line\":4,"));
  recourse_string_free(diagnostics);
  CHECK(recourse_format("a.recourse", NULL, 3, &formatted, NULL) == RECOURSE_INVALID_ARGUMENT);
  CHECK(recourse_format("a.recourse", messy, strlen(messy), NULL, NULL) ==
        RECOURSE_INVALID_ARGUMENT);

  const char* tested =
      "version 1\n"
      "policy \"orders.create\" {\n"
      "  backoff constant base 100ms jitter none\n"
      "  rule throttled when code == RATE_LIMITED -> retry\n"
      "  default -> stop\n"
      "  test \"a throttle retries\" {\n"
      "    envelope {\"code\": \"RATE_LIMITED\"}\n"
      "    context {\"sideEffect\": \"none\"}\n"
      "    expect retry delay 100ms rule throttled\n"
      "  }\n"
      "  test \"a timeout retries\" {\n"
      "    envelope {\"code\": \"TIMEOUT\"}\n"
      "    expect retry\n"
      "  }\n"
      "}\n";
  recourse_engine* engine = recourse_engine_new(NULL);
  char* dump = recourse_engine_dump(engine);
  CHECK(dump != NULL && strcmp(dump, "") == 0);
  recourse_string_free(dump);
  recourse_source source = {"orders.recourse", tested, strlen(tested)};
  CHECK(recourse_engine_load_sources(engine, &source, 1, NULL) == RECOURSE_OK);
  dump = recourse_engine_dump(engine);
  CHECK(contains(dump, "policy \"orders.create\"") && contains(dump, "throttled"));
  recourse_string_free(dump);
  char* results = recourse_engine_tests_json(engine);
  CHECK(contains(results,
                 "[{\"policy\":\"orders.create\",\"name\":\"a throttle retries\","
                 "\"file\":\"orders.recourse\",\"line\":6,\"column\":3,"));
  CHECK(contains(results, "\"passed\":true,\"expected\":\"retry rule throttled delay 100ms\""));
  CHECK(contains(results,
                 "\"name\":\"a timeout retries\",\"file\":\"orders.recourse\","
                 "\"line\":11,\"column\":3,"));
  CHECK(contains(results,
                 "\"passed\":false,\"expected\":\"retry\",\"actual\":\"stop rule default\""));
  CHECK(contains(results, "\"envelope\":{\"code\":\"TIMEOUT\""));
  recourse_string_free(results);
  CHECK(recourse_engine_dump(NULL) == NULL);
  CHECK(recourse_engine_tests_json(NULL) == NULL);
  recourse_engine_free(engine);
}

int main(void) {
  CHECK(recourse_abi_version() == RECOURSE_ABI_VERSION);
  CHECK(recourse_abi_minor() == RECOURSE_ABI_MINOR);
  CHECK(RECOURSE_ABI_MINOR == 3);
  CHECK(contains(recourse_status_string(RECOURSE_UNAVAILABLE), "store"));
  test_adapters();
  test_state();
  test_runner();
  test_open_circuit();
  test_explain();
  test_authoring();
  if (failures == 0) printf("c_api_runner_test: ok\n");
  return failures == 0 ? 0 : 1;
}
