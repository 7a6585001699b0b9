// The context's JSON, both ways. The context comes from the host and is read strictly
// (docs/language.md section 13): a known key with a wrong type or an out-of-range value is C001,
// and so is a key given twice in any of its objects; unknown keys are ignored. One writer,
// context_json(), prints it for the decision log (every field) and for the inputs the analysis
// reports (only what differs from a default context), with the reader's keys in one order.
#include "wire/context.hpp"

#include <nlohmann/json.hpp>
#include <set>

#include "model/names.hpp"
#include "recourse/engine.hpp"

namespace recourse {

namespace {

constexpr std::int64_t kMaxMs = 1'000'000'000'000'000;

struct ContextReader {
  std::vector<Diagnostic>& errors;

  void fail(const std::string& key, const std::string& what) {
    Diagnostic d;
    d.code = "C001";
    d.message = "context." + key + " " + what;
    errors.push_back(std::move(d));
  }

  // Trusted numbers stay far below INT64_MAX (which means "no limit" inside the engine) so no
  // sum or difference of two of them can overflow: counts up to 1e9, ms up to 1e15 (31,000 years).
  template <typename T>
  void integer(const nlohmann::json& j, const char* key, T& out, std::int64_t min,
               std::int64_t max = 1'000'000'000) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number_integer() ||
        (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
        it->get<std::int64_t>() < min || it->get<std::int64_t>() > max)
      return fail(
          key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    out = it->get<std::int64_t>();
  }
  void flag(const nlohmann::json& j, const char* key, bool& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_boolean()) return fail(key, "must be true or false");
    out = it->get<bool>();
  }
  void text(const nlohmann::json& j, const char* key, std::string& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_string()) return fail(key, "must be a string");
    out = it->get<std::string>();
  }
};

}  // namespace

