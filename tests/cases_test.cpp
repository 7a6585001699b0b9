// Real-world failure cases as tests. tests/cases/cases.json and cases-2.json are the project's
// copies of the shared cases files (../shared/cases/README.md), committed so a clean clone tests
// every case; a case added there is copied here with its policy in tests/cases/.
//
// For every case the engine can decide today: the case's `envelope` goes through read_envelope,
// its `context` (keys the reader knows) through read_context, the policy in tests/cases/ for the
// case's tool decides, and the route and limits in `expected` are asserted. Every case with a
// `raw` form is also decided through its adapter (adapters.hpp), where `expected` is the answer
// for the raw form (../shared/cases/README.md); cases whose envelope alone cannot give that answer
// (a careless client's reading) are tested through the raw form only. Cases that need a feature
// not built yet are listed in kPending with the reason and the issue that brings them; a test
// checks that every case id is tested or pending, and every raw form is tested.
#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recourse/recourse.hpp"

namespace {

using nlohmann::json;
using recourse::Decision;
using recourse::Route;

const std::vector<std::string> kCasesPaths = {
    std::string(RECOURSE_SOURCE_DIR) + "/tests/cases/cases.json",
    std::string(RECOURSE_SOURCE_DIR) + "/tests/cases/cases-2.json"};
const std::string kPoliciesDir = std::string(RECOURSE_SOURCE_DIR) + "/tests/cases";

// A case decided from its envelope today.
struct Tested {
  const char* id;
  std::set<std::string> warned_fields;  // envelope keys the reader must drop with a warning
  const char* exhausted;                // the budget guard expected to decide, or ""
};

const std::vector<Tested> kTested = {
    {"retry-after-overflow-rdap", {}, "retry_after"},
    {"retry-after-fractional-seconds", {}, ""},
    {"retry-after-nan-hang", {"retryAfterMs"}, ""},
    {"timeout-then-duplicate-session-turn", {"traceId"}, ""},
    {"network-error-post-retried", {"traceId"}, ""},
    {"stripe-idempotency-key-rotates", {"traceId"}, ""},
    {"mcp-iserror-ignored-by-client", {"traceId"}, ""},
    {"tool-arg-wrong-field-name", {}, ""},
    {"lb-502-html-no-envelope", {"retryable"}, ""},
    {"identical-failing-tool-call-loop", {}, "repeats"},
    {"stream-partial-output-replayed", {}, ""},  // the emitted output is a committed effect
    {"idempotency-key-reused-after-body-change", {"traceId"}, ""},
    {"retry-after-lockstep-herd", {}, ""},  // the hint's jitter: 60..75 s, per operation
    {"retry-stacking-over-exhausted-client", {}, "attempts"},  // 1 + 9 retries below > 6
};

// A case about the state between calls (a circuit breaker), decided through recourse::Health by
// its own TEST_CASE below, which asserts its route and every one of its limits. Their raw forms
// record the breaker's messages; a tool's failure in one is read by that test.
const std::vector<std::string> kStateTested = {"mcp-breaker-opened-by-tool-errors",
                                               "breaker-stuck-half-open"};
// Cases decided through a Workflow that replays their history, each in its own TEST_CASE.
const std::vector<const char*> kTestedThroughState = {"validation-loop-shifting-args"};

// A case whose expected answer needs a feature not built yet.
struct Pending {
  const char* id;
  const char* issue;
  const char* reason;
};

const std::vector<Pending> kPending = {};

// A case decided from its `raw` form through recourse's adapter: every case whose raw is not
// null. `code` is what the adapter reads; the first three cases are tested this way only (their
// envelopes are what a careless client made of the raw form: TRANSIENT for an exhausted quota,
// PERMISSION for a rate limit, UNKNOWN for an expired token).
struct RawTested {
  const char* id;
  const char* code;
  std::set<std::string> warned_fields;
  const char* exhausted;
  bool policy_attempts = false;  // the policy's attempts, not budgets.maxAttempts, bound the call
};

const std::vector<RawTested> kRawTested = {
    {"openai-insufficient-quota-429", "QUOTA_EXCEEDED", {}, ""},       // body outranks the 429
    {"github-403-secondary-rate-limit", "RATE_LIMITED", {}, ""},       // body outranks the 403
    {"mcp-upstream-401-hidden-in-tool-error", "PERMISSION", {}, ""},   // 401 in the isError text
    {"retry-after-overflow-rdap", "RATE_LIMITED", {}, "retry_after"},  // Retry-After: 9999999999
    {"retry-after-fractional-seconds", "RATE_LIMITED", {}, ""},        // 0.503 -> 1000 ms
    {"retry-after-nan-hang", "TRANSIENT", {"retryAfterMs"}, ""},       // nan (and -1, 1e999)
    {"timeout-then-duplicate-session-turn", "TIMEOUT", {}, ""},  // read timeout after delivery
    {"network-error-post-retried", "TRANSIENT", {}, ""},         // ECONNRESET on a POST
    {"stripe-idempotency-key-rotates", "TIMEOUT", {}, ""},       // no response, rotating key
    {"mcp-iserror-ignored-by-client", "UNKNOWN", {}, ""},        // isError=true is a failure
    {"lb-502-html-no-envelope", "TRANSIENT", {}, ""},            // 502 with an HTML body
    // The reset in the body. The case's 5 attempts are the client's for the day; its one
    // further attempt (after the window) is what the case's policy says (attempts = 2), so the
    // host passes no per-call maxAttempts here.
    {"ratelimit-reset-in-body-metadata", "RATE_LIMITED", {}, "", true},
    // A 200 whose stream broke: the raw form records the client's exception, no HTTP failure
    // and no event stream, so the adapter reads UNKNOWN and the policy stops.
    {"stream-partial-output-replayed", "UNKNOWN", {}, ""},
    // Square's IDEMPOTENCY_KEY_REUSED after the body changed: VALIDATION naming the key.
    {"idempotency-key-reused-after-body-change", "VALIDATION", {}, ""},
    {"retry-after-lockstep-herd", "RATE_LIMITED", {}, ""},  // retry-after: 60 -> 60000 ms
};

// The cases of every file, in order.
json load_cases() {
  json all = json::array();
  for (const std::string& path : kCasesPaths) {
    std::ifstream in(path);
    if (!in) FAIL("cannot open " << path << " (the cases must be present; not skipping)");
    std::stringstream ss;
    ss << in.rdbuf();
    json cases = json::parse(ss.str(), nullptr, false);
    if (cases.is_discarded() || !cases.is_array() || cases.empty())
      FAIL(path << " is not a non-empty JSON array");
    for (auto& c : cases) all.push_back(std::move(c));
  }
  return all;
}

const json& find_case(const json& cases, const std::string& id) {
  for (const auto& c : cases)
    if (c.value("id", "") == id) return c;
  FAIL("case " << id << " is not in the cases files");
  throw;  // unreachable
}

const recourse::Bundle& bundle() {
  static const recourse::Result<recourse::Bundle> result = recourse::compile_paths({kPoliciesDir});
  if (!result.ok()) {
    std::string text;
    for (const auto& d : result.diagnostics()) text += recourse::to_text(d);
    FAIL("tests/cases policies do not compile:\n" << text);
  }
  return *result;
}

// The context with only the keys read_context knows; budgets, alternatives, now and the rest
// describe the policy's intent and live in tests/cases/*.recourse.
// The case's context as a host would pass it: its own keys as they are, the per-call budgets as
// the per-call overrides (maxAttempts, deadlineMs = elapsed + remainingMs), and the count of
// identical failures as `repeats`.
recourse::Context context_of(const json& c) {
  json ctx = c.at("context");
  const json budgets = ctx.value("budgets", json::object());
  if (budgets.contains("maxAttempts")) ctx["maxAttempts"] = budgets["maxAttempts"];
  if (budgets.contains("remainingMs"))
    ctx["deadlineMs"] = ctx.value("elapsedMs", 0) + budgets["remainingMs"].get<std::int64_t>();
  if (ctx.contains("consecutiveSameFailure")) ctx["repeats"] = ctx["consecutiveSameFailure"];
  // Retries a lower layer made, and the time it spent, are this operation's.
  if (ctx.contains("lowerLayerRetries")) ctx["lowerRetries"] = ctx["lowerLayerRetries"];
  if (ctx.contains("lowerLayerElapsedMs")) ctx["elapsedMs"] = ctx["lowerLayerElapsedMs"];
  const recourse::Result<recourse::Context> r = recourse::read_context(ctx.dump());
  std::string errors;
  for (const auto& e : r.diagnostics()) errors += e.message + "; ";
  INFO("context " << ctx.dump() << " errors: " << errors);
  REQUIRE(r.ok());
  return *r;
}

recourse::Envelope envelope_of(const std::string& text) {
  const recourse::Result<recourse::Envelope> r = recourse::read_envelope(text);
  INFO("envelope " << text);
  INFO("error: " << r.message());
  REQUIRE(r.ok());
  return *r;
}

Route route_of(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(Route::Stop); ++i)
    if (name == recourse::to_string(static_cast<Route>(i))) return static_cast<Route>(i);
  FAIL("unknown route '" << name << "' in expected");
  throw;  // unreachable
}

