// Budget state: Workflow (counters per operation and tool) and Health (per-tool breaker, retry
// tokens and the ledger's side effect) over a Store. See recourse/state.hpp for the contracts and
// store/logic.cpp for the arithmetic (gRFC A6 tokens, breaker transitions).
#include "recourse/state.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>

#include <nlohmann/json.hpp>

#include "eval/backoff.hpp"
#include "eval/eval.hpp"
#include "store/logic.hpp"
#include "table/compiled.hpp"

namespace recourse {
namespace {

using json = nlohmann::json;

// What makes two failures the same (docs/language.md section 10): the tool, the code and the
// field; and, for a failure that names no field, the host's hash of the arguments too. A
// failure tied to one argument stays the same failure however the other arguments are
// reshaped (a model that keeps changing the call's shape while the server keeps rejecting the
// same field), and one tied to none is the same only for the same arguments.
std::uint64_t failure_key(const Context& c, const Envelope& e, std::string_view args_hash) {
  std::uint64_t h = detail::fnv1a(c.tool);
  h = detail::fnv1a(e.code.value_or("\x01"
                                    "absent"),
                    h ^ 0x1f);
  h = detail::fnv1a(e.field.value_or("\x01"
                                     "absent"),
                    h ^ 0x2f);
  return detail::splitmix64(e.field ? h : detail::fnv1a(args_hash, h ^ 0x3f));
}

// Lists `tool` in the context's unavailable tools (a fallback chain passes over it), once.
void mark_unavailable(Context& c, const std::string& tool) {
  if (!c.unavailable_tools) c.unavailable_tools.emplace();
  auto& tools = *c.unavailable_tools;
  if (std::find(tools.begin(), tools.end(), tool) == tools.end()) tools.push_back(tool);
}

std::int64_t milli(double tokens) {
  return static_cast<std::int64_t>(tokens * 1000.0 + 0.5);
}

BucketSpec bucket_spec(const detail::Throttle& t) {
  return {milli(t.max_tokens), milli(t.token_ratio)};
}

BreakerSpec breaker_spec(const detail::Breaker& b) {
  return {b.failures, milli(b.ratio), b.window, b.min_calls, b.cooldown_ms, b.probe_lease_ms};
}

// A condition's truth for one code with every other attribute unknown: false, true or maybe.
enum class Truth : std::uint8_t { False, True, Maybe };

Truth for_code(const detail::Cond& c, const detail::Slot& code) {
  using K = ast::Expr::Kind;
  switch (c.kind) {
    case K::Test:
      if (c.attr != detail::Attr::Code) return Truth::Maybe;
      return detail::eval_test(c, code) ? Truth::True : Truth::False;
    case K::Not: {
      const Truth t = for_code(c.children[0], code);
      return t == Truth::Maybe ? t : t == Truth::True ? Truth::False : Truth::True;
    }
    case K::And:
    case K::Or: {
      const Truth settles = c.kind == K::And ? Truth::False : Truth::True;
      Truth r = c.kind == K::And ? Truth::True : Truth::False;
      for (const auto& child : c.children) {
        const Truth t = for_code(child, code);
        if (t == settles) return t;
        if (t == Truth::Maybe) r = t;
      }
      return r;
    }
  }
  return Truth::Maybe;
}

// The envelope's code as decide() resolves it: an unknown one is UNKNOWN; absent, not present.
detail::Slot code_slot(const detail::Compiled& p, const Envelope& e) {
  detail::Slot code;
  if (e.code) {
    const std::int64_t id = p.code_ids.find(*e.code);
    code.present = true;
    code.num = id < 0 ? detail::kUnknownCodeId : id;
  }
  return code;
}

// A failure the breaker counts (`breaker { counts }`): one whose code is listed, or one with no
// envelope or no code (what failed is unknown: the conservative reading).
bool counts_for_breaker(const detail::Compiled& p, const Envelope* e) {
  if (!e) return true;
  const detail::Slot code = code_slot(p, *e);
  const auto& counts = p.spec.breaker.counts;
  return !code.present || std::binary_search(counts.begin(), counts.end(), code.num);
}

// A failure gRFC A6 counts for throttling: "a status code that qualifies as retryable", here a
// code some `retry` rule of the policy can take (its condition is not false for that code,
// whatever the other attributes; a rule without one takes every code), or "a pushback response
// indicating not to retry", which an adapter marks with a warning of kind "pushback", whatever
// the code. The code is resolved as decide() resolves it: an unknown one is UNKNOWN, an absent
// one fails every test but `is absent`.
bool counts_for_throttle(const detail::Compiled& p, const Envelope& e) {
  if (std::any_of(e.warnings.begin(), e.warnings.end(),
                  [](const EnvelopeWarning& w) { return w.kind == "pushback"; }))
    return true;
  const detail::Slot code = code_slot(p, e);
  for (const detail::RuleSpec& rule : p.spec.rules)
    if (rule.action.route == Route::Retry &&
        (!rule.when || for_code(*rule.when, code) != Truth::False))
      return true;
  return false;
}

// Restores `store` from JSON, prefixing errors with `what`.
Status restore(MemoryStore& store, std::string_view json, const char* what) noexcept {
  Status restored = store.from_json(json);
  if (restored.ok()) return restored;
  try {
    return Status::failure(error_diagnostic("S004", std::string(what) + ": " + restored.message()));
  } catch (...) {
    return restored;
  }
}

}  // namespace

// ---- Workflow -------------------------------------------------------------------------------

namespace {

// An operation id or a tool name as a part of a counter key: '%' and '/' escaped (%25, %2F), so
// a key splits again at its last two '/' however the ids are spelt.
std::string key_part(std::string_view s) {
  std::string out;
  for (char ch : s) out += ch == '%' ? "%25" : ch == '/' ? "%2F" : std::string(1, ch);
  return out;
}

std::string from_key_part(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "%25") == 0)
      out += '%', i += 2;
    else if (s.compare(i, 3, "%2F") == 0)
      out += '/', i += 2;
    else
      out += s[i];
  }
  return out;
}

