// The store operations as pure functions on one record; see logic.hpp.
//
// The token bucket follows gRFC A6 ("gRPC Retry Design", retry throttling): tokens start at
// max_tokens, a failure A6 counts takes 1 (retried or not), a success gives token_ratio back
// (capped at max_tokens), and retries are allowed only while tokens > max_tokens / 2. Tokens are
// integer thousandths. The breaker is the classic closed -> open -> half-open machine
// (Nygard, "Release It!"), with the half-open probe held as a lease.
#include "store/logic.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "recourse/diagnostic.hpp"

namespace recourse {

const char* to_string(BreakerCommand command) noexcept {
  static constexpr const char* names[] = {"isolate", "open", "reset"};
  return names[static_cast<std::size_t>(command)];
}

std::string to_json(const ToolHealth& health) {
  return detail::tool_to_json(health);
}

std::optional<BreakerCommand> breaker_command(std::string_view name) noexcept {
  for (auto c : {BreakerCommand::Isolate, BreakerCommand::Open, BreakerCommand::Reset})
    if (name == to_string(c)) return c;
  return std::nullopt;
}

const char* to_string(LedgerState state) noexcept {
  static constexpr const char* names[] = {"absent", "pending", "committed", "released", "unknown"};
  return names[static_cast<std::size_t>(state)];
}

std::optional<SideEffect> side_effect_of(LedgerState state) noexcept {
  switch (state) {
    case LedgerState::Committed:
      return SideEffect::Committed;
    case LedgerState::Released:
      return SideEffect::None;
    case LedgerState::Pending:
    case LedgerState::Unknown:
      return SideEffect::Unknown;
    default:
      return std::nullopt;
  }
}

namespace detail {
namespace {

using json = nlohmann::json;

std::uint64_t window_mask(const BreakerSpec& b) {
  const std::int64_t width = std::min<std::int64_t>(b.window, 64);
  return width < 64 ? (std::uint64_t{1} << width) - 1 : ~std::uint64_t{0};
}

void push(ToolHealth& h, const BreakerSpec& b, bool failed) {
  h.window = ((h.window << 1) | (failed ? 1u : 0u)) & window_mask(b);
  h.window_calls = std::min<std::int64_t>(std::min<std::int64_t>(b.window, 64), h.window_calls + 1);
}

void release_probe(ToolHealth& h) {
  h.probe_taken = false;
  h.probe_operation.clear();
  h.probe_until_ms = 0;
}

constexpr const char* kCircuits[] = {"closed", "open", "half_open"};

// Whether `v` is a whole number in [min, max].
bool whole(const json& v, std::int64_t min, std::int64_t max) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max);
  return v.is_number_integer() && v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max;
}

// A stored ledger entry's state ("pending", "committed", "released"; Absent and Unknown are never
// stored), or nullopt.
std::optional<LedgerState> stored_state(std::string_view name) {
  for (auto s : {LedgerState::Pending, LedgerState::Committed, LedgerState::Released})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Whether `v` holds a `type` in its JSON encoding; what it should be otherwise.
const char* mismatch(const json& v, FieldType type) {
  switch (type) {
    case FieldType::Count:
      return whole(v, 0, kMax) ? nullptr : "a whole number >= 0";
    case FieldType::Time:
      return whole(v, std::numeric_limits<std::int64_t>::min(), kMax) ? nullptr : "a whole number";
    case FieldType::Tokens:
      return whole(v, -1, kMax) ? nullptr : "a whole number >= -1";
    case FieldType::Calls:
      return whole(v, 0, 64) ? nullptr : "a whole number in 0..64";
    case FieldType::Hash:
    case FieldType::Window:
      return v.is_number_unsigned() ? nullptr : "a whole number in 0..2^64-1";
    case FieldType::Flag:
      return v.is_boolean() ? nullptr : "true or false";
    case FieldType::Text:
      return v.is_string() ? nullptr : "a string";
    case FieldType::Circuit:
      return v.is_string() && std::find(std::begin(kCircuits), std::end(kCircuits),
                                        v.get_ref<const std::string&>()) != std::end(kCircuits)
                 ? nullptr
                 : "closed, open or half_open";
    case FieldType::Ledger:
      return v.is_string() && stored_state(v.get_ref<const std::string&>())
                 ? nullptr
                 : "pending, committed or released";
  }
  return "a known type";
}

std::string shown(const json& v) {
  std::string text = v.dump();
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

// The format of `r`: 0 when it has none; BadRecord when it is not one this build reads.
std::int64_t format_of(const json& r) {
  auto it = r.find("format");
  if (it == r.end()) return 0;
  if (!whole(*it, 0, kMax)) throw BadRecord("\"format\" is " + shown(*it) + ", not a number");
  const auto format = it->get<std::int64_t>();
  if (format > kRecordFormat)
    throw BadRecord("format " + std::to_string(format) + " is newer than this build reads (" +
                    std::to_string(kRecordFormat) + ")");
  return format;
}

// `r` checked against the fields of `kind` its format has: every one present and of its type,
// no other. Formats 0 and 1 have the same fields in JSON (format 0's writers wrote every field).
const json& checked(const json& r, RecordKind kind) {
  if (!r.is_object()) throw BadRecord("a record is a JSON object, not " + shown(r));
  const std::int64_t format = std::max<std::int64_t>(format_of(r), 1);
  const auto& fields = record_fields(kind);
  for (const RecordField& f : fields) {
    if (!f.json || f.since > format) continue;
    auto it = r.find(f.json);
    if (it == r.end()) throw BadRecord(recourse::quoted(f.json) + " missing");
    if (const char* expected = mismatch(*it, f.type))
      throw BadRecord(recourse::quoted(f.json) + ": expected " + expected + ", got " + shown(*it));
  }
  for (const auto& item : r.items()) {
    const std::string& name = item.key();  // a plain reference: C++17 lambdas cannot capture
                                           // a structured binding (clang refuses it)
    const bool known = name == "format" || std::any_of(fields.begin(), fields.end(), [&](auto& f) {
                         return f.json && f.since <= format && name == f.json;
                       });
    if (!known) throw BadRecord("unknown field " + recourse::quoted(name));
  }
  return r;
}

}  // namespace

std::int64_t apply_bucket(ToolHealth& h, BucketEvent event, const BucketSpec& spec) {
  const std::int64_t tokens = h.milli_tokens < 0 ? spec.max_milli : h.milli_tokens;
  if (event == BucketEvent::Retry)
    h.milli_tokens = std::max<std::int64_t>(0, tokens - 1000);
  else if (event == BucketEvent::Success && h.milli_tokens >= 0)
    h.milli_tokens = std::min(spec.max_milli, tokens + spec.ratio_milli);
  return h.milli_tokens < 0 ? spec.max_milli : h.milli_tokens;
}

CircuitState apply_outcome(ToolHealth& h, std::string_view operation, bool failed,
                           const BreakerSpec& b, std::int64_t now_ms) {
  if (h.isolated) return h.circuit;  // the operator's until a reset
  if (!failed) {
    h.consecutive_failures = 0;
    push(h, b, false);
    h.circuit = CircuitState::Closed;
    h.hold_until_ms = 0;
    release_probe(h);
    return h.circuit;
  }
  if (h.circuit != CircuitState::Closed) {
    if (h.probe_taken && operation == h.probe_operation) {  // the probe failed
      h.opened_ms = now_ms;
      release_probe(h);
    }
    return h.circuit;
  }
  ++h.consecutive_failures;
  push(h, b, true);
  const auto failures = static_cast<std::int64_t>(__builtin_popcountll(h.window));
  const bool by_ratio = b.ratio_milli > 0 && h.window_calls >= b.min_calls &&
                        failures * 1000 >= b.ratio_milli * h.window_calls;
  if (h.consecutive_failures >= b.failures || by_ratio) {
    h.circuit = CircuitState::Open;
    h.opened_ms = now_ms;
  }
  return h.circuit;
}

CircuitState apply_probe(ToolHealth& h, std::string_view operation, const BreakerSpec& b,
                         std::int64_t now_ms) {
  if (h.circuit == CircuitState::Closed) return CircuitState::Closed;
  if (h.isolated) return CircuitState::Open;
  const bool live = h.probe_taken && now_ms < h.probe_until_ms;
  if (live && h.probe_operation == operation) return CircuitState::HalfOpen;  // asks again
  if (!live && now_ms - h.opened_ms >= b.cooldown_ms && now_ms >= h.hold_until_ms) {
    h.probe_taken = true;  // this caller's next call is the half-open probe
    h.probe_operation = std::string(operation);
    h.probe_until_ms = now_ms + b.probe_lease_ms;
    return CircuitState::HalfOpen;
  }
  return CircuitState::Open;
}

CircuitState apply_hold(ToolHealth& h, std::int64_t wait_ms, std::int64_t now_ms) {
  if (h.circuit == CircuitState::Closed) {
    h.circuit = CircuitState::Open;
    h.opened_ms = now_ms;
  }
  h.hold_until_ms =
      std::max(h.hold_until_ms, now_ms + std::clamp<std::int64_t>(wait_ms, 0, kMaxHoldMs));
  return h.circuit;
}

void apply_control(ToolHealth& h, BreakerCommand command, std::int64_t wait_ms,
                   std::int64_t now_ms) {
  switch (command) {
    case BreakerCommand::Isolate:
      h.isolated = true;
      if (h.circuit == CircuitState::Closed) h.opened_ms = now_ms;
      h.circuit = CircuitState::Open;
      release_probe(h);
      return;
    case BreakerCommand::Open:
      h.isolated = false;
      h.circuit = CircuitState::Open;
      h.opened_ms = now_ms;
      h.hold_until_ms = now_ms + std::clamp<std::int64_t>(wait_ms, 0, kMaxHoldMs);
      release_probe(h);
      return;
    case BreakerCommand::Reset: {
      const std::int64_t tokens = h.milli_tokens;
      h = ToolHealth{};
      h.milli_tokens = tokens;
      return;
    }
  }
}

std::int64_t apply_vote(std::map<std::string, std::int64_t>& votes, std::string_view worker,
                        bool open, std::int64_t vote_ms, std::int64_t now_ms) {
  if (open)
    votes[std::string(worker)] = now_ms + vote_ms;
  else
    votes.erase(std::string(worker));
  for (auto it = votes.begin(); it != votes.end();)
    it = it->second > now_ms ? std::next(it) : votes.erase(it);
  return static_cast<std::int64_t>(votes.size());
}

void apply_count(OperationState& op, const CountEvent& e, std::int64_t now_ms) {
  switch (e.kind) {
    case CountEvent::Attempt:
      if (!op.recorded()) op.started_ms = now_ms;
      ++op.attempts;
      if (op.repair_pending) ++op.repairs;
      op.repair_pending = false;
      op.cost += e.cost;
      break;
    case CountEvent::Failure:
      op.repeats = op.repeats > 0 && op.last_failure == e.failure ? op.repeats + 1 : 1;
      op.last_failure = e.failure;
      break;
    case CountEvent::Decision:
      if (op.recorded()) op.repair_pending = e.repair;
      if (op.recorded() && e.pushback > 0) op.pushback_attempt = e.pushback;
      break;
    case CountEvent::Success:
      op = OperationState{};
      break;
    default:
      break;
  }
}

bool apply_claim(LedgerEntry& e, std::string_view key, std::int64_t lease_ms, std::int64_t now_ms) {
  if (e.state != LedgerState::Absent && e.state != LedgerState::Released) return false;
  if (e.idempotency_key.empty()) e.idempotency_key = std::string(key);
  e.state = LedgerState::Pending;
  e.updated_ms = now_ms;
  e.lease_until_ms = now_ms + lease_ms;
  return true;
}

bool apply_transition(LedgerEntry& e, LedgerState to, std::int64_t now_ms) {
  const bool open = e.state == LedgerState::Pending || e.state == LedgerState::Unknown;
  if (!open || (to != LedgerState::Committed && to != LedgerState::Released)) return false;
  e.state = to;
  e.updated_ms = now_ms;
  e.lease_until_ms = 0;
  return true;
}

LedgerEntry view(LedgerEntry e, std::int64_t now_ms) {
  if (e.state == LedgerState::Pending && now_ms >= e.lease_until_ms) e.state = LedgerState::Unknown;
  return e;
}

const char* to_string(FieldType type) noexcept {
  static constexpr const char* names[] = {"count", "time", "tokens",  "calls",  "hash",
                                          "flag",  "text", "circuit", "window", "ledger"};
  return names[static_cast<std::size_t>(type)];
}

const std::vector<RecordField>& record_fields(RecordKind kind) {
  using T = FieldType;
  static const std::vector<RecordField> tool = {
      {"circuit", "circuit", T::Circuit},      {"consecutiveFailures", "consecutive", T::Count},
      {"window", "window", T::Window},         {"windowCalls", "calls", T::Calls},
      {"openedMs", "opened", T::Time},         {"probeTaken", nullptr, T::Flag},
      {"probeOperation", "probe_op", T::Text}, {"probeUntilMs", "probe_until", T::Time},
      {"milliTokens", "milli", T::Tokens},     {"holdUntilMs", "hold_until", T::Time, 2},
      {"isolated", "isolated", T::Flag, 3}};
  static const std::vector<RecordField> operation = {
      {"attempts", "attempts", T::Count},    {"repairs", "repairs", T::Count},
      {"repeats", "repeats", T::Count},      {"cost", "cost", T::Count},
      {"startedMs", "started", T::Time},     {"lastFailure", "last", T::Hash},
      {"repairPending", "pending", T::Flag}, {"pushbackAttempt", "pushback", T::Count, 2}};
  static const std::vector<RecordField> ledger = {{"state", "state", T::Ledger},
                                                  {"idempotencyKey", "key", T::Text},
                                                  {"updatedMs", "updated", T::Time},
                                                  {"leaseUntilMs", "lease", T::Time}};
  return kind == RecordKind::Tool ? tool : kind == RecordKind::Operation ? operation : ledger;
}

json parse_record(std::string_view text, int max_depth) {
  std::vector<std::set<std::string>> keys;  // of each object open at this point
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::array_start) throw BadRecord("an array where a record has none");
    if (event == E::object_start && depth >= max_depth)
      throw BadRecord("objects nested deeper than " + std::to_string(max_depth));
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end) keys.pop_back();
    if (event == E::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw BadRecord(recourse::quoted(parsed.get<std::string>()) + " twice");
    return true;
  };
  json r;
  try {
    r = json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    throw BadRecord(std::string("not JSON: ") + e.what());
  }
  if (!r.is_object()) throw BadRecord("a record is a JSON object, not " + shown(r));
  return r;
}