std::string describe(const Decision& d) {
  std::ostringstream os;
  os << "route=" << recourse::to_string(d.route) << " rule=" << d.rule << " policy=" << d.policy
     << " delay_ms=" << d.delay_ms << " attempts_left=" << d.attempts.before
     << " repairs_left=" << d.repairs.before << " exhausted=" << d.exhausted
     << " key=" << recourse::to_string(d.idempotency_key) << " warnings=" << d.warnings;
  return os.str();
}

// Two decisions are the same when everything a host acts on is the same.
void require_same(const Decision& a, const Decision& b) {
  INFO("got      " << describe(a));
  INFO("expected " << describe(b));
  CHECK(a.route == b.route);
  CHECK(a.delay_ms == b.delay_ms);
  CHECK(a.jitter_ms == b.jitter_ms);
  CHECK(a.rule == b.rule);
  CHECK(a.reason == b.reason);
  CHECK(a.exhausted == b.exhausted);
  CHECK(a.attempts.before == b.attempts.before);
  CHECK(a.repairs.before == b.repairs.before);
  CHECK(a.retry_after_ms == b.retry_after_ms);
  CHECK(a.idempotency_key == b.idempotency_key);
  CHECK(a.warnings == b.warnings);
  CHECK(a.minted_trace_id == b.minted_trace_id);
}