// The form of Workflow::to_json(): 2 keeps counters per operation and tool (none before).
constexpr int kWorkflowStateVersion = 2;

// A run counter's key parts: the operation part of every run key, and the tool part of the
// counters of every tool. Neither can be an escaped id (a '%' is escaped as %25 there), so no
// operation or tool shares a key with them.
constexpr std::string_view kRunPart = "%RUN";
constexpr std::string_view kAllTools = "%ALL";
// The failure hash of a run's counters: one value, so their repeats count every failure.
constexpr std::uint64_t kRunFailure = 1;

}  // namespace

Workflow::Workflow(std::shared_ptr<Store> store, std::string scope)
    : local_(std::make_shared<MemoryStore>()),
      store_(store ? std::move(store) : local_),
      scope_(std::move(scope)) {}

std::string Workflow::key(std::string_view operation_id, std::string_view tool) const {
  return (scope_.empty() ? std::string() : scope_ + "/") + key_part(operation_id) + "/" +
         key_part(tool);
}

std::string Workflow::run_key(std::string_view tool) const {
  return (scope_.empty() ? std::string() : scope_ + "/") + std::string(kRunPart) + "/" +
         (tool.empty() ? std::string(kAllTools) : key_part(tool));
}

std::optional<OperationState> Workflow::count(const std::string& key, const CountEvent& event,
                                              std::int64_t now_ms) const {
  now_ms_ = std::max(now_ms_, now_ms);
  if (store_ == local_) return local_->count(key, event, now_ms);
  local_->count(key, event, now_ms);  // the mirror this process falls back to
  auto op = store_->count(key, event, now_ms);
  if (event.kind == CountEvent::Success)
    missed_.erase(key);
  else if (!op && event.kind != CountEvent::Read)
    missed_.insert(key);  // the store's counts of it are short from now on
  return op;
}

