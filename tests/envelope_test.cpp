// Envelope reader: a malformed field is absent with a warning, never another valid value;
// extreme valid values are kept; whole-input problems are errors. Context reader: strict.
#include "support.hpp"
#include "wire/context.hpp"

namespace {

recourse::Result<recourse::Envelope> read(const std::string& json) {
  return recourse::read_envelope(json);
}

}  // namespace

TEST_CASE("envelope: the seed's ToolError is read field by field", "[envelope]") {
  auto e = test::envelope(
      R"({"code":"VALIDATION","message":"bad","retryable":false,"field":"amount",)"
      R"("suggestion":"use cents","retryAfterMs":250,"traceId":"t-1","extra":{"a":[1,2]}})");
  CHECK(e.code == "VALIDATION");
  CHECK(e.message == "bad");
  CHECK(e.retryable == false);
  CHECK(e.field == "amount");
  CHECK(e.suggestion == "use cents");
  CHECK(e.retry_after_ms == 250);
  CHECK(e.trace_id == "t-1");
  CHECK(e.warnings.empty());
}

TEST_CASE("envelope: malformed fields read as absent with a warning", "[envelope]") {
  struct Row {
    const char* json;
    const char* field;
    const char* kind;
  };
  const Row rows[] = {
      {R"({"retryAfterMs":"NaN"})", "retryAfterMs", "malformed"},
      {R"({"retryAfterMs":-5})", "retryAfterMs", "malformed"},
      {R"({"retryAfterMs":-0.5})", "retryAfterMs", "malformed"},
      {R"({"retryAfterMs":1e999})", "retryAfterMs", "malformed"},
      {R"({"retryAfterMs":true})", "retryAfterMs", "malformed"},
      {R"({"retryAfterMs":[1]})", "retryAfterMs", "malformed"},
      {R"({"retryable":"yes"})", "retryable", "malformed"},
      {R"({"retryable":1})", "retryable", "malformed"},
      {R"({"retryable":null})", "retryable", "null"},
      {R"({"code":42})", "code", "malformed"},
      {R"({"code":""})", "code", "malformed"},
      {R"({"code":{"name":"TRANSIENT"}})", "code", "malformed"},
      {R"({"field":["amount"]})", "field", "malformed"},
      {R"({"traceId":""})", "traceId", "malformed"},
  };
  for (const auto& row : rows) {
    INFO(row.json);
    auto r = read(row.json);
    REQUIRE(r.ok());
    const auto& e = *r;
    CHECK_FALSE(e.code.has_value());
    CHECK_FALSE(e.retryable.has_value());
    CHECK_FALSE(e.retry_after_ms.has_value());
    CHECK_FALSE(e.field.has_value());
    CHECK_FALSE(e.trace_id.has_value());
    REQUIRE(e.warnings.size() == 1);
    CHECK(e.warnings[0].field == row.field);
    CHECK(e.warnings[0].kind == row.kind);
  }
}

TEST_CASE("envelope: a duplicate key drops the field whatever the values", "[envelope]") {
  for (const char* json :
       {R"({"code":"TRANSIENT","code":"PERMISSION"})", R"({"code":"TRANSIENT","code":"TRANSIENT"})",
        R"({"code":7,"code":"TRANSIENT"})",
        R"({"code":"TRANSIENT","code":"PERMISSION","code":"X"})"}) {
    INFO(json);
    auto e = test::envelope(json);
    CHECK_FALSE(e.code.has_value());
    REQUIRE_FALSE(e.warnings.empty());
    CHECK(e.warnings.back().kind == "duplicate");
    CHECK(e.warnings.back().field == "code");
  }
  // Keys nested inside an unknown object are not envelope keys.
  auto e = test::envelope(R"({"code":"TRANSIENT","details":{"code":"PERMISSION"}})");
  CHECK(e.code == "TRANSIENT");
  CHECK(e.warnings.empty());
}

TEST_CASE("envelope: extreme but valid values are kept", "[envelope]") {
  CHECK(test::envelope(R"({"retryAfterMs":9999999999000})").retry_after_ms == 9999999999000);
  CHECK(test::envelope(R"({"retryAfterMs":1e300})").retry_after_ms ==
        std::numeric_limits<std::int64_t>::max());
  CHECK(test::envelope(R"({"retryAfterMs":18446744073709551615})").retry_after_ms ==
        std::numeric_limits<std::int64_t>::max());
  CHECK(test::envelope(R"({"retryAfterMs":0})").retry_after_ms == 0);
  // Fractions round up: 0.503 s sent as 502.1 ms never becomes an earlier retry.
  CHECK(test::envelope(R"({"retryAfterMs":502.1})").retry_after_ms == 503);
  CHECK(test::envelope(R"({"retryAfterMs":0.0001})").retry_after_ms == 1);
}