// Asserts `expected` (route and limits) of one case on the decision.
void check_expected(const json& expected, const Decision& d, const recourse::Envelope& e) {
  INFO("decision " << describe(d));
  CHECK(d.route == route_of(expected.at("route").get<std::string>()));
  const json limits = expected.value("limits", json::object());
  for (const auto& [key, value] : limits.items()) {
    INFO("expected.limits." << key << " = " << value.dump());
    if (key == "minDelayMs") {
      CHECK(d.delay_ms >= value.get<std::int64_t>());
    } else if (key == "maxDelayMs") {
      CHECK(d.delay_ms <= value.get<std::int64_t>());
    } else if (key == "sleepMs") {
      CHECK(d.delay_ms == value.get<std::int64_t>());
    } else if (key == "furtherAttempts") {
      // On retry the count is the attempt budget left; on any other route no automatic call of
      // the same tool follows, which is right only when the case allows none.
      if (d.route == Route::Retry)
        CHECK(d.attempts.before == value.get<std::int64_t>());
      else
        CHECK(value.get<std::int64_t>() == 0);
    } else if (key == "furtherRepairs") {
      if (d.route == Route::Repair)
        CHECK(d.repairs.before == value.get<std::int64_t>());
      else
        CHECK(value.get<std::int64_t>() == 0);
    } else if (key == "furtherIdenticalAttempts") {
      // Neither a retry nor a repair (the case's "repair" left the arguments unchanged).
      if (value.get<std::int64_t>() == 0)
        CHECK((d.route != Route::Retry && d.route != Route::Repair));
    } else if (key == "siblingToolBlocked" || key == "transportBreakerStrike" ||
               key == "probeLeaseMs" || key == "concurrentProbes") {
      // The breaker's state, not the decision's: asserted through recourse::Health by the
      // case's own test (kStateTested).
    } else if (key == "furtherAttemptsIfDiscardSupported") {
      // A decision with another context (streamDiscardSupported true): asserted by the case's
      // own test, "cases: stream-partial-output-replayed".
    } else if (key == "jitterSign") {
      // "add-only": the jitter after a hint only ever adds to it.
      CHECK(value.get<std::string>() == "add-only");
      CHECK(d.delay_ms >= e.retry_after_ms.value_or(0));
    } else if (key == "idempotencyKeyMustEqualFirstAttempt") {
      if (value.get<bool>()) CHECK(d.idempotency_key != recourse::KeyDirective::New);
    } else if (key == "idempotencyKeyDirective") {
      CHECK(recourse::to_string(d.idempotency_key) == value.get<std::string>());
    } else if (key == "sameKeyResend") {
      // A resend with the failed call's key is a retry that reuses it.
      CHECK((d.route == Route::Retry && d.idempotency_key == recourse::KeyDirective::Reuse) ==
            value.get<bool>());
    } else {
      FAIL("expected.limits." << key << " is not asserted by this test; add it");
    }
  }
  // A delay is finite and only a retry waits.
  CHECK(d.delay_ms >= 0);
  if (d.route != Route::Retry) CHECK(d.delay_ms == 0);
  // The server's valid hint is carried on every route (a display hint for a caller that
  // reschedules).
  CHECK(d.retry_after_ms == e.retry_after_ms);
  // No traceId came back: a local one is minted.
  CHECK(((d.warnings & recourse::kTraceIdMinted) != 0) == !e.trace_id.has_value());
}

std::set<std::string> warned_fields(const recourse::Envelope& e) {
  std::set<std::string> out;
  for (const auto& w : e.warnings) out.insert(w.field);
  return out;
}

// The envelope JSON with retryAfterMs removed, or replaced by `raw` (inserted as text, since
// nlohmann::json cannot hold 1e999).
std::string with_retry_after(const json& envelope, const std::optional<std::string>& raw) {
  json e = envelope;
  e.erase("retryAfterMs");
  std::string text = e.dump();
  if (raw) text.insert(1, "\"retryAfterMs\":" + *raw + (e.empty() ? "" : ","));
  return text;
}

// The case's raw form as a host hands it to the adapter. A case that records several attempts
// (stripe-idempotency-key-rotates) gives the one the context decides on.
json raw_form(const json& c) {
  json raw = c.at("raw");
  if (raw.contains("attempts")) {
    const auto attempt = c.at("context").value("attempt", 1);
    for (const auto& a : raw["attempts"])
      if (a.value("attempt", 0) == attempt)
        for (const auto& [key, value] : a.items()) raw[key] = value;
    raw.erase("attempts");
  }
  return raw;
}