void Workflow::record_attempt(const Context& c, std::int64_t cost, std::int64_t now_ms) {
  count(key(c.operation_id, c.tool), {CountEvent::Attempt, cost}, now_ms);
  for (const std::string& k : {run_key(c.tool), run_key({})})
    count(k, {CountEvent::Attempt, cost}, now_ms);
}

void Workflow::record_failure(const Context& c, const Envelope& e) {
  count(key(c.operation_id, c.tool), {CountEvent::Failure, 0, failure_key(c, e, c.args_hash)},
        now_ms_);
  for (const std::string& k : {run_key(c.tool), run_key({})})
    count(k, {CountEvent::Failure, 0, kRunFailure}, now_ms_);
}

void Workflow::record_decision(const Context& c, const Decision& d) {
  // A retry decided on the server's pushback (a retryAfterMs hint) restarts the backoff of the
  // retries after it (gRFC A6).
  const bool pushback = d.route == Route::Retry && d.retry_after_ms.has_value();
  count(key(c.operation_id, c.tool),
        {CountEvent::Decision, 0, 0, d.route == Route::Repair, pushback ? d.attempt : 0}, now_ms_);
}

void Workflow::record_success(const Context& c) {
  count(key(c.operation_id, c.tool), {CountEvent::Success}, now_ms_);
}

// The run's counters into the context, the larger count winning. When the store cannot answer,
// this process's own, flagged; when it missed one of this process's events, the larger of its
// counts and this process's (a run is never dropped, so the store's stays short).
void Workflow::apply_run(Context& c, std::int64_t now_ms) const {
  const auto read = [&](const std::string& k) {
    auto run = count(k, {CountEvent::Read}, now_ms);
    const auto mine = local_->count(k, {CountEvent::Read}, now_ms).value_or(OperationState{});
    if (!run) {
      c.store_unavailable = true;
      return mine;
    }
    run->attempts = std::max(run->attempts, mine.attempts);
    run->cost = std::max(run->cost, mine.cost);
    run->repeats = std::max(run->repeats, mine.repeats);
    return *run;
  };
  const OperationState all = read(run_key({})), tool = read(run_key(c.tool));
  c.run_calls = std::max(c.run_calls, all.attempts);
  c.run_cost = std::max(c.run_cost, all.cost);
  c.run_failures = std::max(c.run_failures, all.repeats);
  c.run_tool_calls = std::max(c.run_tool_calls, tool.attempts);
  c.run_tool_cost = std::max(c.run_tool_cost, tool.cost);
  c.run_tool_failures = std::max(c.run_tool_failures, tool.repeats);
}

void Workflow::apply(Context& c, std::int64_t now_ms) const {
  apply_run(c, now_ms);
  const std::string k = key(c.operation_id, c.tool);
  auto op = count(k, {CountEvent::Read}, now_ms);
  if (!op || missed_.count(k)) {  // unreadable, or short of an event it could not take
    c.store_unavailable = true;
    const auto mine = local_->count(k, {CountEvent::Read}, now_ms);
    if (!op || !op->recorded()) {
      op = mine;
    } else if (mine->recorded()) {  // the larger of each count
      op->attempts = std::max(op->attempts, mine->attempts);
      op->repairs = std::max(op->repairs, mine->repairs);
      op->repeats = std::max(op->repeats, mine->repeats);
      op->cost = std::max(op->cost, mine->cost);
      op->started_ms = std::min(op->started_ms, mine->started_ms);
      op->pushback_attempt = std::max(op->pushback_attempt, mine->pushback_attempt);
    }
  }
  if (!op->recorded()) return;
  // The larger count wins: the host may have counted calls this workflow never saw.
  c.attempt = std::max(c.attempt, op->attempts);
  c.repairs = std::max(c.repairs, op->repairs);
  c.repeats = std::max(c.repeats, op->repeats);
  c.cost_spent = std::max(c.cost_spent, op->cost);
  c.elapsed_ms = std::max(c.elapsed_ms, now_ms - op->started_ms);
  c.pushback_attempt = std::max(c.pushback_attempt, op->pushback_attempt);
}

