// Check stage, settings blocks: `tool`, `limits`, `breaker`, `throttle`, `backoff` and `hit`
// into the PolicySpec's settings. The keys and each value's kind and range come from the
// settings table (model/settings.hpp); what ties settings together (a fallback for `replace`,
// `min_calls` within `window`, `factor` for exponential backoff only) is checked here.
// Part of the Checker (checker.hpp).
#include <algorithm>
#include <map>
#include <set>

#include "check/checker.hpp"

namespace recourse::detail {

std::optional<double> Checker::ranged(const SettingDef& def, const ast::Value& v,
                                      std::string help) {
  std::optional<double> value;
  if (def.kind == ValueKind::Count) {
    if (auto n = count(v)) value = static_cast<double>(*n);
  } else if (def.kind == ValueKind::Duration) {
    if (auto ms = duration(v)) value = static_cast<double>(*ms);
  } else if (auto r = real(v)) {
    value = *r;
  }
  if (!value || in_range(def, *value, options_.attempt_ceiling)) return value;
  // "backoff base must be positive": a bare "base" or "max" would not say which.
  const std::string label = def.block == "backoff" && def.kind == ValueKind::Duration
                                ? "backoff " + std::string(def.key)
                                : std::string(def.key);
  const std::int64_t high =
      def.ceiling ? options_.attempt_ceiling : static_cast<std::int64_t>(def.high.value_or(0));
  std::string message;
  if (def.kind == ValueKind::Count)
    message = label + " = " + v.text + " is outside [" +
              std::to_string(static_cast<std::int64_t>(*def.low)) + ", " + std::to_string(high) +
              "]";
  else if (def.kind == ValueKind::Duration)
    message = label + (def.low_open ? " must be positive" : " must not be negative");
  else
    message =
        label + " must be in " + range_text(def, options_.attempt_ceiling) + ", got " + v.text;
  error("E019", v.pos, std::move(message), std::move(help));
  return std::nullopt;
}

void Checker::tool_block(const ast::Policy& p, PolicySpec& spec) {
  settings(p.tool, "tool", [&](const ast::Setting& s) {
    if (s.key == "arguments") {  // the one list: `arguments = []` has no values[0]
      for (const auto& a : s.values) {
        if (a.kind == Kind::Number)
          error("E037", a.pos, "argument names are names or strings");
        else
          spec.arguments.push_back(a.text);
      }
      return;
    }
    if (s.key == "fallback") {  // one tool or a chain of them, each named once
      if (s.values.empty()) error("E037", s.pos, "fallback names at least one tool");
      for (const auto& t : s.values) {
        if (t.kind != Kind::String || t.text.empty())
          error("E037", t.pos, "fallback names a tool as a \"string\"");
        else if (std::find(spec.fallback.begin(), spec.fallback.end(), t.text) !=
                 spec.fallback.end())
          error("E021", t.pos, "fallback names '" + t.text + "' twice");
        else
          spec.fallback.push_back(t.text);
      }
      return;
    }
    const ast::Value& v = s.values[0];  // settings() let only single values through
    if (s.key == "cost") {
      if (auto n = ranged(*setting("tool", s.key), v)) spec.cost = static_cast<std::int64_t>(*n);
    } else if (s.key == "verify") {
      if (v.kind != Kind::String || v.text.empty())
        error("E037", v.pos, s.key + " names a tool as a \"string\"");
      else
        spec.verify = v.text;
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
    error("E035", v.pos,
          s.key + " must be stop, escalate, degrade, authorize or replace, not '" + v.text + "'",
          "a spent budget or an open circuit must not lead to another retry or repair");
    return;
  }
  out = Action{*enum_of<Route>(v.text), "", ""};
  if (s.target) {  // `degrade "cache"`: the degraded answer's source
    if (out.route != Route::Degrade)
      error("E014", s.target->pos, s.key + " = " + v.text + " takes no target",
            out.route == Route::Replace ? "replace goes to the tool's fallback chain"
                                        : "only degrade names a target here");
    else if (s.target->text.empty())
      error("E037", s.target->pos, s.key + " = degrade names its target as a non-empty string");
    else
      out.target = s.target->text;
    return;
  }
  if (out.route != Route::Replace) return;
  if (spec.fallback.empty()) {
    error("E036", v.pos, s.key + " = replace needs the tool's fallback",
          "declare it: tool { fallback = \"other.tool\" }");
    return;
  }
  out.target = spec.fallback[0];  // the chain's first; decide() skips the unavailable
  out.chain = true;
}

void Checker::limits_block(const ast::Policy& p, PolicySpec& spec) {
  // Without on_exhausted / on_open: the tool's fallback when it declares one, else stop.
  if (!spec.fallback.empty()) {
    spec.on_exhausted = spec.on_open = Action{Route::Replace, spec.fallback[0], ""};
    spec.on_exhausted.chain = spec.on_open.chain = true;
  }
  settings(p.limits, "limits", [&](const ast::Setting& s) {
    const ast::Value& v = s.values[0];
    const SettingDef& def = *setting("limits", s.key);
    if (s.key == "on_exhausted" || s.key == "on_open") {
      fallback_route(s, spec, s.key == "on_open" ? spec.on_open : spec.on_exhausted);
      return;
    }
    const std::string help = s.key == "attempts"
                                 ? "attempts counts every call, the first included; the engine's "
                                   "ceiling is " +
                                       std::to_string(options_.attempt_ceiling)
                                 : "";
    const auto value = ranged(def, v, help);
    if (!value) return;
    const auto n = static_cast<std::int64_t>(*value);
    (s.key == "attempts"            ? spec.attempts
     : s.key == "repairs"           ? spec.repairs
     : s.key == "repeats"           ? spec.repeats
     : s.key == "cost"              ? spec.cost_max
     : s.key == "retry_after_max"   ? spec.retry_after_max_ms
     : s.key == "deadline"          ? spec.deadline_ms
     : s.key == "try_timeout"       ? spec.try_timeout_ms
     : s.key == "run_calls"         ? spec.run_calls
     : s.key == "run_cost"          ? spec.run_cost
     : s.key == "run_failures"      ? spec.run_failures
     : s.key == "run_tool_calls"    ? spec.run_tool_calls
     : s.key == "run_tool_cost"     ? spec.run_tool_cost
     : s.key == "run_tool_failures" ? spec.run_tool_failures
                                    : spec.min_delay_ms) = n;
  });
}

void Checker::breaker_block(const ast::Policy& p, PolicySpec& spec) {
  if (!p.has_breaker) return;
  Breaker& b = spec.breaker;
  b.enabled = true;
  settings(p.breaker, "breaker", [&](const ast::Setting& s) {
    if (s.key == "counts") {
      breaker_counts(s, spec);
      return;
    }
    const ast::Value& v = s.values[0];
    if (s.key == "scope") {
      if (v.kind == Kind::Ident &&
          (v.text == "local" || v.text == "shared" || v.text == "quorum")) {
        b.shared = v.text == "shared";
        b.by_quorum = v.text == "quorum";
      } else {
        error("E035", v.pos,
              "scope must be local, shared or quorum, got '" + v.text + v.unit + "'");
      }
      return;
    }
    const auto value = ranged(*setting("breaker", s.key), v);
    if (!value) return;
    if (s.key == "ratio") {
      b.ratio = *value;
      return;
    }
    (s.key == "failures"      ? b.failures
     : s.key == "quorum"      ? b.quorum
     : s.key == "window"      ? b.window
     : s.key == "cooldown"    ? b.cooldown_ms
     : s.key == "probe_lease" ? b.probe_lease_ms
                              : b.min_calls) = static_cast<std::int64_t>(*value);
  });
  const bool lease_given =
      std::any_of(p.breaker.begin(), p.breaker.end(),
                  [](const ast::Setting& s) { return s.key == "probe_lease"; });
  if (!lease_given) b.probe_lease_ms = b.cooldown_ms;  // the default: one cooldown
  for (const ast::Setting& s : p.breaker)
    if (s.key == "quorum" && !b.by_quorum) error("E036", s.pos, "quorum needs scope = quorum");
  if (b.min_calls > b.window)
    error("E036", p.breaker.empty() ? p.pos : p.breaker.front().pos,
          "breaker min_calls (" + std::to_string(b.min_calls) + ") exceeds its window (" +
              std::to_string(b.window) + ")");
}

void Checker::breaker_counts(const ast::Setting& s, PolicySpec& spec) {
  std::vector<std::int64_t> ids;
  for (const ast::Value& v : s.values)
    if (auto id = code_id(v, spec)) ids.push_back(*id);
  if (s.values.empty())
    error("E037", s.pos, "counts needs at least one code",
          "a breaker no failure counts against never opens; remove the breaker instead");
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  spec.breaker.counts = std::move(ids);
}

void Checker::throttle_block(const ast::Policy& p, PolicySpec& spec) {
  if (!p.has_throttle) return;
  Throttle& t = spec.throttle;
  t.enabled = true;
  settings(p.throttle, "throttle", [&](const ast::Setting& s) {
    if (auto r = ranged(*setting("throttle", s.key), s.values[0]))
      (s.key == "max_tokens" ? t.max_tokens : t.token_ratio) = *r;
  });
}

void Checker::backoff(const ast::Policy& p, PolicySpec& spec) {
  for (std::size_t i = 1; i < p.backoff.size(); ++i)
    error("E021", p.backoff[i].pos, "a policy has one backoff line");
  if (!p.backoff.empty()) backoff_params(p.backoff[0], spec.backoff);
  std::map<std::string, ast::Pos> seen;
  for (const ast::Backoff& b : p.schedules) {
    if (auto [it, fresh] = seen.emplace(b.name, b.name_pos); !fresh) {
      error("E021", b.name_pos, "backoff '" + b.name + "' is defined twice",
            "first defined at line " + std::to_string(it->second.line));
      continue;
    }
    Schedule schedule{b.name, Backoff{}};
    backoff_params(b, schedule.backoff);
    spec.schedules.push_back(std::move(schedule));
  }
  std::sort(spec.schedules.begin(), spec.schedules.end(),
            [](const Schedule& x, const Schedule& y) { return x.name < y.name; });
}

void Checker::backoff_params(const ast::Backoff& b, Backoff& out) {
  const auto& kinds = Names<BackoffKind>::kValues;
  auto k = std::find(kinds.begin(), kinds.end(), b.kind);
  if (k == kinds.end()) {
    error("E018", b.kind_pos, "unknown backoff '" + b.kind + "'", did_you_mean(b.kind, kinds));
    return;
  }
  out.kind = static_cast<BackoffKind>(k - kinds.begin());
  if (out.kind != BackoffKind::Exponential) out.factor = 1.0;
  bool max_given = false;
  settings(b.params, "backoff", [&](const ast::Setting& s) {
    const ast::Value& v = s.values[0];
    if (s.key == "jitter") {
      const auto& jitters = Names<Jitter>::kValues;
      auto j = std::find(jitters.begin(), jitters.end(), v.text);
      if (v.kind != Kind::Ident || j == jitters.end())
        error("E035", v.pos, "jitter is none, full, equal or decorrelated, not '" + v.text + "'",
              did_you_mean(v.text, jitters));
      else
        out.jitter = static_cast<Jitter>(j - jitters.begin());
      return;
    }
    if (s.key == "factor" && out.kind != BackoffKind::Exponential) {
      error("E036", s.pos, "factor applies to exponential backoff only",
            "constant waits base each time; linear waits base * n");
      return;
    }
    const auto value = ranged(*setting("backoff", s.key), v);
    if (!value) return;
    if (s.key == "factor")
      out.factor = *value;
    else if (s.key == "hint_jitter")
      out.hint_jitter = *value;
    else
      (s.key == "base" ? out.base_ms : out.max_ms) = static_cast<std::int64_t>(*value);
    max_given |= s.key == "max";
  });
  if (!max_given) out.max_ms = std::max(out.max_ms, out.base_ms);
  if (out.max_ms < out.base_ms)
    error("E036", b.pos,
          "backoff max (" + std::to_string(out.max_ms) + "ms) is below its base (" +
              std::to_string(out.base_ms) + "ms)");
}

void Checker::route_options(const ast::Route& r, const PolicySpec& spec, Action& a) {
  if (r.schedule) {
    const std::string& name = r.schedule->text;
    std::vector<std::string_view> names;
    for (std::size_t i = 0; i < spec.schedules.size(); ++i) {
      names.push_back(spec.schedules[i].name);
      if (spec.schedules[i].name == name) a.schedule_index = static_cast<std::int32_t>(i);
    }
    if (a.route != Route::Retry)
      error("E036", r.schedule->pos, "only a retry waits by a backoff",
            "write the backoff on a retry rule");
    else if (a.schedule_index < 0)
      error("E018", r.schedule->pos, "unknown backoff '" + name + "'",
            names.empty() ? "declare it: backoff " + name + " { exponential base 1s }"
                          : did_you_mean(name, names));
    else
      a.schedule = name;
  }
  if (r.attempts) {
    if (a.route != Route::Retry && a.route != Route::Repair) {
      error("E036", r.attempts->pos, "attempts caps a retry or a repair",
            "other routes make no further call of this tool");
      return;
    }
    if (auto n = ranged(*setting("limits", "attempts"), *r.attempts,
                        "a rule's attempts counts every call, the first included"))
      a.attempts = static_cast<std::int64_t>(*n);
  }
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