// The context's "now" (ISO 8601, UTC) in ms since the epoch: the adapter's clock.
std::optional<std::int64_t> now_of(const json& c) {
  const std::string now = c.at("context").value("now", "");
  if (now.empty()) return std::nullopt;
  std::tm tm{};
  REQUIRE(strptime(now.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr);
  return static_cast<std::int64_t>(timegm(&tm)) * 1000;
}

// The case's raw form through its adapter, with the case policy's `map` overrides.
recourse::Adapted adapted(const json& c, const json& raw, const recourse::Context& ctx) {
  recourse::AdapterOptions options;
  if (const recourse::Policy* p = bundle().find(ctx.tool)) options.mappings = p->mappings();
  const recourse::Result<recourse::Adapted> r =
      recourse::from_raw(std::nullopt, raw.dump(), now_of(c), options);
  INFO("raw " << raw.dump() << " error: " << r.message());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("every case in cases.json is tested or pending", "[cases]") {
  const json cases = load_cases();
  std::set<std::string> ids;
  for (const auto& c : cases) {
    REQUIRE(c.contains("id"));
    const std::string id = c.at("id").get<std::string>();
    INFO("case " << id);
    CHECK(ids.insert(id).second);  // ids are unique
  }
  std::set<std::string> tested, pending, raw_tested;
  for (const auto& t : kTested) CHECK(tested.insert(t.id).second);
  for (const char* id : kTestedThroughState) CHECK(tested.insert(id).second);
  for (const auto& t : kRawTested) CHECK(raw_tested.insert(t.id).second);
  tested.insert(raw_tested.begin(), raw_tested.end());
  for (const auto& id : kStateTested) CHECK(tested.insert(id).second);
  for (const auto& p : kPending) CHECK(pending.insert(p.id).second);
  for (const auto& id : ids) {
    INFO("case " << id << " is in cases.json but neither tested nor listed as pending");
    CHECK((tested.count(id) + pending.count(id)) == 1);
  }
  for (const auto& id : tested) {
    INFO("tested case " << id << " is not in cases.json");
    CHECK(ids.count(id) == 1);
  }
  for (const auto& id : pending) {
    INFO("pending case " << id << " is not in cases.json");
    CHECK(ids.count(id) == 1);
  }
  for (const auto& p : kPending) {
    INFO("pending case " << p.id);
    CHECK(std::string(p.issue).size() > 0);
    CHECK(std::string(p.reason).size() > 0);
  }
  // Every raw form of a case not pending is decided through its adapter, and only raw forms are.
  for (const auto& c : cases) {
    const std::string id = c.at("id").get<std::string>();
    if (pending.count(id) ||
        std::find(kStateTested.begin(), kStateTested.end(), id) != kStateTested.end())
      continue;
    INFO("case " << id << ": a raw form is tested through its adapter exactly when there is one");
    // A raw form of no protocol the adapters read (an in-process result) has nothing to adapt.
    const bool adaptable =
        c.contains("raw") && !c.at("raw").is_null() &&
        !(c.at("raw").is_object() &&
          c.at("raw").value("protocol", "").find("in-process") != std::string::npos);
    CHECK(adaptable == (raw_tested.count(id) == 1));
  }
}

TEST_CASE("cases: envelope and context decide the expected route and limits", "[cases]") {
  const json cases = load_cases();
  const recourse::Bundle& policies = bundle();
  for (const Tested& t : kTested) {
    DYNAMIC_SECTION(t.id) {
      const json& c = find_case(cases, t.id);
      const recourse::Envelope e = envelope_of(c.at("envelope").dump());
      const recourse::Context ctx = context_of(c);
      CHECK(warned_fields(e) == t.warned_fields);

      const recourse::Policy* policy = policies.find(ctx.tool);
      REQUIRE(policy != nullptr);
      REQUIRE(policy->name() == ctx.tool);  // the case's own policy, not a fallback
      const Decision d = policies.decide(e, ctx);
      CHECK(d.policy == ctx.tool);
      CHECK(d.exhausted == std::string_view(t.exhausted));
      CHECK((d.warnings & recourse::kUnreadableEnvelope) == 0);
      CHECK((d.warnings & recourse::kNoPolicy) == 0);
      check_expected(c.at("expected"), d, e);
    }
  }
}

TEST_CASE("cases: retry-after-nan-hang variants decide as if retryAfterMs were absent", "[cases]") {
  const json cases = load_cases();
  const json& c = find_case(cases, "retry-after-nan-hang");
  const json& envelope = c.at("envelope");
  const recourse::Context ctx = context_of(c);

  const recourse::Envelope absent = envelope_of(with_retry_after(envelope, std::nullopt));
  CHECK(absent.warnings.empty());
  CHECK_FALSE(absent.retry_after_ms.has_value());
  const Decision baseline = bundle().decide(absent, ctx);
  check_expected(c.at("expected"), baseline, absent);

  // The case's own envelope ("NaN" as a string) and the raw variants as JSON numbers.
  const std::vector<std::string> variants = {envelope.at("retryAfterMs").dump(), "-1", "1e999",
                                             "-1e999", "-0.5"};
  for (const std::string& v : variants) {
    DYNAMIC_SECTION("retryAfterMs: " << v) {
      const std::string text = with_retry_after(envelope, v);
      const recourse::Envelope e = envelope_of(text);
      CHECK_FALSE(e.retry_after_ms.has_value());
      REQUIRE(e.warnings.size() == 1);
      CHECK(e.warnings[0].field == "retryAfterMs");
      CHECK(e.warnings[0].kind == "malformed");
      const Decision d = bundle().decide(e, ctx);
      require_same(d, baseline);
      check_expected(c.at("expected"), d, e);
    }
  }
}

TEST_CASE("cases: retry-after-fractional-seconds never rounds a hint down", "[cases]") {
  const json cases = load_cases();
  const json& c = find_case(cases, "retry-after-fractional-seconds");
  json envelope = c.at("envelope");
  envelope["retryAfterMs"] = 502.01;  // a fraction of a ms is rounded up, not down
  const recourse::Envelope e = envelope_of(envelope.dump());
  CHECK(e.warnings.empty());
  REQUIRE(e.retry_after_ms == std::optional<std::int64_t>(503));
  const Decision d = bundle().decide(e, context_of(c));
  CHECK(d.route == Route::Retry);
  CHECK(d.delay_ms >= 503);
}

TEST_CASE("cases: stripe-idempotency-key-rotates: only a pinned key may be resent", "[cases]") {
  // 409 idempotency_key_in_use means "wait and resend with the same key". With the case's
  // rotating key (nextAttemptIdempotencyKey differs) a resend would be a new charge: the
  // unknown-outcome gate refuses it. With the key pinned to the operation the retry goes ahead
  // and the decision says to reuse the key.
  const json cases = load_cases();
  const json& c = find_case(cases, "stripe-idempotency-key-rotates");
  json envelope = c.at("envelope");
  envelope["code"] = "CONFLICT";
  envelope["message"] = "idempotency_key_in_use";
  const recourse::Envelope e = envelope_of(envelope.dump());
  const Decision rotating = bundle().decide(e, context_of(c));
  INFO(describe(rotating));
  CHECK(rotating.route == Route::Escalate);
  CHECK(rotating.rule == "gate:unknown_outcome");
  json pinned = c;
  pinned["context"].erase("nextAttemptIdempotencyKey");
  const Decision d = bundle().decide(e, context_of(pinned));
  INFO(describe(d));
  CHECK(d.route == Route::Retry);
  CHECK(d.idempotency_key == recourse::KeyDirective::Reuse);
}

TEST_CASE("cases: stream-partial-output-replayed: emitted output is resent only when discardable",
          "[cases]") {
  // The case's context says the stream handed output to the caller and the host cannot discard
  // it: a committed effect, so gate:committed stops the retry the TIMEOUT rule asks for, though
  // the model call is idempotent. With streamDiscardSupported the host clears the partial
  // output and one retry is allowed: the case's 3 attempts are the client's loop (attempt
  // 1/3); the further one is what the case's policy allows (attempts = 2), so no per-call
  // maxAttempts here.
  const json cases = load_cases();
  json c = find_case(cases, "stream-partial-output-replayed");
  c["context"]["budgets"].erase("maxAttempts");
  const recourse::Envelope e = envelope_of(c.at("envelope").dump());
  const Decision kept = bundle().decide(e, context_of(c));
  INFO(describe(kept));
  CHECK(kept.route == route_of(c.at("expected").at("route").get<std::string>()));
  CHECK(kept.route == Route::Stop);
  CHECK(kept.rule == "gate:committed");
  CHECK(c.at("expected").at("limits").at("furtherAttempts") == 0);
  c["context"]["streamDiscardSupported"] = true;
  const Decision discarded = bundle().decide(e, context_of(c));
  INFO(describe(discarded));
  CHECK(discarded.route == Route::Retry);
  CHECK(discarded.rule == "transient");
  CHECK(discarded.attempts.before ==
        c.at("expected").at("limits").at("furtherAttemptsIfDiscardSupported").get<std::int64_t>());
  CHECK(discarded.attempts.before == 1);
  CHECK(discarded.delay_ms <= c.at("context").at("budgets").at("maxDelayMs").get<std::int64_t>());
  // Nothing emitted before the failure (the case's contrast): the retry goes ahead too.
  c["context"]["streamOutputEmitted"] = false;
  c["context"]["streamDiscardSupported"] = false;
  CHECK(bundle().decide(e, context_of(c)).route == Route::Retry);
}

TEST_CASE("cases: every committed case has the fields the tests read", "[cases]") {
  // The shape of a case (../shared/cases/README.md): a new case copied in without one of these
  // fails here, not as a crash in the test that reads it.
  const json cases = load_cases();
  REQUIRE(cases.size() >= kTested.size());
  for (const auto& c : cases) {
    INFO("case " << c.dump().substr(0, 80));
    REQUIRE(c.is_object());
    CHECK(c.value("id", "") != "");
    CHECK(c.value("source", "") != "");
    CHECK(c.contains("raw"));
    CHECK(c.value("envelope", json()).is_object());
    REQUIRE(c.value("context", json()).is_object());
    CHECK(c.at("context").value("tool", "") != "");
    REQUIRE(c.value("expected", json()).is_object());
    CHECK(c.at("expected").value("route", "") != "");
  }
}

TEST_CASE("cases: raw forms through their adapters decide the expected route and limits",
          "[cases][adapters]") {
  const json cases = load_cases();
  const recourse::Bundle& policies = bundle();
  for (const RawTested& t : kRawTested) {
    DYNAMIC_SECTION(t.id) {
      json c = find_case(cases, t.id);
      if (t.policy_attempts) c["context"]["budgets"].erase("maxAttempts");
      const recourse::Context ctx = context_of(c);
      const recourse::Adapted r = adapted(c, raw_form(c), ctx);
      const recourse::Envelope& e = r.envelope;
      INFO("adapter: " << recourse::to_json(e) << " (" << r.mapping << ")");
      CHECK(e.code == std::optional<std::string>(t.code));
      CHECK(warned_fields(e) == t.warned_fields);

      const recourse::Policy* policy = policies.find(ctx.tool);
      REQUIRE(policy != nullptr);
      REQUIRE(policy->name() == ctx.tool);
      const Decision d = policies.decide(e, ctx);
      CHECK(d.exhausted == std::string_view(t.exhausted));
      CHECK((d.warnings & recourse::kUnknownCode) == 0);
      check_expected(c.at("expected"), d, e);
    }
  }
}

TEST_CASE("cases: what the adapters read from the raw forms", "[cases][adapters]") {
  const json cases = load_cases();
  auto read = [&](const char* id) {
    const json& c = find_case(cases, id);
    return adapted(c, raw_form(c), context_of(c)).envelope;
  };
  // 9999999999 s is kept (the policy's retry_after_max stops it), never clamped or overflowed.
  CHECK(read("retry-after-overflow-rdap").retry_after_ms ==
        std::optional<std::int64_t>(9999999999000));
  // "0.503" is honoured and rounded up to the next whole second, never down to 0.
  CHECK(read("retry-after-fractional-seconds").retry_after_ms == std::optional<std::int64_t>(1000));
  // Not retryable: the quota is spent, whatever the 429 says.
  CHECK(read("openai-insufficient-quota-429").retryable == std::optional<bool>(false));
  // Secondary limit: X-RateLimit-Reset says 31 s, GitHub says at least a minute.
  CHECK(read("github-403-secondary-rate-limit").retry_after_ms ==
        std::optional<std::int64_t>(60000));
  // OpenRouter's reset sits in the body (error.metadata.headers), epoch ms: 42 s after now.
  CHECK(read("ratelimit-reset-in-body-metadata").retry_after_ms ==
        std::optional<std::int64_t>(42000));
  // The HTML page stays out of the message.
  CHECK(read("lb-502-html-no-envelope").message ==
        std::optional<std::string>("HTTP 502 Bad Gateway"));
  // The isError text is kept as the message, as untrusted data.
  CHECK(read("mcp-iserror-ignored-by-client").message ==
        std::optional<std::string>("(illustrative) upstream service returned HTTP 500"));
}

TEST_CASE("cases: retry-after-nan-hang raw variants decide as if Retry-After were absent",
          "[cases][adapters]") {
  const json cases = load_cases();
  const json& c = find_case(cases, "retry-after-nan-hang");
  const recourse::Context ctx = context_of(c);
  json raw = raw_form(c);
  raw["headers"].erase("Retry-After");
  const recourse::Adapted absent = adapted(c, raw, ctx);
  CHECK(absent.envelope.warnings.empty());
  const Decision baseline = bundle().decide(absent.envelope, ctx);
  check_expected(c.at("expected"), baseline, absent.envelope);
  std::vector<std::string> variants = {
      c.at("raw").at("headers").at("Retry-After").get<std::string>()};
  for (const auto& v : c.at("raw").at("variants")) variants.push_back(v.get<std::string>());
  variants.insert(variants.end(), {"inf", "-0.5", "NaN", "1e3"});
  for (const std::string& v : variants) {
    DYNAMIC_SECTION("Retry-After: " << v) {
      raw["headers"]["Retry-After"] = v;
      const recourse::Adapted r = adapted(c, raw, ctx);
      CHECK_FALSE(r.envelope.retry_after_ms.has_value());
      REQUIRE(r.envelope.warnings.size() == 1);
      CHECK(r.envelope.warnings[0].field == "retryAfterMs");
      CHECK(r.envelope.warnings[0].kind == "malformed");
      const Decision d = bundle().decide(r.envelope, ctx);
      require_same(d, baseline);
      check_expected(c.at("expected"), d, r.envelope);
    }
  }
}

TEST_CASE("cases: github-403: a real permission error keeps routing to authorize",
          "[cases][adapters]") {
  const json cases = load_cases();
  const json& c = find_case(cases, "github-403-secondary-rate-limit");
  json raw = raw_form(c);
  raw["body"]["message"] = "Resource not accessible by integration";
  const recourse::Context ctx = context_of(c);
  const recourse::Adapted r = adapted(c, raw, ctx);
  CHECK(r.envelope.code == "PERMISSION");
  CHECK(bundle().decide(r.envelope, ctx).route == Route::Authorize);
  // A wait beyond the policy's 120 s (the 56-minute sleeps) stops instead of blocking.
  raw = raw_form(c);
  raw["headers"]["Retry-After"] = "3360";
  const Decision d = bundle().decide(adapted(c, raw, ctx).envelope, ctx);
  CHECK(d.route == Route::Stop);
  CHECK(d.exhausted == "retry_after");
}

TEST_CASE("cases: ratelimit-reset-in-body-metadata: a per-day reset stops, a past one is no hint",
          "[cases][adapters]") {
  const json cases = load_cases();
  json c = find_case(cases, "ratelimit-reset-in-body-metadata");
  c["context"]["budgets"].erase("maxAttempts");
  const recourse::Context ctx = context_of(c);
  json raw = raw_form(c);
  json& headers = raw["body"]["error"]["metadata"]["headers"];
  // The per-day limit: the reset about 15 h away is beyond the policy's 60 s; stop, not a retry.
  raw["body"]["error"]["message"] = "Rate limit exceeded: free-models-per-day.";
  headers["X-RateLimit-Reset"] = "1785108000000";  // 2026-07-26T23:20:00Z
  auto r = adapted(c, raw, ctx);
  CHECK(r.envelope.retry_after_ms == std::optional<std::int64_t>(54000000));
  const Decision day = bundle().decide(r.envelope, ctx);
  CHECK(day.route == Route::Stop);
  CHECK(day.exhausted == "retry_after");
  // A reset already in the past asks for no wait: the policy's backoff applies.
  headers["X-RateLimit-Reset"] = "1785053000000";
  r = adapted(c, raw, ctx);
  CHECK(r.envelope.retry_after_ms == std::optional<std::int64_t>(0));
  const Decision past = bundle().decide(r.envelope, ctx);
  CHECK(past.route == Route::Retry);
  CHECK(past.delay_ms < 42000);
}

TEST_CASE("cases: idempotency-key-reused-after-body-change: a new key only when nothing is unknown",
          "[cases][adapters]") {
  // Attempt 2 reused attempt 1's key with a changed body: Square rejects it. Nothing was
  // processed (attempt 1 was rate limited), so the repair with a new key goes ahead. Had
  // attempt 1's outcome been unknown (a timeout), a new key could apply the batch twice: the
  // unknown-outcome gate refuses the repair. Attempt 1 itself (a 429) is retried with its key.
  const json cases = load_cases();
  json c = find_case(cases, "idempotency-key-reused-after-body-change");
  const recourse::Context ctx = context_of(c);
  const recourse::Adapted r = adapted(c, raw_form(c), ctx);
  CHECK(r.envelope.field == std::optional<std::string>("idempotency_key"));
  CHECK(r.envelope.retryable == std::optional<bool>(false));
  CHECK(r.mapping == "http 400 body: idempotency key reused with another request");
  const Decision repaired = bundle().decide(r.envelope, ctx);
  INFO(describe(repaired));
  CHECK(repaired.route == Route::Repair);
  CHECK(repaired.idempotency_key == recourse::KeyDirective::New);
  c["context"]["sideEffect"] = "unknown";
  const Decision unknown = bundle().decide(r.envelope, context_of(c));
  INFO(describe(unknown));
  CHECK(unknown.route != Route::Repair);
  CHECK(unknown.rule == "gate:unknown_outcome");
  // Stripe's reused key with other parameters reads the same.
  const recourse::Result<recourse::Adapted> stripe_read = recourse::from_http(
      400, {},
      R"({"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}})",
      std::nullopt);
  REQUIRE(stripe_read.ok());
  const recourse::Adapted& stripe = *stripe_read;
  CHECK(stripe.envelope.code == std::optional<std::string>("VALIDATION"));
  CHECK(stripe.envelope.field == std::optional<std::string>("idempotency_key"));
  CHECK(bundle().decide(stripe.envelope, ctx).route == Route::Repair);
  // Attempt 1: the 429 is retried, and the retry reuses the key.
  json first = c;
  first["context"]["sideEffect"] = "none";
  first["context"]["attempt"] = 1;
  first["context"].erase("history");
  const recourse::Context first_ctx = context_of(first);
  const Decision retried =
      bundle().decide(adapted(first, raw_form(first), first_ctx).envelope, first_ctx);
  INFO(describe(retried));
  CHECK(retried.route == Route::Retry);
  CHECK(retried.idempotency_key == recourse::KeyDirective::Reuse);
}