void Workflow::apply(const Policy& policy, Context& c, std::int64_t now_ms) const {
  apply(c, now_ms);
  for (const std::string& tool : detail::compiled(policy).spec.fallback)
    if (tool == c.tool || find(c.operation_id, tool)) mark_unavailable(c, tool);
}

std::optional<OperationState> Workflow::find(std::string_view operation_id,
                                             std::string_view tool) const {
  auto op = count(key(operation_id, tool), {CountEvent::Read}, now_ms_);
  return op && op->recorded() ? op : std::nullopt;
}

std::string Workflow::to_json() const {
  // The local store's keys, split back into operation and tool (all of them carry this scope).
  const json store = json::parse(local_->to_json());
  const std::size_t prefix = scope_.empty() ? 0 : scope_.size() + 1;
  json operations = json::object(), run = json::object();
  for (const auto& [k, counters] : store.at("operations").items()) {
    const std::size_t slash = k.rfind('/');
    const std::string operation = k.substr(prefix, slash - prefix), tool = k.substr(slash + 1);
    if (operation == kRunPart && tool == kAllTools)
      run["all"] = counters;
    else if (operation == kRunPart)
      run["tools"][from_key_part(tool)] = counters;
    else
      operations[from_key_part(operation)][from_key_part(tool)] = counters;
  }
  json out{{"version", kWorkflowStateVersion}, {"operations", operations}};
  if (!run.empty()) out["run"] = run;
  return out.dump();
}

Status Workflow::from_json(std::string_view text) noexcept {
  std::string counters_text;
  try {
    json counters = json::object();
    const json j = json::parse(text);
    if (!j.is_object()) throw std::invalid_argument("not a JSON object");
    const json operations = j.value("operations", json::object());
    if (!operations.is_object()) throw std::invalid_argument("operations is not an object");
    if (!j.contains("version") && !operations.empty())
      throw std::invalid_argument(
          "counters per operation alone, the form before version 2, cannot be restored: "
          "version 2 keeps them per operation and tool, and which tool they counted is not "
          "recorded");
    if (j.contains("version") && j.at("version") != kWorkflowStateVersion)
      throw std::invalid_argument(fmt::format("version {} is not {}, the version this build reads",
                                              j.at("version").dump(), kWorkflowStateVersion));
    for (const auto& [operation, tools] : operations.items()) {
      if (!tools.is_object())
        throw std::invalid_argument("operation " + operation + " is not an object of tools");
      for (const auto& [tool, state] : tools.items()) {
        try {
          detail::operation_from_json(state);  // the record's shape (docs/state.md, "Records")
        } catch (const std::exception& e) {
          throw std::invalid_argument(fmt::format("operation {}, tool {}: {}",
                                                  recourse::quoted(operation),
                                                  recourse::quoted(tool), e.what()));
        }
        counters[key(operation, tool)] = state;
      }
    }
    // The run's counters: {"all": record, "tools": {tool: record}}, each a record's shape.
    const json run = j.value("run", json::object());
    if (!run.is_object()) throw std::invalid_argument("run is not an object");
    for (const auto& [name, value] : run.items()) {
      if (name != "all" && name != "tools")
        throw std::invalid_argument("run has an unknown member " + recourse::quoted(name));
      if (name == "tools" && !value.is_object())
        throw std::invalid_argument("run.tools is not an object of tools");
    }
    const auto run_record = [&](const json& state, const std::string& tool) {
      try {
        detail::operation_from_json(state);
      } catch (const std::exception& e) {
        throw std::invalid_argument(
            fmt::format("run, {}: {}",
                        tool.empty() ? "every tool" : "tool " + recourse::quoted(tool), e.what()));
      }
      counters[run_key(tool)] = state;
    };
    if (run.contains("all")) run_record(run.at("all"), "");
    const json tools = run.value("tools", json::object());
    for (const auto& [tool, state] : tools.items()) {
      if (tool.empty()) throw std::invalid_argument("run.tools names the tool \"\"");
      run_record(state, tool);
    }
    counters_text = json{{"operations", counters}}.dump();
  } catch (const std::exception& e) {
    return Status::failure(error_diagnostic("S004", std::string("workflow state: ") + e.what()));
  } catch (...) {
    return Status::failure(error_diagnostic("S004", "workflow state could not be read"));
  }
  return restore(*local_, counters_text, "workflow state");
}

