// The settings table (settings.hpp). A row's `show` prints the PolicySpec's value the way the
// dump always has: the policy hash is taken of that text, so a change here changes every hash.
#include "model/settings.hpp"

#include <fmt/format.h>

#include <cmath>

#include "recourse/diagnostic.hpp"

namespace recourse::detail {

namespace {

std::string ms(std::int64_t v) {
  return v == kUnlimited ? std::string("none") : std::to_string(v) + "ms";
}
std::string count(std::int64_t v) {
  return v == kUnlimited ? std::string("none") : std::to_string(v);
}
// A limit printed only when set ("" otherwise: the dump leaves the setting out).
std::string set_count(std::int64_t v) {
  return v == kUnlimited ? std::string() : std::to_string(v);
}
std::string flag(bool b) {
  return b ? "true" : "false";
}
std::string real(double v) {
  return fmt::format("{}", v);
}

constexpr std::optional<double> kNone = std::nullopt;
constexpr double kCounts = 1e9;  // the largest count a setting takes (fields.hpp's kMaxCount)
constexpr std::string_view kFallbackRoutes =
    "`stop`, `escalate`, `degrade`, `authorize` or `replace`";

using K = ValueKind;

}  // namespace

std::string action_text(const Action& a) {
  std::string s(name_of(a.route));
  if (!a.target.empty()) s += " " + recourse::quoted(a.target);
  if (!a.reason.empty()) s += " " + recourse::quoted(a.reason);
  // A guard's action carries its rule's cap for the budgets left; only a call shows it.
  if (a.route != Route::Retry && a.route != Route::Repair) return s;
  if (!a.schedule.empty() || a.attempts != kUnlimited) s += " with";
  if (!a.schedule.empty()) s += " backoff " + a.schedule;
  if (a.attempts != kUnlimited) s += " attempts " + std::to_string(a.attempts);
  return s;
}

const std::vector<SettingDef>& setting_table() {
  static const std::vector<SettingDef> table = {
      // tool
      {"tool", "idempotent", K::Flag, kNone, kNone, false, false, false, "", "`false`",
       "the tool's default for the `idempotent` attribute (the context may override it per call)",
       [](const PolicySpec& s) { return flag(s.idempotent); }},
      {"tool", "idempotency_keys", K::Flag, kNone, kNone, false, false, false, "", "`false`",
       "the tool honours idempotency keys: a retry says `reuse`, a repair says `new`; a pinned key "
       "exempts retries from the unknown-outcome gate (section 8)",
       [](const PolicySpec& s) { return flag(s.honours_keys); }},
      {"tool", "cost", K::Count, 0, kCounts, false, false, false, "", "`1`",
       "units each call charges against `limits.cost`",
       [](const PolicySpec& s) { return std::to_string(s.cost); }},
      {"tool", "arguments", K::Names, kNone, kNone, false, false, false, "", "`[]`",
       "the tool's argument names, for `field in arguments` (the context's `arguments` win)",
       [](const PolicySpec& s) {
         std::string args;
         for (const auto& a : s.arguments) args += (args.empty() ? "" : ",") + recourse::quoted(a);
         return "[" + args + "]";
       }},
      {"tool", "verify", K::Tool, kNone, kNone, false, false, false, "", "none",
       "the tool that checks an unknown outcome: the unknown-outcome gate replaces with it "
       "(without it the gate escalates)",
       [](const PolicySpec& s) { return recourse::quoted(s.verify); }},
      // One tool prints as it always has, so only a chain changes a policy's dump and hash.
      {"tool", "fallback", K::Tools, kNone, kNone, false, false, false, "", "none",
       "the tools to use, in order, when budgets run out or the circuit is open: the default of "
       "`on_exhausted` and `on_open` becomes `replace` with the first this operation has not "
       "tried and whose circuit is not open (section 10)",
       [](const PolicySpec& s) {
         if (s.fallback.size() <= 1)
           return recourse::quoted(s.fallback.empty() ? std::string() : s.fallback[0]);
         std::string tools;
         for (const auto& t : s.fallback) tools += (tools.empty() ? "" : ",") + recourse::quoted(t);
         return "[" + tools + "]";
       }},
      // limits
      {"limits", "attempts", K::Count, 1, kNone, false, false, true, "", "`3`",
       "calls in all, the first included (the high end is the engine's ceiling)",
       [](const PolicySpec& s) { return std::to_string(s.attempts); }},
      {"limits", "repairs", K::Count, 0, kNone, false, false, true, "", "`1`",
       "repaired calls allowed", [](const PolicySpec& s) { return std::to_string(s.repairs); }},
      {"limits", "retry_after_max", K::Duration, 0, kNone, true, false, false, "", "`60s`",
       "the longest server `Retry-After` a retry will wait",
       [](const PolicySpec& s) { return ms(s.retry_after_max_ms); }},
      {"limits", "deadline", K::Duration, 0, kNone, true, false, false, "", "none",
       "time for the whole operation, waits included",
       [](const PolicySpec& s) { return ms(s.deadline_ms); }},
      {"limits", "min_delay", K::Duration, 0, kNone, false, false, false, "", "`50ms`",
       "floor of every retry delay", [](const PolicySpec& s) { return ms(s.min_delay_ms); }},
      {"limits", "cost", K::Count, 1, kCounts, false, false, false, "", "none",
       "cost units the operation may spend; the `budget:cost` guard exists only when set",
       [](const PolicySpec& s) { return count(s.cost_max); }},
      {"limits", "repeats", K::Count, 1, kNone, false, false, true, "", "none",
       "consecutive identical failures allowed; the `budget:repeats` guard exists only when set",
       [](const PolicySpec& s) { return count(s.repeats); }},
      {"limits", "try_timeout", K::Duration, 0, kNone, true, false, false, "", "none",
       "per-try timeout; the decision's `timeoutMs` (section 14)",
       [](const PolicySpec& s) { return ms(s.try_timeout_ms); }},
      // The run budgets print only when set, so the dumps and hashes of policies without them
      // stay as they were.
      {"limits", "run_calls", K::Count, 1, kCounts, false, false, false, "", "none",
       "calls the run (every operation of the workflow, every tool) may make; the "
       "`budget:run_calls` guard exists only when this or `run_tool_calls` is set",
       [](const PolicySpec& s) { return set_count(s.run_calls); }},
      {"limits", "run_cost", K::Count, 1, kCounts, false, false, false, "", "none",
       "cost units the run may spend, every tool; the `budget:run_cost` guard exists only when "
       "this or `run_tool_cost` is set",
       [](const PolicySpec& s) { return set_count(s.run_cost); }},
      {"limits", "run_failures", K::Count, 1, kCounts, false, false, false, "", "none",
       "failed calls the run may have, every tool; the `budget:run_failures` guard exists only "
       "when this or `run_tool_failures` is set",
       [](const PolicySpec& s) { return set_count(s.run_failures); }},
      {"limits", "run_tool_calls", K::Count, 1, kCounts, false, false, false, "", "none",
       "calls of this tool the run may make",
       [](const PolicySpec& s) { return set_count(s.run_tool_calls); }},
      {"limits", "run_tool_cost", K::Count, 1, kCounts, false, false, false, "", "none",
       "cost units this tool may spend in the run",
       [](const PolicySpec& s) { return set_count(s.run_tool_cost); }},
      {"limits", "run_tool_failures", K::Count, 1, kCounts, false, false, false, "", "none",
       "failed calls of this tool the run may have",
       [](const PolicySpec& s) { return set_count(s.run_tool_failures); }},
      {"limits", "on_exhausted", K::Word, kNone, kNone, false, false, false, kFallbackRoutes,
       "`replace` the tool's `fallback`, else `stop`", "the route when a budget guard fires",
       [](const PolicySpec& s) { return action_text(s.on_exhausted); }},
      {"limits", "on_open", K::Word, kNone, kNone, false, false, false, kFallbackRoutes,
       "`replace` the tool's `fallback`, else `stop`", "the route while the circuit is open",
       [](const PolicySpec& s) { return action_text(s.on_open); }},
      // backoff (after its kind, which the dump prints first)
      {"backoff", "base", K::Duration, 0, kNone, true, false, false, "", "`250ms`",
       "the first delay", [](const PolicySpec& s) { return ms(s.backoff.base_ms); }},
      {"backoff", "factor", K::Number, 1, 100, false, false, false, "", "`2`",
       "growth per attempt, `exponential` only",
       [](const PolicySpec& s) { return real(s.backoff.factor); }},
      {"backoff", "max", K::Duration, 0, kNone, true, false, false, "",
       "the larger of `20s` and `base`", "the longest delay; at least `base`",
       [](const PolicySpec& s) { return ms(s.backoff.max_ms); }},
      {"backoff", "jitter", K::Word, kNone, kNone, false, false, false,
       "`none`, `full`, `equal` or `decorrelated`", "`full`", "the random part (section 12)",
       [](const PolicySpec& s) { return std::string(name_of(s.backoff.jitter)); }},
      // Printed only when set, so the dumps and hashes of policies without it stay as they were.
      {"backoff", "hint_jitter", K::Number, 0, 1, false, false, false, "", "`0`",
       "after a server hint, wait up to this share of the hint more (section 12)",
       [](const PolicySpec& s) {
         return s.backoff.hint_jitter == 0 ? std::string() : real(s.backoff.hint_jitter);
       }},
      // breaker
      {"breaker", "failures", K::Count, 1, 10000, false, false, false, "", "`5`",
       "open after this many consecutive failures",
       [](const PolicySpec& s) { return std::to_string(s.breaker.failures); }},
      {"breaker", "ratio", K::Number, 0, 1, true, false, false, "", "off",
       "open when at least `min_calls` of the last `window` calls ended and this share of them "
       "failed",
       [](const PolicySpec& s) { return real(s.breaker.ratio); }},
      // The window is a 64-bit history (one bit per call): it holds at most 64 calls.
      {"breaker", "window", K::Count, 1, 64, false, false, false, "", "`20`",
       "calls the ratio looks at",
       [](const PolicySpec& s) { return std::to_string(s.breaker.window); }},
      {"breaker", "min_calls", K::Count, 1, 64, false, false, false, "", "`10`",
       "calls needed before the ratio counts; must not exceed `window` (E036)",
       [](const PolicySpec& s) { return std::to_string(s.breaker.min_calls); }},
      {"breaker", "cooldown", K::Duration, 0, kNone, true, false, false, "", "`30s`",
       "how long the circuit stays open before one half-open probe",
       [](const PolicySpec& s) { return ms(s.breaker.cooldown_ms); }},
      {"breaker", "probe_lease", K::Duration, 0, kNone, true, false, false, "", "the `cooldown`",
       "how long the half-open probe may take: a probe whose outcome is not recorded by then is "
       "lost, and the next caller probes instead",
       [](const PolicySpec& s) { return ms(s.breaker.probe_lease_ms); }},
      {"breaker", "counts", K::Codes, kNone, kNone, false, false, false, "",
       "`[TRANSIENT, RATE_LIMITED, TIMEOUT, PENDING]`",
       "the codes whose failures count; a failure of another code is recorded as a success (the "
       "tool answered); a failure without an envelope always counts",
       [](const PolicySpec& s) {
         std::string codes;
         for (const std::int64_t id : s.breaker.counts)
           codes += (codes.empty() ? "" : ",") + s.codes[static_cast<std::size_t>(id)];
         return "[" + codes + "]";
       }},
      {"breaker", "scope", K::Word, kNone, kNone, false, false, false,
       "`local`, `shared` or `quorum`", "`local`",
       "where the breaker lives: in each process; in the shared state store, so one probe serves "
       "the whole fleet; or in each process, open only while `quorum` processes see their own "
       "open ([docs/state.md](state.md))"},
      {"breaker", "quorum", K::Count, 1, 10000, false, false, false, "", "`2`",
       "with `scope = quorum`: processes that must see the circuit open"},
      // throttle (gRFC A6 bounds: maxTokens in (0, 1000], tokenRatio > 0)
      {"throttle", "max_tokens", K::Number, 0, 1000, true, false, false, "", "`10`",
       "tokens at the start and at most; retries stop at or below half",
       [](const PolicySpec& s) { return real(s.throttle.max_tokens); }},
      {"throttle", "token_ratio", K::Number, 0, 1000, true, false, false, "", "`0.1`",
       "tokens each success gives back",
       [](const PolicySpec& s) { return real(s.throttle.token_ratio); }},
  };
  return table;
}

std::vector<const SettingDef*> settings_of(std::string_view block) {
  std::vector<const SettingDef*> out;
  for (const SettingDef& def : setting_table())
    if (def.block == block) out.push_back(&def);
  return out;
}

const SettingDef* setting(std::string_view block, std::string_view key) {
  for (const SettingDef& def : setting_table())
    if (def.block == block && def.key == key) return &def;
  return nullptr;
}

namespace {

// 1000000000 as 1e9; smaller numbers as written.
std::string number_text(double v) {
  if (v >= 1e6 && std::log10(v) == std::floor(std::log10(v)))
    return fmt::format("1e{}", static_cast<int>(std::log10(v)));
  return fmt::format("{}", v);
}

}  // namespace

std::string range_text(const SettingDef& def, std::int64_t ceiling) {
  const std::optional<double> high =
      def.ceiling ? std::optional<double>(static_cast<double>(ceiling)) : def.high;
  if (!def.low) return "";
  if (!high) return (def.low_open ? "> " : ">= ") + number_text(*def.low);
  if (def.kind == ValueKind::Count) return number_text(*def.low) + " .. " + number_text(*high);
  return (def.low_open ? "(" : "[") + number_text(*def.low) + ", " + number_text(*high) +
         (def.high_open ? ")" : "]");
}

bool in_range(const SettingDef& def, double value, std::int64_t ceiling) {
  const std::optional<double> high =
      def.ceiling ? std::optional<double>(static_cast<double>(ceiling)) : def.high;
  if (def.low && (def.low_open ? !(value > *def.low) : !(value >= *def.low))) return false;
  if (high && (def.high_open ? !(value < *high) : !(value <= *high))) return false;
  return true;
}

}  // namespace recourse::detail