namespace {

// An ISO 8601 UTC time ("2026-09-10T14:41:59Z") in ms since the epoch.
std::int64_t ms_of(const std::string& iso) {
  std::tm tm{};
  REQUIRE(strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr);
  return static_cast<std::int64_t>(timegm(&tm)) * 1000;
}

}  // namespace

TEST_CASE("cases: mcp-breaker-opened-by-tool-errors: a server's answers open no circuit",
          "[cases][breaker]") {
  // The case's three misses of edit_note ("old_text not found") go through the tool's breaker
  // (failures = 3, the report's threshold) as a host records them: none is a strike, since
  // NOT_FOUND is not a failure a retry could fix, so the third decision is the policy's repair
  // and search, the sibling tool the model needs, stays closed. The contrast: three TRANSIENT
  // failures of edit_note open its circuit, and search's still stays closed.
  const json cases = load_cases();
  const json& c = find_case(cases, "mcp-breaker-opened-by-tool-errors");
  const json& limits = c.at("expected").at("limits");
  json context = c.at("context");
  context["repairs"] = context.at("repairsUsed");
  json sized = c;
  sized["context"] = context;
  recourse::Context ctx = context_of(sized);
  const recourse::Envelope e = envelope_of(c.at("envelope").dump());
  const recourse::Policy* edit = bundle().find(ctx.tool);
  const recourse::Policy* search =
      bundle().find(c.at("context").at("siblingTools").at(0).get<std::string>());
  REQUIRE(edit != nullptr);
  REQUIRE(search != nullptr);
  REQUIRE(edit->name() == ctx.tool);
  recourse::Context sibling;
  sibling.tool = search->name();
  sibling.operation_id = "search-1";

  recourse::Health health;
  const std::int64_t now = 1000000;
  ctx.operation_id = "edit-1";
  for (int attempt = 1; attempt <= 3; ++attempt) {
    health.record_failure(*edit, ctx, now + attempt, &e);
    health.prepare(*edit, ctx, now + attempt);
    CHECK(ctx.circuit == recourse::CircuitState::Closed);
  }
  CHECK(health.get(ctx.tool).consecutive_failures == 0);  // no strike
  CHECK((health.get(ctx.tool).consecutive_failures > 0) ==
        limits.at("transportBreakerStrike").get<bool>());
  const Decision d = bundle().decide(e, ctx);
  CHECK(d.rule == "fix_anchor");
  check_expected(c.at("expected"), d, e);
  health.prepare(*search, sibling, now + 4);
  CHECK((sibling.circuit != recourse::CircuitState::Closed) ==
        limits.at("siblingToolBlocked").get<bool>());

  // The raw form: the MCP adapter reads the isError result; whatever code it reads, it is not a
  // strike either.
  const recourse::Adapted raw = adapted(c, raw_form(c), ctx);
  health.record_failure(*edit, ctx, now + 5, &raw.envelope);
  CHECK(health.get(ctx.tool).consecutive_failures == 0);

  // The contrast: failures a retry could fix are strikes, on edit_note's circuit only.
  const recourse::Envelope transient = envelope_of(R"({"code":"TRANSIENT","retryable":true})");
  for (int i = 0; i < 3; ++i) health.record_failure(*edit, ctx, now + 10 + i, &transient);
  health.prepare(*edit, ctx, now + 20);
  CHECK(ctx.circuit == recourse::CircuitState::Open);
  CHECK(bundle().decide(transient, ctx).rule == "circuit:open");
  health.prepare(*search, sibling, now + 20);
  CHECK(sibling.circuit == recourse::CircuitState::Closed);
}

