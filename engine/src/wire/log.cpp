// The decision log's JSON: one record per decision (inputs, policy hash, rule, trace id, the
// decision) and the counters' export.
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

}  // namespace

std::string trace_id(const Decision& decision, const Envelope& envelope) {
  return envelope.trace_id ? *envelope.trace_id
                           : fmt::format("local-{:016x}", decision.minted_trace_id);
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
  text += ",\"input\":{\"envelope\":" + to_json(r.envelope) + ",\"context\":" + to_json(r.context) +
          "},\"result\":" + to_json(d, r.envelope);
  if (r.candidate) {
    json differences = json::array();
    for (const auto& [bit, name] : kShadowDifferenceNames)
      if (r.differences & bit) differences.push_back(name);
    text += ",\"shadow\":{\"differences\":" + dump(differences) +
            ",\"result\":" + to_json(*r.candidate, r.envelope) + "}";
  }
  return text + "}";
}

std::string to_json(const DecisionCounters& c) {
  json j;
  j["decisions"] = c.decisions;
  j["routes"] = c.routes;
  j["rules"] = c.rules;
  j["exhausted"] = c.exhausted;
  return dump(j);
}

std::string to_json(const ShadowCounters& c) {
  json j;
  j["decisions"] = c.decisions;
  j["disagreements"] = c.disagreements;
  j["rules"] = c.rules;
  j["differences"] = c.differences;
  return dump(j);
}

}  // namespace recourse
