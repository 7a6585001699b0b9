// The decision's JSON (docs/language.md section 14, docs/schema/decision.schema.json): what
// `recourse decide` prints, the C API returns and the decision log's "result" holds. Keys in one
// fixed order; optional keys are omitted, never null, except inside budgets (null: unlimited).
// The model-facing text is computed here (model_text()), never in decide().
#include "wire/decision.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "envelope/steering.hpp"
#include "recourse/adapters.hpp"
#include "recourse/engine.hpp"
#include "recourse/policy.hpp"
#include "recourse/tooling.hpp"

namespace recourse {
namespace {

/// The field a decision warning is about, and its message.
std::pair<const char*, std::string> warning_text(DecisionWarning bit, const Decision& d,
                                                 const Envelope& e) {
  switch (bit) {
    case kUnknownCode:
      return {
          "code",
          fmt::format("code \"{}\" is not known; read as UNKNOWN{}", e.code.value_or(""),
                      d.nearest_code.empty() ? "" : fmt::format(" (nearest: {})", d.nearest_code))};
    case kSideEffectAssumed:
      return {"sideEffect", "context gave no sideEffect; read as unknown"};
    case kNoPolicy:
      return {"tool", "no policy for this tool and no \"*\" policy"};
    case kUnreadableEnvelope:
      return {"", "the envelope could not be read"};
    case kTraceIdMinted:
      return {"traceId", "envelope had no traceId; a local one was minted"};
    case kStoreUnavailable:
      return {"", "the state store could not answer; local, conservative state used"};
    case kSuspiciousText: {
      // The field is the suggestion when it was flagged (a repair would send it), else the
      // message; the text names every category of each.
      const std::uint32_t message = d.steering & 0xffff, suggestion = d.steering >> 16;
      std::string text;
      if (suggestion)
        text = "the suggestion reads as instructions to the agent (" +
               detail::steering_names(suggestion) + ")";
      if (message)
        text += std::string(text.empty() ? "the message" : "; the message") +
                " reads as instructions to the agent (" + detail::steering_names(message) + ")";
      return {suggestion ? "suggestion" : "message", text};
    }
  }
  return {"", ""};
}

}  // namespace

std::vector<EnvelopeWarning> detail::decision_warnings(const Decision& d, const Envelope& e) {
  std::vector<EnvelopeWarning> out = e.warnings;
  for (const auto& [bit, kind] : kDecisionWarningKinds) {
    if (!(d.warnings & bit)) continue;
    auto [field, message] = warning_text(bit, d, e);
    out.push_back({kind, field, std::move(message)});
  }
  return out;
}

std::string to_json(const Decision& d, const Envelope& e) {
  nlohmann::ordered_json j;
  j["route"] = to_string(d.route);
  j["delayMs"] = d.delay_ms;
  if (d.route == Route::Retry) j["jitterMs"] = d.jitter_ms;
  j["rule"] = std::string(d.rule);
  if (!d.reason.empty()) j["reason"] = std::string(d.reason);
  if (!d.target.empty()) j["target"] = std::string(d.target);
  j["policy"] = std::string(d.policy);
  j["policyHash"] = std::string(d.policy_hash);
  if (!d.exhausted.empty()) j["exhausted"] = std::string(d.exhausted);
  j["attempt"] = d.attempt;
  if (d.backoff_attempt) j["backoffAttempt"] = d.backoff_attempt;
  j["attemptsLeft"] = d.attempts_left();
  j["repairsLeft"] = d.repairs_left();
  if (d.retry_after_ms) j["retryAfterMs"] = *d.retry_after_ms;
  if (d.retry_at_ms) j["retryAt"] = *d.retry_at_ms;
  if (d.timeout_ms) j["timeoutMs"] = *d.timeout_ms;
  auto budget = [](const BudgetLeft& b) {
    auto value = [](std::int64_t v) {
      return v == kUnlimited ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
    };
    return nlohmann::ordered_json{{"before", value(b.before)}, {"after", value(b.after)}};
  };
  j["budgets"] = {{"attempts", budget(d.attempts)},
                  {"repairs", budget(d.repairs)},
                  {"cost", budget(d.cost)},
                  {"timeMs", budget(d.time_ms)}};
  j["idempotencyKey"] = to_string(d.idempotency_key);
  auto warnings = nlohmann::ordered_json::array();
  for (const auto& w : detail::decision_warnings(d, e))
    warnings.push_back({{"kind", w.kind}, {"field", w.field}, {"message", w.message}});
  j["warnings"] = std::move(warnings);
  if (!d.nearest_code.empty()) j["nearestCode"] = std::string(d.nearest_code);
  j["traceId"] = trace_id(d, e);
  // What the next model turn may read (adapters.hpp): computed here, never in decide().
  const ModelText model = model_text(e);
  j["modelMessage"] = model.text;
  auto flags = nlohmann::ordered_json::array();
  for (const auto& [set, name] :
       {std::pair{model.stripped, "stripped"}, std::pair{model.redacted, "redacted"},
        std::pair{model.instruction_like, "instruction_like"},
        std::pair{model.truncated, "truncated"}})
    if (set) flags.push_back(name);
  if (!flags.empty()) j["modelMessageFlags"] = std::move(flags);
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string to_json(const Explanation& x, const Envelope& e) {
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const ExplainedRule& r : x.rules) {
    nlohmann::ordered_json tests = nlohmann::ordered_json::array();
    for (const ExplainedTest& t : r.tests)
      tests.push_back({{"test", t.test}, {"value", t.value}, {"result", t.result}});
    rules.push_back({{"rule", r.rule},
                     {"line", r.line},
                     {"column", r.column},
                     {"matched", r.matched},
                     {"tests", std::move(tests)}});
  }
  nlohmann::ordered_json j;
  j["policy"] = std::string(x.decision.policy);
  j["rules"] = std::move(rules);
  j["guard"] = x.guard;
  j["decision"] = nlohmann::ordered_json::parse(to_json(x.decision, e));
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace recourse