std::string tool_to_json(const ToolHealth& h) {
  return json{{"format", kRecordFormat},
              {"circuit", kCircuits[static_cast<int>(h.circuit)]},
              {"consecutiveFailures", h.consecutive_failures},
              {"window", h.window},
              {"windowCalls", h.window_calls},
              {"openedMs", h.opened_ms},
              {"probeTaken", h.probe_taken},
              {"probeOperation", h.probe_operation},
              {"probeUntilMs", h.probe_until_ms},
              {"milliTokens", h.milli_tokens},
              {"holdUntilMs", h.hold_until_ms},
              {"isolated", h.isolated}}
      .dump();
}

ToolHealth tool_from_json(const json& record) {
  const json& t = checked(record, RecordKind::Tool);
  ToolHealth h;
  const auto& circuit = t["circuit"].get_ref<const std::string&>();
  h.circuit = static_cast<CircuitState>(
      std::find(std::begin(kCircuits), std::end(kCircuits), circuit) - std::begin(kCircuits));
  h.consecutive_failures = t["consecutiveFailures"];
  h.window = t["window"];
  h.window_calls = t["windowCalls"];
  h.opened_ms = t["openedMs"];
  h.probe_taken = t["probeTaken"];
  h.probe_operation = t["probeOperation"];
  h.probe_until_ms = t["probeUntilMs"];
  h.milli_tokens = t["milliTokens"];
  h.hold_until_ms = t.value("holdUntilMs", std::int64_t{0});  // format 2
  h.isolated = t.value("isolated", false);                    // format 3
  return h;
}