TEST_CASE("envelope: a number is read by its written value, not its nearest double", "[envelope]") {
  // -1e-400 is below zero: malformed, as -1e-300 and -0.000001 are, though the nearest double
  // is -0 (it read as a valid 0, turning a retry_after_max escalate into a retry).
  for (const char* json :
       {R"({"retryAfterMs":-1e-400})", R"({"retryAfterMs":-1E-400})", R"({"retryAfterMs":-1e-300})",
        R"({"retryAfterMs":-0.000001})", R"({"retryAfterMs":-0.0000001e-5000001})",
        R"({"retryAfterMs":-1e-99999999999999999999})"}) {
    INFO(json);
    auto r = read(json);
    REQUIRE(r.ok());
    CHECK_FALSE(r->retry_after_ms.has_value());
    REQUIRE(r->warnings.size() == 1);
    CHECK(r->warnings[0].kind == "malformed");
  }
  // Zero however written is 0 (-0 is not below zero); a fraction rounds up, however small or
  // however close to a whole number.
  const std::pair<const char*, std::int64_t> valid[] = {
      {R"({"retryAfterMs":-0})", 0},
      {R"({"retryAfterMs":-0.0})", 0},
      {R"({"retryAfterMs":-0e5})", 0},
      {R"({"retryAfterMs":0.000e-400})", 0},
      {R"({"retryAfterMs":1e-400})", 1},
      {R"({"retryAfterMs":4.9e-324})", 1},
      {R"({"retryAfterMs":1000.00000000000000001})", 1001},
      {R"({"retryAfterMs":1000000000000.0000001})", 1000000000001},
      {R"({"retryAfterMs":999.99999999999999999})", 1000},
      {R"({"retryAfterMs":1000.0})", 1000},
      {R"({"retryAfterMs":10000e-1})", 1000},
      {R"({"retryAfterMs":0.0000000000000000001e19})", 1},
      // Beyond 2^53 every double is whole: the least double not below the written value, never
      // one below it (19999999999999002.5 is nearest 19999999999999004; the double before that,
      // 19999999999999000, would shorten the server's wait).
      {R"({"retryAfterMs":19999999999999000.2})", 19999999999999004},
      {R"({"retryAfterMs":19999999999999002.5})", 19999999999999004},
      {R"({"retryAfterMs":19999999999999004.0})", 19999999999999004},
      {R"({"retryAfterMs":1.99999999999990025e16})", 19999999999999004},
  };
  for (const auto& [json, ms] : valid) {
    INFO(json);
    auto r = read(json);
    REQUIRE(r.ok());
    CHECK(r->retry_after_ms == ms);
    CHECK(r->warnings.empty());
  }
}

TEST_CASE("envelope: size limits drop a field, or reject the whole input", "[envelope]") {
  recourse::ReaderLimits limits;
  auto r = recourse::read_envelope(R"({"code":")" + std::string(65, 'A') + R"("})", limits);
  REQUIRE(r.ok());
  CHECK_FALSE(r->code.has_value());
  CHECK(r->warnings.at(0).kind == "oversized");
  limits.max_bytes = 10;
  r = recourse::read_envelope(R"({"code":"TRANSIENT"})", limits);
  CHECK_FALSE(r.ok());
  CHECK(r.message() == "envelope is 20 bytes; the limit is 10");
  r = recourse::read_envelope(
      R"({"a":1e999,"b":2e999,"c":3e999,"d":4e999,"e":5e999,"f":6e999,"g":7e999,"h":8e999,"i":9e999})");
  CHECK_FALSE(r.ok());
  CHECK(r.message() == "envelope has more than 8 numbers beyond the range of a double");
  r = recourse::read_envelope(R"({"code":"TIMEOUT","a":1e999,"retryAfterMs":-1e999})");
  REQUIRE(r.ok());
  CHECK(r->code == "TIMEOUT");
  CHECK(r->warnings.size() == 1);
  limits = {};
  limits.max_depth = 3;
  r = recourse::read_envelope(R"({"x":{"y":{"z":{}}}})", limits);
  CHECK_FALSE(r.ok());
  CHECK(r.message() == "envelope nested deeper than 3 levels");
}

TEST_CASE("envelope: input that is not a JSON object is an error, not an empty envelope",
          "[envelope]") {
  for (const char* json :
       {"", "[]", "[1,2]", "42", "\"TRANSIENT\"", "null", "{", "{\"code\":}", "{} {}"}) {
    INFO(json);
    auto r = read(json);
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.message().empty());
    CHECK(r.diagnostics().at(0).code == "N001");  // no envelope at all, not an empty one
  }
}

