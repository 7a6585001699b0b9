// Check stage, settings blocks: `tool`, `limits`, `breaker`, `throttle`, `backoff` and `hit`
// into the PolicySpec's settings, each value typed and range-checked (docs/language.md
// sections 5-9). Part of the Checker (checker.hpp).
#include <map>
#include <set>

#include "check/checker.hpp"

namespace recourse::detail {

void Checker::tool_block(const ast::Policy& p, PolicySpec& spec) {
  settings(p.tool, {"idempotent", "arguments", "idempotency_keys", "cost", "verify", "fallback"},
           "tool", [&](const ast::Setting& s) {
             if (s.key == "arguments") {  // the one list: `arguments = []` has no values[0]
               for (const auto& a : s.values) {
                 if (a.kind == Kind::Number)
                   error("E019", a.pos, "argument names are names or strings");
                 else
                   spec.arguments.push_back(a.text);
               }
               return;
             }
             const ast::Value& v = s.values[0];  // settings() let only single values through
             if (s.key == "cost") {
               auto n = count(v);
               if (n && (*n < 0 || *n > kMaxCount))
                 error("E019", v.pos, "cost must be in [0, " + std::to_string(kMaxCount) + "]");
               else if (n)
                 spec.cost = *n;
             } else if (s.key == "verify" || s.key == "fallback") {
               if (v.kind != Kind::String || v.text.empty())
                 error("E019", v.pos, s.key + " names a tool as a \"string\"");
               else
                 (s.key == "verify" ? spec.verify : spec.fallback) = v.text;
             } else {
               auto b = boolean(v);
               if (b) (s.key == "idempotent" ? spec.idempotent : spec.honours_keys) = *b;
             }
           });
}

void Checker::fallback_route(const ast::Setting& s, const PolicySpec& spec, Action& out) {
  constexpr std::array<std::string_view, 5> allowed = {"stop", "escalate", "degrade", "authorize",
                                                       "replace"};
  const ast::Value& v = s.values[0];
  if (v.kind != Kind::Ident || std::find(allowed.begin(), allowed.end(), v.text) == allowed.end()) {
    error("E019", v.pos,
          s.key + " must be stop, escalate, degrade, authorize or replace, not '" + v.text + "'",
          "a spent budget or an open circuit must not lead to another retry or repair");
    return;
  }
  out.route = *enum_of<Route>(v.text);
  out.target.clear();
  if (out.route == Route::Replace) {
    if (spec.fallback.empty())
      error("E019", v.pos, s.key + " = replace needs the tool's fallback",
            "declare it: tool { fallback = \"other.tool\" }");
    out.target = spec.fallback;
  }
}

void Checker::limits_block(const ast::Policy& p, PolicySpec& spec) {
  // Without on_exhausted / on_open: the tool's fallback when it declares one, else stop.
  if (!spec.fallback.empty())
    spec.on_exhausted = spec.on_open = Action{Route::Replace, spec.fallback, ""};
  settings(
      p.limits,
      {"attempts", "repairs", "retry_after_max", "deadline", "min_delay", "on_exhausted", "on_open",
       "cost", "repeats", "try_timeout"},
      "limits", [&](const ast::Setting& s) {
        const ast::Value& v = s.values[0];
        const std::string ceiling = std::to_string(options_.attempt_ceiling);
        if (s.key == "attempts") {
          auto n = count(v);
          if (n && (*n < 1 || *n > options_.attempt_ceiling))
            error("E019", v.pos, "attempts = " + v.text + " is outside [1, " + ceiling + "]",
                  "attempts counts every call, the first included; the engine's ceiling is " +
                      ceiling);
          else if (n)
            spec.attempts = *n;
        } else if (s.key == "repairs" || s.key == "repeats") {
          auto n = count(v);
          const std::int64_t low = s.key == "repeats" ? 1 : 0;
          if (n && (*n < low || *n > options_.attempt_ceiling))
            error("E019", v.pos,
                  s.key + " = " + v.text + " is outside [" + std::to_string(low) + ", " + ceiling +
                      "]");
          else if (n)
            (s.key == "repairs" ? spec.repairs : spec.repeats) = *n;
        } else if (s.key == "cost") {
          auto n = count(v);
          if (n && (*n < 1 || *n > kMaxCount))
            error("E019", v.pos, "cost must be in [1, " + std::to_string(kMaxCount) + "]");
          else if (n)
            spec.cost_max = *n;
        } else if (s.key == "on_exhausted" || s.key == "on_open") {
          fallback_route(s, spec, s.key == "on_open" ? spec.on_open : spec.on_exhausted);
        } else {
          auto ms = duration(v);
          if (!ms) return;
          if (*ms < 0 || (*ms == 0 && s.key != "min_delay")) {
            error("E019", v.pos,
                  s.key + (s.key == "min_delay" ? " must not be negative" : " must be positive"));
            return;
          }
          (s.key == "retry_after_max" ? spec.retry_after_max_ms
           : s.key == "deadline"      ? spec.deadline_ms
           : s.key == "try_timeout"   ? spec.try_timeout_ms
                                      : spec.min_delay_ms) = *ms;
        }
      });
}

void Checker::breaker_block(const ast::Policy& p, PolicySpec& spec) {
  if (!p.has_breaker) return;
  Breaker& b = spec.breaker;
  b.enabled = true;
  const std::vector<std::string_view> keys = {"failures", "ratio", "window", "min_calls",
                                              "cooldown", "scope", "quorum"};
  settings(p.breaker, keys, "breaker", [&](const ast::Setting& s) {
    const ast::Value& v = s.values[0];
    if (s.key == "scope") {
      if (v.kind == Kind::Ident &&
          (v.text == "local" || v.text == "shared" || v.text == "quorum")) {
        b.shared = v.text == "shared";
        b.by_quorum = v.text == "quorum";
      } else {
        error("E019", v.pos,
              "scope must be local, shared or quorum, got '" + v.text + v.unit + "'");
      }
    } else if (s.key == "cooldown") {
      auto ms = duration(v);
      if (ms && *ms <= 0)
        error("E019", v.pos, "cooldown must be positive");
      else if (ms)
        b.cooldown_ms = *ms;
    } else if (s.key == "ratio") {
      auto r = real(v);
      if (r && !(*r > 0 && *r <= 1))
        error("E019", v.pos, "ratio must be in (0, 1], got " + v.text);
      else if (r)
        b.ratio = *r;
    } else {
      auto n = count(v);
      // The window is a 64-bit history (one bit per call): it holds at most 64 calls.
      const std::int64_t most = s.key == "failures" || s.key == "quorum" ? 10000 : 64;
      if (n && (*n < 1 || *n > most))
        error("E019", v.pos, s.key + " must be in [1, " + std::to_string(most) + "]");
      else if (n)
        (s.key == "failures" ? b.failures
         : s.key == "quorum" ? b.quorum
         : s.key == "window" ? b.window
                             : b.min_calls) = *n;
    }
  });
  for (const ast::Setting& s : p.breaker)
    if (s.key == "quorum" && !b.by_quorum) error("E019", s.pos, "quorum needs scope = quorum");
  if (b.min_calls > b.window)
    error("E019", p.breaker.empty() ? p.pos : p.breaker.front().pos,
          "breaker min_calls (" + std::to_string(b.min_calls) + ") exceeds its window (" +
              std::to_string(b.window) + ")");
}

void Checker::throttle_block(const ast::Policy& p, PolicySpec& spec) {
  if (!p.has_throttle) return;
  Throttle& t = spec.throttle;
  t.enabled = true;
  settings(p.throttle, {"max_tokens", "token_ratio"}, "throttle", [&](const ast::Setting& s) {
    auto r = real(s.values[0]);
    if (!r) return;
    // gRFC A6 bounds: maxTokens in (0, 1000], tokenRatio > 0.
    if (s.key == "max_tokens" && !(*r > 0 && *r <= 1000))
      error("E019", s.values[0].pos, "max_tokens must be in (0, 1000], got " + s.values[0].text);
    else if (s.key == "token_ratio" && !(*r > 0 && *r <= 1000))
      error("E019", s.values[0].pos, "token_ratio must be in (0, 1000], got " + s.values[0].text);
    else
      (s.key == "max_tokens" ? t.max_tokens : t.token_ratio) = *r;
  });
}

void Checker::backoff(const ast::Policy& p, PolicySpec& spec) {
  if (p.backoff.empty()) return;
  for (std::size_t i = 1; i < p.backoff.size(); ++i)
    error("E021", p.backoff[i].pos, "a policy has one backoff line");
  const ast::Backoff& b = p.backoff[0];
  const auto& kinds = Names<BackoffKind>::kValues;
  auto k = std::find(kinds.begin(), kinds.end(), b.kind);
  if (k == kinds.end()) {
    error("E018", b.kind_pos, "unknown backoff '" + b.kind + "'", did_you_mean(b.kind, kinds));
    return;
  }
  Backoff& out = spec.backoff;
  out.kind = static_cast<BackoffKind>(k - kinds.begin());
  if (out.kind != BackoffKind::Exponential) out.factor = 1.0;
  bool max_given = false;
  settings(b.params, {"base", "factor", "max", "jitter"}, "backoff", [&](const ast::Setting& s) {
    const ast::Value& v = s.values[0];
    if (s.key == "jitter") {
      const auto& jitters = Names<Jitter>::kValues;
      auto j = std::find(jitters.begin(), jitters.end(), v.text);
      if (v.kind != Kind::Ident || j == jitters.end())
        error("E019", v.pos, "jitter is none, full, equal or decorrelated, not '" + v.text + "'",
              did_you_mean(v.text, jitters));
      else
        out.jitter = static_cast<Jitter>(j - jitters.begin());
    } else if (s.key == "factor") {
      if (out.kind != BackoffKind::Exponential) {
        error("E019", s.pos, "factor applies to exponential backoff only",
              "constant waits base each time; linear waits base * n");
        return;
      }
      auto f = real(v);
      if (f && (!(*f >= 1.0) || *f > 100.0))
        error("E019", v.pos, "factor must be in [1, 100], got " + v.text);
      else if (f)
        out.factor = *f;
    } else {
      auto ms = duration(v);
      if (ms && *ms <= 0)
        error("E019", v.pos, "backoff " + s.key + " must be positive");
      else if (ms)
        (s.key == "base" ? out.base_ms : out.max_ms) = *ms;
      max_given |= s.key == "max";
    }
  });
  if (!max_given) out.max_ms = std::max(out.max_ms, out.base_ms);
  if (out.max_ms < out.base_ms)
    error("E019", b.pos,
          "backoff max (" + std::to_string(out.max_ms) + "ms) is below its base (" +
              std::to_string(out.base_ms) + "ms)");
}

void Checker::hit_policy(const ast::Policy& p, PolicySpec& spec) {
  for (std::size_t i = 1; i < p.hit.size(); ++i)
    error("E021", p.hit[i].pos, "a policy has one hit policy");
  if (p.hit.empty()) return;
  const auto& hits = Names<HitPolicy>::kValues;
  auto it = std::find(hits.begin(), hits.end(), p.hit[0].text);
  if (it == hits.end())
    error("E018", p.hit[0].pos, "unknown hit policy '" + p.hit[0].text + "'",
          did_you_mean(p.hit[0].text, hits));
  else
    spec.hit = static_cast<HitPolicy>(it - hits.begin());
}

}  // namespace recourse::detail
