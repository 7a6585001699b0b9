// The decision log's JSON: one record per decision (inputs, policy hash, rule, trace id, the
// decision), the context's JSON form, and the counters' export.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "recourse/engine.hpp"

#include "model/names.hpp"

namespace recourse {

namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json context_json(const Context& c) {
  json j = json::object();
  j["tool"] = c.tool;
  if (c.idempotent) j["idempotent"] = *c.idempotent;
  if (c.side_effect) j["sideEffect"] = detail::name_of(*c.side_effect);
  j["attempt"] = c.attempt;
  j["repairs"] = c.repairs;
  j["elapsedMs"] = c.elapsed_ms;
  if (c.arguments) j["arguments"] = *c.arguments;
  if (c.max_attempts) j["maxAttempts"] = *c.max_attempts;
  if (c.deadline_ms) j["deadlineMs"] = *c.deadline_ms;
  if (!c.operation_id.empty()) j["operationId"] = c.operation_id;
  if (!c.workflow_id.empty()) j["workflowId"] = c.workflow_id;
  j["lowerRetries"] = c.lower_retries;
  j["repeats"] = c.repeats;
  j["costSpent"] = c.cost_spent;
  if (!c.idempotency_key.empty()) j["idempotencyKey"] = c.idempotency_key;
  j["idempotencyKeyPinned"] = c.idempotency_key_pinned;
  j["circuit"] = detail::name_of(c.circuit);
  j["retryThrottled"] = c.retry_throttled;
  if (c.now_ms) j["nowMs"] = *c.now_ms;
  if (!c.args_hash.empty()) j["argsHash"] = c.args_hash;
  return j;
}

}  // namespace

std::string trace_id(const Decision& decision, const Envelope& envelope) {
  return envelope.trace_id ? *envelope.trace_id
                           : fmt::format("local-{:016x}", decision.minted_trace_id);
}

std::string to_json(const Context& context) {
  return dump(context_json(context));
}

std::string to_json(const DecisionRecord& r) {
  const Decision& d = r.decision;
  json j;
  j["policy"] = std::string(d.policy);
  j["policyHash"] = std::string(d.policy_hash);
  j["rule"] = std::string(d.rule);
  j["route"] = to_string(d.route);
  j["traceId"] = trace_id(d, r.envelope);
  j["tool"] = r.context.tool;
  std::string text = dump(j);
  text.pop_back();  // the closing brace: the inputs and the decision follow, as their own JSON
  return text + ",\"input\":{\"envelope\":" + to_json(r.envelope) +
         ",\"context\":" + to_json(r.context) + "},\"result\":" + to_json(d, r.envelope) + "}";
}

std::string to_json(const DecisionCounters& c) {
  json j;
  j["decisions"] = c.decisions;
  j["routes"] = c.routes;
  j["rules"] = c.rules;
  j["exhausted"] = c.exhausted;
  return dump(j);
}

}  // namespace recourse