std::string votes_to_json(const std::map<std::string, std::int64_t>& votes) {
  return json{{"format", kRecordFormat}, {"votes", votes}}.dump();
}

std::map<std::string, std::int64_t> votes_from_json(const json& record) {
  const bool format0 = format_of(record) == 0;
  if (!format0 && (record.size() != 2 || !record.contains("votes")))
    throw BadRecord("a votes record is {\"format\", \"votes\"}");
  const json& votes = format0 ? record : record["votes"];
  if (!votes.is_object()) throw BadRecord("\"votes\" is not an object");
  std::map<std::string, std::int64_t> out;
  for (const auto& [worker, until] : votes.items()) {
    if (const char* expected = mismatch(until, FieldType::Time))
      throw BadRecord("the vote of " + recourse::quoted(worker) + ": expected " + expected);
    out[worker] = until;
  }
  return out;
}

std::string operation_to_json(const OperationState& op) {
  return json{{"format", kRecordFormat},
              {"attempts", op.attempts},
              {"repairs", op.repairs},
              {"repeats", op.repeats},
              {"cost", op.cost},
              {"startedMs", op.started_ms},
              {"lastFailure", op.last_failure},
              {"repairPending", op.repair_pending},
              {"pushbackAttempt", op.pushback_attempt}}
      .dump();
}

OperationState operation_from_json(const json& record) {
  const json& o = checked(record, RecordKind::Operation);
  OperationState op;
  op.attempts = o["attempts"];
  op.repairs = o["repairs"];
  op.repeats = o["repeats"];
  op.cost = o["cost"];
  op.started_ms = o["startedMs"];
  op.last_failure = o["lastFailure"];
  op.repair_pending = o["repairPending"];
  op.pushback_attempt = o.value("pushbackAttempt", std::int64_t{0});  // format 2 on
  return op;
}

LedgerEntry ledger_from_json(const json& record) {
  const json& r = checked(record, RecordKind::Ledger);
  LedgerEntry e;
  e.state = ledger_state(r["state"].get_ref<const std::string&>());
  e.idempotency_key = r["idempotencyKey"];
  e.updated_ms = r["updatedMs"];
  e.lease_until_ms = r["leaseUntilMs"];
  return e;
}

LedgerState ledger_state(std::string_view name) {
  if (auto state = stored_state(name)) return *state;
  throw BadRecord("unknown ledger state " + recourse::quoted(name));
}

}  // namespace detail
}  // namespace recourse
