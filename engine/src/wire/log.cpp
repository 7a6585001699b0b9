// The decision log's JSON: one record per decision (inputs, policy hash, rule, trace id, the
// decision) and the counters' export.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "recourse/engine.hpp"

#include "envelope/redact.hpp"
#include "envelope/steering.hpp"
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

std::string to_json(const DecisionRecord& r, const LogOptions& options) {
  const Decision& d = r.decision;
  // LogText::Redact: the texts as the log may keep them; the record says which the redaction
  // changed and what the decision found in them as received.
  std::optional<Envelope> redacted;
  json fields = json::array();
  if (options.text == LogText::Redact) {
    for (auto [member, name] : {std::pair{&Envelope::message, "message"},
                                std::pair{&Envelope::suggestion, "suggestion"}}) {
      const std::optional<std::string>& text = r.envelope.*member;
      if (!text) continue;
      std::string safe = detail::redact_text(*text, options.max_text_bytes);
      if (safe == *text) continue;
      if (!redacted) redacted = r.envelope;
      (*redacted).*member = std::move(safe);
      fields.push_back(name);
    }
  }
  json j;
  j["policy"] = std::string(d.policy);
  j["policyHash"] = std::string(d.policy_hash);
  j["rule"] = std::string(d.rule);
  j["route"] = to_string(d.route);
  j["traceId"] = trace_id(d, r.envelope);
  j["tool"] = r.context.tool;
  std::string text = dump(j);
  text.pop_back();  // the closing brace: the inputs and the decision follow, as their own JSON
  text += ",\"input\":{\"envelope\":" + to_json(redacted ? *redacted : r.envelope) +
          ",\"context\":" + to_json(r.context);
  // A record read back from a redacted log (Envelope::steering) keeps its note, so the texts it
  // already holds redacted are never scanned as if they were the server's.
  if (redacted || r.envelope.steering) {
    // A decision without a policy scanned nothing: what the detector's defaults find then.
    const Envelope& e = r.envelope;
    const std::uint32_t steering =
        r.envelope.steering ? *r.envelope.steering
        : !d.policy.empty()
            ? d.steering
            : (e.message ? detail::scan_steering(*e.message, {}) : 0) |
                  (e.suggestion ? detail::scan_steering(*e.suggestion, {}) : 0) << 16;
    text += ",\"redacted\":" + dump({{"fields", fields}, {"steering", steering}});
  }
  text += "},\"result\":" + to_json(d, r.envelope);
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
