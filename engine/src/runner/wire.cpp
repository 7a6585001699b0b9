// The runner's JSON forms (recourse/runner.hpp): an Action written, an Outcome read. Other
// languages drive the step machine through them (the C API's recourse_runner_next and
// recourse_runner_report).
#include <cmath>

#include <nlohmann/json.hpp>

#include "recourse/adapters.hpp"
#include "recourse/runner.hpp"
#include "runner/wire.hpp"

namespace recourse {

namespace {

using json = nlohmann::ordered_json;

// Text the host gave as JSON is embedded as JSON; any other text as a string.
json embedded(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

std::optional<SideEffect> side_effect_named(std::string_view name) {
  if (name == "none") return SideEffect::None;
  if (name == "unknown") return SideEffect::Unknown;
  if (name == "committed") return SideEffect::Committed;
  return std::nullopt;
}

// A float without a fractional part, within int64, as that integer; members and elements too.
void integral_numbers(nlohmann::json& j) {
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d)) j = static_cast<std::int64_t>(d);
  } else if (j.is_structured()) {
    for (auto& child : j) integral_numbers(child);
  }
}

}  // namespace

std::string detail::canonical_json(std::string_view text) noexcept {
  try {
    nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded()) return std::string(text);
    integral_numbers(j);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (...) {
    return std::string(text);
  }
}

std::string to_json(const Action& a) {
  json j = json::object();
  j["step"] = to_string(a.step);
  j["tool"] = a.tool;
  j["attempt"] = a.attempt;
  j["elapsedMs"] = a.elapsed_ms;
  switch (a.step) {
    case Step::Call:
      j["arguments"] = embedded(a.arguments);
      j["idempotencyKey"] = a.idempotency_key;
      j["timeoutMs"] = a.timeout_ms ? json(*a.timeout_ms) : json(nullptr);
      break;
    case Step::Wait:
      j["waitMs"] = a.wait_ms;
      break;
    case Step::Done:
      j["ending"] = to_string(a.ending);
      break;
    default:
      j["arguments"] = embedded(a.arguments);
      break;
  }
  if (a.decision) {
    j["decision"] = json::parse(to_json(*a.decision, a.envelope));
    j["envelope"] = json::parse(to_json(a.envelope));
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Outcome> read_outcome(std::string_view text) noexcept {
  auto bad = [](const std::string& why) {
    return Result<Outcome>::failure(error_diagnostic("R001", "outcome: " + why));
  };
  try {
    const json j = json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    Outcome o;
    const auto kind = j.find("outcome");
    if (kind == j.end() || !kind->is_string()) return bad("\"outcome\" must be a string");
    const std::string k = kind->get<std::string>();
    if (k == "success")
      o.kind = Outcome::Kind::Success;
    else if (k == "failure")
      o.kind = Outcome::Kind::Failure;
    else if (k == "resume")
      o.kind = Outcome::Kind::Resume;
    else if (k == "abandon")
      o.kind = Outcome::Kind::Abandon;
    else
      return bad("\"outcome\" must be success, failure, resume or abandon, not \"" + k + "\"");
    if (const auto e = j.find("envelope"); e != j.end()) {
      if (!e->is_object()) return bad("\"envelope\" must be an object");
      Result<Envelope> read = read_envelope(e->dump());
      if (!read.ok()) return bad("\"envelope\": " + read.message());
      o.envelope = std::move(*read);
    }
    if (const auto r = j.find("raw"); r != j.end()) {
      if (!r->is_object()) return bad("\"raw\" must be an object");
      o.raw = r->dump();
    }
    if (const auto p = j.find("protocol"); p != j.end()) {
      if (!p->is_string() || !(o.protocol = protocol_of(p->get<std::string>())))
        return bad("\"protocol\" must be http, grpc, mcp or jsonrpc");
    }
    if (const auto s = j.find("sideEffect"); s != j.end()) {
      if (!s->is_string() || !(o.side_effect = side_effect_named(s->get<std::string>())))
        return bad("\"sideEffect\" must be none, unknown or committed");
    }
    if (const auto a = j.find("arguments"); a != j.end()) o.arguments = a->dump();
    return o;
  } catch (const std::exception& e) {
    return Result<Outcome>::failure(
        error_diagnostic("E099", std::string("internal error: ") + e.what()));
  }
}

}  // namespace recourse