// ---- Health ---------------------------------------------------------------------------------

Health::Health(std::shared_ptr<Store> store, HealthOptions options)
    : local_(std::make_shared<MemoryStore>()),
      store_(store ? std::move(store) : local_),
      options_(options),
      fallback_milli_(options.fallback_tokens * 1000) {
  if (options_.worker.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    options_.worker = fmt::format("{}:{}:{}", host, getpid(), static_cast<const void*>(this));
  }
}

std::string circuit_key(std::string_view tool, std::string_view endpoint) {
  return endpoint.empty() ? std::string(tool) : std::string(tool) + "@" + std::string(endpoint);
}

Store& Health::breakers(const Policy& policy) const {
  return detail::compiled(policy).spec.breaker.shared ? *store_ : *local_;
}

void Health::record_failure(const Policy& policy, const Context& c, std::int64_t now_ms,
                            const Envelope* envelope) {
  const detail::PolicySpec& spec = detail::compiled(policy).spec;
  now_ms_ = std::max(now_ms_.load(), now_ms);
  // gRFC A6, "Throttling Retry Attempts and Hedged RPCs": "Every failed RPC will decrement the
  // token_count by 1", where "the only RPCs that are counted as failures ... fail with a status
  // code that qualifies as retryable ... or that receive a pushback response indicating not to
  // retry". A store that cannot answer takes nothing: prepare() then
  // reads the fallback bucket.
  if (spec.throttle.enabled &&
      (!envelope || counts_for_throttle(detail::compiled(policy), *envelope)))
    store_->bucket(c.tool, BucketEvent::Retry, bucket_spec(spec.throttle), now_ms);
  const detail::Breaker& b = spec.breaker;
  if (!b.enabled) return;
  // A failure `counts` leaves out is the tool's answer: a success for its circuit.
  const bool failed = counts_for_breaker(detail::compiled(policy), envelope);
  const std::string circuit = circuit_key(c.tool, c.endpoint);
  Store& store = breakers(policy);
  if (&store != local_.get())
    store.outcome(circuit, c.operation_id, failed, breaker_spec(b), now_ms);
  local_->outcome(circuit, c.operation_id, failed, breaker_spec(b), now_ms);
  // A server's wait the policy will not make (budget:retry_after): no call before it ends.
  if (envelope && envelope->retry_after_ms && *envelope->retry_after_ms > spec.retry_after_max_ms) {
    if (&store != local_.get()) store.hold(circuit, *envelope->retry_after_ms, now_ms);
    local_->hold(circuit, *envelope->retry_after_ms, now_ms);
  }
}

CircuitState Health::admit(const Policy& policy, Context& c, std::int64_t now_ms) {
  const detail::PolicySpec& spec = detail::compiled(policy).spec;
  now_ms_ = std::max(now_ms_.load(), now_ms);
  c.circuit = CircuitState::Closed;
  if (!spec.breaker.enabled) return c.circuit;
  const BreakerSpec b = breaker_spec(spec.breaker);
  const std::string key = circuit_key(c.tool, c.endpoint);
  auto circuit = breakers(policy).probe(key, c.operation_id, b, now_ms);
  if (!circuit) {
    c.store_unavailable = true;
    circuit = local_->probe(key, c.operation_id, b, now_ms);
  }
  c.circuit = circuit.value_or(CircuitState::Closed);
  if (spec.breaker.by_quorum) {  // this process's breaker votes; the votes decide
    const bool open = c.circuit != CircuitState::Closed;
    if (auto live = store_->vote(key, options_.worker, open, b.cooldown_ms, now_ms))
      c.circuit = *live < spec.breaker.quorum ? CircuitState::Closed
                  : open                      ? c.circuit
                                              : CircuitState::Open;
    else
      c.store_unavailable = true;  // the process's own breaker decides
  }
  return c.circuit;
}

