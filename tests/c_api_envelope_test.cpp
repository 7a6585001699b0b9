// The C API's two ways to hand over an envelope, the recourse_envelope struct and JSON, decide
// alike: the same inputs give the same decision JSON, warnings and trace id included, on the
// edges of every field's rules (empty strings, strings at and past their caps, a negative wait).
#include <nlohmann/json.hpp>
#include <optional>

#include "recourse/recourse.h"
#include "support.hpp"

namespace {

// One envelope, field by field (nullopt: absent).
struct Fields {
  const char* name;
  std::optional<std::string> code, message;
  std::optional<bool> retryable;
  std::optional<std::string> field, suggestion;
  std::optional<std::int64_t> retry_after_ms;
  std::optional<std::string> trace_id;
};

std::string as_json(const Fields& f) {
  nlohmann::json j = nlohmann::json::object();
  if (f.code) j["code"] = *f.code;
  if (f.message) j["message"] = *f.message;
  if (f.retryable) j["retryable"] = *f.retryable;
  if (f.field) j["field"] = *f.field;
  if (f.suggestion) j["suggestion"] = *f.suggestion;
  if (f.retry_after_ms) j["retryAfterMs"] = *f.retry_after_ms;
  if (f.trace_id) j["traceId"] = *f.trace_id;
  return j.dump();
}

const char* c_str(const std::optional<std::string>& s) {
  return s ? s->c_str() : nullptr;
}

struct Engine {
  recourse_engine* engine = nullptr;
  explicit Engine(const std::string& policy) {
    recourse_engine_options options = {sizeof options, 1};
    engine = recourse_engine_new(&options);
    REQUIRE(engine != nullptr);
    const recourse_source source = {"pay.recourse", policy.c_str(), policy.size()};
    REQUIRE(recourse_engine_load_sources(engine, &source, 1, nullptr) == RECOURSE_OK);
  }
  ~Engine() { recourse_engine_free(engine); }
};

}  // namespace

TEST_CASE("c api: an envelope as a struct decides as the same envelope as JSON", "[c_api]") {
  const Engine e(
      "policy \"pay\" {\n"
      "  tool { arguments = [amount] }\n"
      "  rule fix when code == VALIDATION and field in arguments -> repair\n"
      "  rule wait when code == RATE_LIMITED and retryable and retry_after > 0ms -> retry\n"
      "  default -> stop\n"
      "}\n");
  const std::string s64(64, 'C'), s65(65, 'C'), f256(256, 'f'), f257(257, 'f'), t8193(8193, 'm');
  const Fields cases[] = {
      {"every field", "RATE_LIMITED", "slow down", true, "amount", "wait", 700, "t-1"},
      {"none", {}, {}, {}, {}, {}, {}, {}},
      {"empty trace id", "RATE_LIMITED", {}, true, {}, {}, 700, ""},
      {"trace id at its cap", "RATE_LIMITED", {}, true, {}, {}, 700, f256},
      {"trace id past its cap", "RATE_LIMITED", {}, true, {}, {}, 700, f257},
      {"empty code", "", "m", {}, {}, {}, {}, "t-2"},
      {"code at its cap", s64, {}, {}, {}, {}, {}, "t-3"},
      {"code past its cap", s65, {}, {}, {}, {}, {}, "t-4"},
      {"empty field", "VALIDATION", {}, false, "", {}, {}, "t-5"},
      {"field past its cap", "VALIDATION", {}, false, f257, {}, {}, "t-6"},
      {"empty message and suggestion", "VALIDATION", "", false, "amount", "", {}, "t-7"},
      {"message past its cap", "VALIDATION", t8193, false, "amount", t8193, {}, "t-8"},
      {"negative wait", "RATE_LIMITED", {}, true, {}, {}, -5, "t-9"},
      {"zero wait", "RATE_LIMITED", {}, true, {}, {}, 0, "t-10"},
  };
  const std::string context_json =
      R"({"tool":"pay","sideEffect":"none","attempt":1,"operationId":"op-7"})";
  for (const Fields& f : cases) {
    INFO(f.name);
    const std::string envelope_json = as_json(f);
    char* from_json = nullptr;
    REQUIRE(recourse_engine_decide_json(e.engine, envelope_json.data(), envelope_json.size(),
                                        context_json.data(), context_json.size(), &from_json,
                                        nullptr) == RECOURSE_OK);

    const recourse_envelope envelope = {sizeof envelope,
                                        c_str(f.code),
                                        c_str(f.message),
                                        f.retryable ? int(*f.retryable) : RECOURSE_UNSET,
                                        c_str(f.field),
                                        c_str(f.suggestion),
                                        f.retry_after_ms.value_or(RECOURSE_ABSENT),
                                        c_str(f.trace_id)};
    recourse_context context;
    recourse_context_init(&context);
    context.tool = "pay";
    context.side_effect = RECOURSE_SIDE_EFFECT_NONE;
    context.operation_id = "op-7";
    recourse_decision decision{};
    decision.size = sizeof decision;
    REQUIRE(recourse_engine_decide(e.engine, &envelope, &context, &decision, nullptr) ==
            RECOURSE_OK);
    char* from_struct = recourse_decision_json(&decision);
    REQUIRE(from_struct != nullptr);
    CHECK(std::string(from_struct) == std::string(from_json));
    recourse_string_free(from_struct);
    recourse_decision_release(&decision);
    recourse_string_free(from_json);
  }
}

TEST_CASE("c api: a struct string that is not UTF-8 is absent, as JSON cannot carry it",
          "[c_api]") {
  const Engine e(
      "policy \"pay\" {\n"
      "  rule wait when code == RATE_LIMITED -> retry\n"
      "  default -> stop\n"
      "}\n");
  // A code that would match but for its last byte, a message cut inside a sequence, a field
  // holding a surrogate: each is dropped with "malformed"; the valid suggestion is kept.
  const recourse_envelope envelope = {sizeof envelope, "RATE_LIMITED\xff",  "bad \xc3",      1,
                                      "f\xed\xa0\x80", "wait \xe2\x82\xac", RECOURSE_ABSENT, "t-1"};
  recourse_context context;
  recourse_context_init(&context);
  context.tool = "pay";
  recourse_decision decision{};
  decision.size = sizeof decision;
  REQUIRE(recourse_engine_decide(e.engine, &envelope, &context, &decision, nullptr) == RECOURSE_OK);
  char* text = recourse_decision_json(&decision);
  REQUIRE(text != nullptr);
  const auto j = nlohmann::json::parse(text);
  recourse_string_free(text);
  recourse_decision_release(&decision);
  CHECK(j["route"] == "stop");  // no code: the default decides
  std::vector<std::string> malformed;
  for (const auto& w : j["warnings"])
    if (w["kind"] == "malformed") malformed.push_back(w["message"].get<std::string>());
  CHECK(malformed == std::vector<std::string>{"code is not valid UTF-8; read as absent",
                                              "message is not valid UTF-8; read as absent",
                                              "field is not valid UTF-8; read as absent"});
}