TEST_CASE("cases: breaker-stuck-half-open: a probe that never settles is lost after its lease",
          "[cases][breaker]") {
  // The report's breaker through recourse::Health: 12 consecutive failures open it at the last
  // failure's time; one resetTimeout (30 s) later a call takes the half-open probe and never
  // settles. Once that lease (30 s) is over, the next call takes the probe and its decision is
  // the policy's retry, its one further attempt (if the probe fails, the circuit reopens and
  // the next decision is the open route); a late failure of the lost probe changes nothing, and
  // within the live lease a second caller gets the open route: one probe at a time. At the
  // case's now, six days on, the tool's record has expired (StoreOptions::state_ttl_ms, 24 h
  // after its last change): the circuit reads closed, and the call is retried too.
  const json cases = load_cases();
  const json& c = find_case(cases, "breaker-stuck-half-open");
  const json& limits = c.at("expected").at("limits");
  const json& breaker = c.at("context").at("breaker");
  recourse::Context ctx = context_of(c);
  const recourse::Envelope e = envelope_of(c.at("envelope").dump());
  const recourse::Policy* policy = bundle().find(ctx.tool);
  REQUIRE(policy != nullptr);
  REQUIRE(policy->name() == ctx.tool);
  const std::int64_t lease = breaker.at("probeLeaseMs").get<std::int64_t>();
  CHECK(lease == limits.at("probeLeaseMs").get<std::int64_t>());
  CHECK_THAT(policy->dump(), Catch::Contains("probe_lease=" + std::to_string(lease) + "ms"));

  const std::int64_t opened = ms_of(c.at("raw").at("breakerState").at("last_failure_time"));
  const std::int64_t probed = ms_of(breaker.at("probeStartedAt"));
  const std::int64_t now = probed + lease;  // the lost probe's lease is over
  recourse::Health health;
  auto call = [&](const char* operation) {
    recourse::Context other = ctx;
    other.operation_id = operation;
    return other;
  };
  for (int i = 0; i < 12; ++i) health.record_failure(*policy, call("earlier"), opened, &e);
  recourse::Context lost = call("lost-probe");
  health.prepare(*policy, lost, probed);
  REQUIRE(lost.circuit == recourse::CircuitState::HalfOpen);
  recourse::Context waiting = call("waiting");
  health.prepare(*policy, waiting, probed + lease - 1);  // within the lost probe's lease
  CHECK(waiting.circuit == recourse::CircuitState::Open);
  CHECK(bundle().decide(e, waiting).route == Route::Stop);

  ctx.operation_id = "case-call";
  health.prepare(*policy, ctx, now);
  CHECK(ctx.circuit == recourse::CircuitState::HalfOpen);
  const Decision d = bundle().decide(e, ctx);
  INFO(describe(d));
  CHECK(d.route == route_of(c.at("expected").at("route").get<std::string>()));
  CHECK(d.rule == "transient");
  CHECK(d.delay_ms <= c.at("context").at("budgets").at("maxDelayMs").get<std::int64_t>());

  health.record_failure(*policy, lost, now + 1, &e);  // a late outcome of the lost probe
  recourse::Context second = call("second");
  health.prepare(*policy, second, now + 2);
  CHECK(second.circuit == recourse::CircuitState::Open);  // one probe at a time
  const std::int64_t probes = (ctx.circuit == recourse::CircuitState::HalfOpen) +
                              (second.circuit == recourse::CircuitState::HalfOpen);
  CHECK(probes == limits.at("concurrentProbes").get<std::int64_t>());
  health.prepare(*policy, ctx, now + 3);
  CHECK(ctx.circuit == recourse::CircuitState::HalfOpen);  // the case's call still holds it

  // The probe is the one further attempt: when it fails, the circuit reopens for a cooldown.
  std::int64_t further = d.route == Route::Retry ? 1 : 0;
  health.record_failure(*policy, ctx, now + 4, &e);
  health.prepare(*policy, ctx, now + 5);
  const Decision after = bundle().decide(e, ctx);
  CHECK(after.rule == "circuit:open");
  if (after.route == Route::Retry) ++further;
  CHECK(further == limits.at("furtherAttempts").get<std::int64_t>());

  ctx.operation_id = "six-days-on";
  health.prepare(*policy, ctx, *now_of(c));
  CHECK(ctx.circuit == recourse::CircuitState::Closed);
  CHECK(bundle().decide(e, ctx).route == Route::Retry);
}