void Health::prepare(const Policy& policy, Context& c, std::int64_t now_ms) {
  const detail::PolicySpec& spec = detail::compiled(policy).spec;
  c.retry_throttled = false;
  const bool was_unavailable = c.store_unavailable;
  c.store_unavailable = false;
  admit(policy, c, now_ms);
  bool down = c.store_unavailable;
  c.store_unavailable = was_unavailable;
  if (!c.side_effect && !c.operation_id.empty()) {
    if (auto entry = store_->read(c.operation_id, now_ms)) {
      c.side_effect = side_effect_of(entry->state);
    } else {
      down = true;
      c.side_effect = SideEffect::Unknown;  // an unreadable ledger entry reads as unknown
    }
  }
  if (spec.throttle.enabled) {
    const BucketSpec t = bucket_spec(spec.throttle);
    const auto tokens = store_->bucket(c.tool, BucketEvent::Read, t, now_ms);
    down = down || !tokens;
    if (!down && !c.store_unavailable) {
      c.retry_throttled = *tokens * 2 <= t.max_milli;
      fallback_milli_ = options_.fallback_tokens * 1000;  // the store answers: refill
    } else {  // some of the state is unreadable (counters included): only the fallback retries
      c.retry_throttled = !options_.fail_open && fallback_milli_.load() < 1000;
    }
  }
  // A fallback chain passes over a tool whose circuit is open, wherever its breaker is kept.
  for (const std::string& tool : spec.fallback) {
    const auto open = [&](Store& s) {
      const auto h = s.tool(tool, now_ms);
      return h && h->circuit == CircuitState::Open;
    };
    if (open(*local_) || (store_ != local_ && open(*store_))) mark_unavailable(c, tool);
  }
  if (down) c.store_unavailable = true;
  if (c.store_unavailable) ++unavailable_;
}

void Health::record_decision(const Policy& policy, const Context& c, const Decision& d) {
  if (!detail::compiled(policy).spec.throttle.enabled || d.route != Route::Retry) return;
  if (c.store_unavailable)  // prepare() let it through on the fallback bucket
    fallback_milli_ = std::max<std::int64_t>(0, fallback_milli_.load() - 1000);
}

void Health::record_success(const Policy& policy, const Context& c, std::int64_t now_ms) {
  const detail::PolicySpec& spec = detail::compiled(policy).spec;
  now_ms_ = std::max(now_ms_.load(), now_ms);
  if (spec.throttle.enabled)
    store_->bucket(c.tool, BucketEvent::Success, bucket_spec(spec.throttle), now_ms);
  if (!spec.breaker.enabled) return;
  const BreakerSpec b = breaker_spec(spec.breaker);
  const std::string circuit = circuit_key(c.tool, c.endpoint);
  Store& store = breakers(policy);
  if (&store != local_.get()) store.outcome(circuit, c.operation_id, false, b, now_ms);
  local_->outcome(circuit, c.operation_id, false, b, now_ms);
}

std::optional<ToolHealth> Health::control(const Policy& policy, std::string_view tool,
                                          BreakerCommand command, std::int64_t now_ms,
                                          std::int64_t wait_ms, std::string_view endpoint) {
  now_ms_ = std::max(now_ms_.load(), now_ms);
  Store& store = breakers(policy);
  const std::string key = circuit_key(tool, endpoint);
  auto local = local_->control(key, command, wait_ms, now_ms);
  return &store == local_.get() ? local : store.control(key, command, wait_ms, now_ms);
}

ToolHealth Health::get(std::string_view tool, std::string_view endpoint) const {
  ToolHealth h = local_->tool(circuit_key(tool, endpoint), now_ms_).value_or(ToolHealth{});
  if (store_ != local_)
    if (auto shared = store_->tool(tool, now_ms_)) h.milli_tokens = shared->milli_tokens;
  return h;
}

std::string Health::to_json() const {
  return local_->to_json();
}

Status Health::from_json(std::string_view json) noexcept {
  return restore(*local_, json, "health state");
}

}  // namespace recourse