TEST_CASE("context: camelCase keys, strict types", "[envelope]") {
  auto c = test::context(
      R"({"tool":"t","idempotent":false,"sideEffect":"committed","attempt":2,"repairs":1,)"
      R"("elapsedMs":500,"arguments":["a","b"],"maxAttempts":4,"deadlineMs":9000,)"
      R"("operationId":"op","workflowId":"wf","budgets":{"ignored":true}})");
  CHECK(c.tool == "t");
  CHECK(c.idempotent == false);
  CHECK(c.side_effect == recourse::SideEffect::Committed);
  CHECK(c.attempt == 2);
  CHECK(c.repairs == 1);
  CHECK(c.elapsed_ms == 500);
  CHECK(c.arguments == std::vector<std::string>{"a", "b"});
  CHECK(c.max_attempts == 4);
  CHECK(c.deadline_ms == 9000);
  CHECK(c.operation_id == "op");

  for (const char* bad : {R"({"attempt":0})", R"({"attempt":"2"})", R"({"sideEffect":"maybe"})",
                          R"({"idempotent":"true"})", R"({"arguments":[1]})",
                          R"({"maxAttempts":0})", R"([])", R"(nope)"}) {
    INFO(bad);
    auto r = recourse::read_context(bad);
    CHECK_FALSE(r.ok());
    REQUIRE_FALSE(r.diagnostics().empty());
    CHECK(r.diagnostics()[0].code == "C001");
  }
  for (const char* bad :
       {R"({"deadlineMs":9223372036854775807})", R"({"attempt":9223372036854775808})",
        R"({"elapsedMs":1000000000000001})", R"({"attempt":1e999})"}) {
    INFO(bad);
    CHECK_FALSE(recourse::read_context(bad).ok());
  }
  CHECK(recourse::read_context(R"({"attempt":1e999})")
            .diagnostics()
            .at(0)
            .message.rfind("context is not valid JSON: ", 0) == 0);
  auto r = recourse::read_context(R"({"attempt":0})");
  CHECK(r.diagnostics()[0].message == "context.attempt must be an integer in [1, 1000000000]");
}

TEST_CASE("context: a key given twice is C001 in either order, escaped or not", "[envelope]") {
  // The last value used to win: committed-then-none retried a payment, none-then-committed did
  // not.
  for (const char* json : {R"({"sideEffect":"committed","sideEffect":"none"})",
                           R"({"sideEffect":"none","sideEffect":"committed"})",
                           R"({"sideEffect":"committed","side\u0045ffect":"none"})",
                           R"({"sideEffect":"none","sideEffect":"none"})",
                           R"({"sideEffect":"none","tool":"t","sideEffect":null})"}) {
    INFO(json);
    auto r = recourse::read_context(json);
    CHECK_FALSE(r.ok());
    REQUIRE(r.diagnostics().size() == 1);
    CHECK(r.diagnostics()[0].code == "C001");
    CHECK(r.diagnostics()[0].message == "context.sideEffect appears more than once");
  }
  // In any object of the context, unknown keys included; the same key in two objects is fine.
  auto nested = recourse::read_context(R"({"tool":"t","meta":{"a":1,"b":{"c":1,"c":2}}})");
  CHECK_FALSE(nested.ok());
  CHECK(nested.diagnostics().at(0).message == "context.meta.b.c appears more than once");
  CHECK(
      recourse::read_context(R"({"tool":"t","meta":{"tool":"u"},"list":[{"a":1},{"a":2}]})").ok());
}