TEST_CASE("cases: retry-after-lockstep-herd: sessions told the same wait spread apart", "[cases]") {
  // Four sessions (the case's illustration) and then sixty-four, each its own operation: every
  // delay is within 60..75 s, the same session always waits the same, and they no longer wake
  // together (without hint_jitter every one would wait exactly 60000 ms).
  const json cases = load_cases();
  const json& c = find_case(cases, "retry-after-lockstep-herd");
  const recourse::Envelope e = envelope_of(c.at("envelope").dump());
  const json limits = c.at("expected").at("limits");
  for (const int sessions : {4, 64}) {
    std::set<std::int64_t> delays;
    for (int s = 0; s < sessions; ++s) {
      json session = c;
      session["context"]["operationId"] = "session-" + std::to_string(s);
      const recourse::Context ctx = context_of(session);
      const Decision d = bundle().decide(e, ctx);
      INFO(describe(d));
      REQUIRE(d.route == Route::Retry);
      CHECK(d.rule == "throttled");
      CHECK(d.delay_ms >= limits.at("minDelayMs").get<std::int64_t>());
      CHECK(d.delay_ms <= limits.at("maxDelayMs").get<std::int64_t>());
      CHECK(d.jitter_ms == d.delay_ms - 60000);
      CHECK(bundle().decide(e, ctx).delay_ms == d.delay_ms);
      delays.insert(d.delay_ms);
    }
    CHECK(delays.size() >= static_cast<std::size_t>(sessions - 1));
  }
}