ContextResult read_context(std::string_view json) noexcept {
  ContextResult out;
  try {
    ContextReader r{out.errors};
    auto whole = [&](std::string message) {
      r.fail("", "");
      out.errors.back().message = std::move(message);
      return out;
    };
    if (json.find('\0') != std::string_view::npos)
      return whole("context is not valid JSON: a NUL byte");
    // A DOM keeps one value of a key given twice; for a trusted fact (was the payment
    // committed?) that would be a guess, so a repeated key in any object of the context is C001.
    // Keys are compared as the parser unescaped them ("side\u0045ffect" is "sideEffect").
    std::vector<std::set<std::string>> keys;  // per open object
    std::vector<std::string> path;            // the key being read, per open object
    std::string repeated;
    const auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      using Event = nlohmann::json::parse_event_t;
      if (event == Event::object_start) {
        keys.emplace_back();
        path.resize(keys.size());
      } else if (event == Event::object_end) {
        keys.pop_back();
      } else if (event == Event::key && repeated.empty()) {
        const auto& k = parsed.get_ref<const std::string&>();
        path.resize(keys.size());
        path.back() = k;
        if (!keys.back().insert(k).second)
          for (std::size_t i = 0; i < path.size(); ++i) repeated += (i ? "." : "") + path[i];
      }
      return true;
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(json.begin(), json.end(), callback);
    } catch (const nlohmann::json::exception& e) {
      return whole(std::string("context is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) return whole("context is not a JSON object");
    if (!repeated.empty()) return whole("context." + repeated + " appears more than once");
    Context& c = out.context;
    r.text(j, "tool", c.tool);
    r.text(j, "operationId", c.operation_id);
    r.text(j, "workflowId", c.workflow_id);
    r.text(j, "argsHash", c.args_hash);
    if (auto it = j.find("idempotent"); it != j.end() && !it->is_null()) {
      if (it->is_boolean())
        c.idempotent = it->get<bool>();
      else
        r.fail("idempotent", "must be true or false");
    }
    if (auto it = j.find("sideEffect"); it != j.end() && !it->is_null()) {
      const std::string s = it->is_string() ? it->get<std::string>() : "";
      if (auto value = detail::enum_of<SideEffect>(s))
        c.side_effect = value;
      else
        r.fail("sideEffect", "must be " + detail::names_list<SideEffect>());
    }
    r.integer(j, "attempt", c.attempt, 1);
    r.integer(j, "repairs", c.repairs, 0);
    r.integer(j, "elapsedMs", c.elapsed_ms, 0, kMaxMs);
    std::int64_t v = -1;
    r.integer(j, "maxAttempts", v, 1);
    if (v >= 1) c.max_attempts = v;
    v = -1;
    r.integer(j, "deadlineMs", v, 0, kMaxMs);
    if (v >= 0) c.deadline_ms = v;
    r.integer(j, "lowerRetries", c.lower_retries, 0);
    r.integer(j, "repeats", c.repeats, 0);
    r.integer(j, "costSpent", c.cost_spent, 0, kMaxMs);  // up to 1e15, as the schema has it
    v = -1;
    r.integer(j, "nowMs", v, 0, kMaxMs);
    if (v >= 0) c.now_ms = v;
    std::string next_key;
    r.text(j, "idempotencyKey", c.idempotency_key);
    r.text(j, "nextAttemptIdempotencyKey", next_key);
    c.idempotency_key_pinned =
        !c.idempotency_key.empty() && (next_key.empty() || next_key == c.idempotency_key);
    r.flag(j, "idempotencyKeyPinned", c.idempotency_key_pinned);
    r.flag(j, "retryThrottled", c.retry_throttled);
    if (auto it = j.find("circuit"); it != j.end() && !it->is_null()) {
      const std::string s = it->is_string() ? it->get<std::string>() : "";
      if (auto value = detail::enum_of<CircuitState>(s))
        c.circuit = *value;
      else
        r.fail("circuit", "must be " + detail::names_list<CircuitState>());
    }
    if (auto it = j.find("arguments"); it != j.end() && !it->is_null()) {
      std::vector<std::string> args;
      bool ok = it->is_array();
      if (ok)
        for (const auto& a : *it) {
          if (!a.is_string())
            ok = false;
          else
            args.push_back(a.get<std::string>());
        }
      if (ok)
        c.arguments = std::move(args);
      else
        r.fail("arguments", "must be a list of strings");
    }
    out.ok = out.errors.empty();
  } catch (const std::exception& e) {
    out.ok = false;
    Diagnostic d;
    d.code = "C001";
    d.message = std::string("context could not be read: ") + e.what();
    out.errors.push_back(std::move(d));
  }
  return out;
}

namespace detail {

std::string context_json(const Context& c, bool compact) {
  using json = nlohmann::ordered_json;
  const Context none;
  json j = json::object();
  // `keep`: whether a field a full record always writes is written in a compact one.
  auto put = [&](const char* key, auto value, bool keep) {
    if (!compact || keep) j[key] = value;
  };
  j["tool"] = c.tool;
  if (c.idempotent) j["idempotent"] = *c.idempotent;
  if (c.side_effect) j["sideEffect"] = name_of(*c.side_effect);
  j["attempt"] = c.attempt;
  put("repairs", c.repairs, c.repairs != none.repairs);
  put("elapsedMs", c.elapsed_ms, c.elapsed_ms != none.elapsed_ms);
  if (c.arguments) j["arguments"] = *c.arguments;
  if (c.max_attempts) j["maxAttempts"] = *c.max_attempts;
  if (c.deadline_ms) j["deadlineMs"] = *c.deadline_ms;
  if (!c.operation_id.empty()) j["operationId"] = c.operation_id;
  if (!c.workflow_id.empty()) j["workflowId"] = c.workflow_id;
  put("lowerRetries", c.lower_retries, c.lower_retries != none.lower_retries);
  put("repeats", c.repeats, c.repeats != none.repeats);
  put("costSpent", c.cost_spent, c.cost_spent != none.cost_spent);
  if (!c.idempotency_key.empty()) j["idempotencyKey"] = c.idempotency_key;
  // read_context() pins a key given alone, so a compact form says so only when that differs.
  put("idempotencyKeyPinned", c.idempotency_key_pinned,
      c.idempotency_key_pinned != !c.idempotency_key.empty());
  put("circuit", name_of(c.circuit), c.circuit != none.circuit);
  put("retryThrottled", c.retry_throttled, c.retry_throttled != none.retry_throttled);
  if (c.now_ms) j["nowMs"] = *c.now_ms;
  if (!c.args_hash.empty()) j["argsHash"] = c.args_hash;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace detail

std::string to_json(const Context& context) {
  return detail::context_json(context, false);
}

}  // namespace recourse