TEST_CASE("context: ContextLimits bound the text, its nesting, its strings and arguments",
          "[envelope]") {
  recourse::ContextLimits small;
  small.max_bytes = 64;
  small.max_depth = 2;
  small.max_text_bytes = 5;
  small.max_arguments = 2;
  auto message = [&](const std::string& json) {
    const auto r = recourse::read_context(json, small);
    CHECK_FALSE(r.ok());
    REQUIRE(r.diagnostics().size() == 1);
    CHECK(r.diagnostics()[0].code == "C001");
    return r.diagnostics()[0].message;
  };
  // Each limit just met reads; one past it is C001 with the limit named.
  CHECK(recourse::read_context(R"({"tool":"abcde","arguments":["a","b"],"x":[]})", small).ok());
  CHECK(message(R"({"tool":"t","padding":")" + std::string(60, 'p') + "\"}") ==
        "context is 85 bytes; the limit is 64");
  CHECK(message(R"({"tool":"t","x":[[]]})") == "context nested deeper than 2 levels");
  // Keys inside the object past the limit (fuzz_context: they were counted with no object open).
  CHECK(message(R"([[[{"tool":"t","x":{"y":1}}]]])") == "context nested deeper than 2 levels");
  CHECK(message(R"({"x":[{"a":1,"b":{"c":2}}],"tool":"t"})") ==
        "context nested deeper than 2 levels");
  CHECK(message(R"({"tool":"abcdef"})") == "context.tool is longer than 5 bytes");
  CHECK(message(R"({"tool":"t","argsHash":"123456"})") ==
        "context.argsHash is longer than 5 bytes");
  CHECK(message(R"({"tool":"t","arguments":["a","b","c"]})") ==
        "context.arguments has more than 2 names");
  CHECK(message(R"({"tool":"t","arguments":["a","bbbbbb"]})") ==
        "context.arguments holds a name that is longer than 5 bytes");
  // The defaults: 1 MiB, 32 levels, 4096 bytes, 1024 arguments.
  const recourse::ContextLimits d;
  CHECK(d.max_bytes == 1u << 20);
  CHECK(d.max_depth == 32);
  CHECK(d.max_text_bytes == 4096);
  CHECK(d.max_arguments == 1024);
  CHECK(recourse::read_context(R"({"tool":")" + std::string(4096, 't') + "\"}").ok());
  CHECK_FALSE(recourse::read_context(R"({"tool":")" + std::string(4097, 't') + "\"}").ok());
  const std::string open32(32, '['), close32(32, ']');
  CHECK_FALSE(recourse::read_context("{\"x\":" + open32 + close32 + "}").ok());
  CHECK(recourse::read_context("{\"x\":" + open32.substr(1) + close32.substr(1) + "}").ok());
}

TEST_CASE("envelope: a NUL byte is invalid JSON, not the end of the input", "[envelope]") {
  using namespace std::string_literals;
  const std::string envelope = "{\"code\":\"TRANSIENT\"}\0{\"code\":\"PERMISSION\"} garbage ["s;
  auto r = recourse::read_envelope(envelope);
  CHECK_FALSE(r.ok());
  CHECK(r.message() == "invalid JSON at byte 21: a NUL byte");
  CHECK_FALSE(recourse::read_context("{\"tool\":\"t\"}\0{}"s).ok());
}

TEST_CASE("context: the stream facts are the host's booleans", "[envelope]") {
  const auto c =
      test::context(R"({"tool":"t","streamOutputEmitted":true,"streamDiscardSupported":false})");
  CHECK(c.stream_output_emitted);
  CHECK_FALSE(c.stream_discard_supported);
  const auto d = test::context(R"({"tool":"t","streamOutputEmitted":null})");
  CHECK_FALSE(d.stream_output_emitted);  // null: not given, the default false
  CHECK_FALSE(d.stream_discard_supported);
  for (const char* bad : {R"({"streamOutputEmitted":"yes"})", R"({"streamDiscardSupported":1})",
                          R"({"streamOutputEmitted":true,"streamOutputEmitted":false})"}) {
    const auto r = recourse::read_context(bad);
    INFO(bad);
    CHECK_FALSE(r.ok());
    REQUIRE_FALSE(r.diagnostics().empty());
    CHECK(r.diagnostics()[0].code == "C001");
  }
  CHECK(recourse::to_json(c).find(R"("streamOutputEmitted":true)") != std::string::npos);
}

TEST_CASE("context: both forms of the one writer read back to the same context", "[envelope]") {
  recourse::Context c;
  c.tool = "payments.create";
  c.idempotent = false;
  c.side_effect = recourse::SideEffect::Unknown;
  c.attempt = 3;
  c.repairs = 1;
  c.elapsed_ms = 1500;
  c.arguments = std::vector<std::string>{"amount"};
  c.max_attempts = 5;
  c.deadline_ms = 60000;
  c.operation_id = "order-1";
  c.workflow_id = "wf";
  c.lower_retries = 2;
  c.repeats = 1;
  c.cost_spent = 7;
  c.idempotency_key = "key-1";
  c.idempotency_key_pinned = false;
  c.circuit = recourse::CircuitState::HalfOpen;
  c.retry_throttled = true;
  c.now_ms = 1700000000000;
  c.args_hash = "ab12";
  c.stream_output_emitted = true;
  c.stream_discard_supported = true;
  const std::string full = recourse::to_json(c);
  for (bool compact : {false, true}) {
    const auto back = recourse::read_context(recourse::detail::context_json(c, compact));
    INFO(recourse::detail::context_json(c, compact));
    REQUIRE(back.ok());
    CHECK(recourse::to_json(*back) == full);
  }
  // A compact form leaves out what a default context has, and a key pinned by being given.
  recourse::Context d;
  d.tool = "t";
  d.side_effect = recourse::SideEffect::None;
  d.idempotency_key = "k";
  d.idempotency_key_pinned = true;
  CHECK(recourse::detail::context_json(d, true) ==
        R"({"tool":"t","sideEffect":"none","attempt":1,"idempotencyKey":"k"})");
}