TEST_CASE("cases: validation-loop-shifting-args: a rejected field repeats whatever the arguments",
          "[cases][state]") {
  // The host replays the case's history through a Workflow: each failed call (its own
  // argsHash), the repair decided on it, then the fourth call, which fails like the others.
  // Counted by (tool, code, field) the fourth failure is the fourth in a row: budget:repeats
  // stops the loop. Keyed by the argument hash, every failure would look new.
  const json cases = load_cases();
  const json& c = find_case(cases, "validation-loop-shifting-args");
  const recourse::Envelope e = envelope_of(c.at("envelope").dump());
  json context = c.at("context");
  context.erase("attempt");  // the workflow counts the calls
  json first = c;
  first["context"] = context;
  recourse::Context base = context_of(first);
  base.operation_id = "turn-1";
  recourse::Workflow workflow;
  std::int64_t now = 1000;
  auto fail = [&](const std::string& args_hash) {
    recourse::Context call = base;
    call.args_hash = args_hash;
    workflow.record_attempt(call, 1, now);
    workflow.record_failure(call, e);
    workflow.apply(call, now);
    now += 1000;
    return call;
  };
  for (const auto& h : c.at("context").at("history")) {
    const recourse::Context call = fail(h.at("argsHash").get<std::string>());
    const Decision d = bundle().decide(e, call);
    INFO(describe(d));
    CHECK(d.route == Route::Repair);  // the first three failures are repaired
    workflow.record_decision(call, d);
  }
  const recourse::Context fourth = fail("d9e1");
  CHECK(fourth.attempt == c.at("context").at("attempt").get<std::int64_t>());
  CHECK(fourth.repeats == 4);
  CHECK(fourth.repairs == 3);
  const Decision d = bundle().decide(e, fourth);
  INFO(describe(d));
  CHECK(d.rule == "budget:repeats");
  CHECK(d.exhausted == "repeats");
  check_expected(c.at("expected"), d, e);
  // The same reshaping loop without a field to blame (the host's hash tells calls apart):
  // each failure is new, and the repairs budget is what ends it.
  json no_field = c.at("envelope");
  no_field.erase("field");
  CHECK(bundle().decide(envelope_of(no_field.dump()), fourth).route == Route::Stop);
}

TEST_CASE("cases: validation-loop-shifting-args: re-issued as new operations, the run ends it",
          "[cases][state][run]") {
  // The reported trajectory: every call a new planner step (a new operation id) with reshaped
  // arguments. Within each operation the failure is the first of its kind, so it is repaired;
  // the run's count of the tool's failures (run_tool_failures = 5) ends the loop at the fifth,
  // where the report ran to 25 calls.
  const json cases = load_cases();
  const json& c = find_case(cases, "validation-loop-shifting-args");
  const recourse::Envelope e = envelope_of(c.at("envelope").dump());
  json first = c;
  first["context"].erase("attempt");
  first["context"].erase("repairsUsed");
  const recourse::Context base = context_of(first);
  recourse::Workflow workflow(nullptr, "trajectory-1");
  std::vector<std::string> rules;
  for (int step = 0; step < 25; ++step) {
    recourse::Context call = base;
    call.operation_id = "step-" + std::to_string(step);
    call.args_hash = "shape-" + std::to_string(step);
    workflow.record_attempt(call, 1, 1000 + step);
    workflow.record_failure(call, e);
    workflow.apply(call, 1000 + step);
    CHECK(call.attempt == 1);
    CHECK(call.run_tool_failures == step + 1);
    const Decision d = bundle().decide(e, call);
    workflow.record_decision(call, d);
    rules.emplace_back(d.rule);
    if (d.route != Route::Repair) {
      CHECK(d.route == Route::Stop);
      CHECK(d.exhausted == "run_failures");
      break;
    }
  }
  CHECK(rules == std::vector<std::string>{"reshape", "reshape", "reshape", "reshape",
                                          "budget:run_failures"});
}
