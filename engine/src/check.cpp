// Check stage: resolves and validates the AST of one file into PolicySpecs.
//
// Every error is collected (no early exit), each with a stable code and the position of the
// offending token: unknown attributes, codes, routes and settings (with the nearest valid name as
// help), type errors, duplicate rules, a missing or repeated default, and nonsense limits. The
// checker also synthesizes the budget guards from the limits, in the documented precedence
// order, so the compiler and the reference interpreter read the same guards.
#include "check.hpp"

#include <cmath>
#include <map>
#include <set>

#include "nearest.hpp"
#include "parse.hpp"

namespace recourse::detail {
namespace {

using ast::Op;
using Kind = ast::Value::Kind;

// Counts beyond this are surely mistakes; it keeps every sum of counts far from overflow.
constexpr std::int64_t kMaxCount = 1'000'000'000;

constexpr std::array<std::string_view, 7> kRoutes = {"retry",   "repair",   "authorize", "replace",
                                                     "degrade", "escalate", "stop"};

// A test the checker writes itself (guards, invariants), with `text` for dumps and reports.
Cond synthesized_test(Attr attr, Op op, std::int64_t value, std::string text) {
  Cond c;
  c.attr = attr;
  c.op = op;
  if (op != Op::Truthy) c.values.push_back(Constant{value, {}});
  c.text = std::move(text);
  return c;
}

class Checker {
 public:
  Checker(const ast::File& file, const grammar::Sources& sources, const CompileOptions& options,
          std::vector<Diagnostic>& out)
      : file_(file), sources_(sources), options_(options), out_(out) {}

  std::vector<PolicySpec> run() {
    std::vector<PolicySpec> specs;
    if (file_.version && file_.version->text != "1") {
      error("E002", file_.version->pos, "unknown language version " + file_.version->text,
            "this engine reads version 1");
      return specs;
    }
    for (const auto& policy : file_.policies) {
      errors_ = 0;
      PolicySpec spec = check_policy(policy);
      if (errors_ == 0) specs.push_back(std::move(spec));
    }
    return specs;
  }

 private:
  void report(Severity severity, const char* code, ast::Pos pos, std::string message,
              std::string help) {
    Diagnostic d;
    d.severity = severity;
    d.code = code;
    grammar::locate(d, sources_, pos);
    d.message = std::move(message);
    d.help = std::move(help);
    out_.push_back(std::move(d));
    if (severity == Severity::Error) ++errors_;
  }
  void error(const char* code, ast::Pos pos, std::string message, std::string help = {}) {
    report(Severity::Error, code, pos, std::move(message), std::move(help));
  }
  void warning(const char* code, ast::Pos pos, std::string message, std::string help = {}) {
    report(Severity::Warning, code, pos, std::move(message), std::move(help));
  }

  template <typename Range>
  static std::string did_you_mean(std::string_view name, const Range& candidates) {
    const auto n = nearest(name, candidates);
    return n.empty() ? std::string() : "did you mean '" + std::string(n) + "'?";
  }

  // ---- values -------------------------------------------------------------------------------

  // A duration literal in ms: a number with a unit (ms, s, m, h) that is a whole number of ms.
  std::optional<std::int64_t> duration(const ast::Value& v) {
    if (v.kind != Kind::Number || v.unit.empty()) {
      error("E025", v.pos,
            "expected a duration such as 250ms, 60s or 2m, got '" + v.text + v.unit + "'",
            "durations need a unit: ms, s, m or h");
      return std::nullopt;
    }
    constexpr std::array<std::string_view, 4> units = {"ms", "s", "m", "h"};
    if (std::find(units.begin(), units.end(), v.unit) == units.end()) {
      error("E025", v.pos, "unknown unit '" + v.unit + "' in " + v.text + v.unit,
            "durations take ms, s, m or h" + std::string(did_you_mean(v.unit, units).empty()
                                                             ? ""
                                                             : "; " + did_you_mean(v.unit, units)));
      return std::nullopt;
    }
    const double scale = v.unit == "ms" ? 1 : v.unit == "s" ? 1e3 : v.unit == "m" ? 6e4 : 3.6e6;
    const double ms = std::strtod(v.text.c_str(), nullptr) * scale;
    if (!std::isfinite(ms) || std::fabs(ms) > 1e15) {
      error("E025", v.pos, "duration " + v.text + v.unit + " is out of range",
            "durations go up to 1e15 ms (about 31,000 years)");
      return std::nullopt;
    }
    if (ms != std::floor(ms)) {
      error("E025", v.pos,
            "duration " + v.text + v.unit + " is not a whole number of milliseconds");
      return std::nullopt;
    }
    return static_cast<std::int64_t>(ms);
  }

  // A plain integer (a count).
  std::optional<std::int64_t> count(const ast::Value& v) {
    if (v.kind != Kind::Number || !v.unit.empty() || v.text.find('.') != std::string::npos ||
        v.text.size() > 15) {
      error("E012", v.pos, "expected a whole number (a count), got '" + v.text + v.unit + "'");
      return std::nullopt;
    }
    return std::stoll(v.text);
  }

  std::optional<double> real(const ast::Value& v) {
    if (v.kind != Kind::Number || !v.unit.empty() || v.text.size() > 40) {
      error("E012", v.pos, "expected a number, got '" + v.text + v.unit + "'");
      return std::nullopt;
    }
    return std::strtod(v.text.c_str(), nullptr);
  }

  std::optional<bool> boolean(const ast::Value& v) {
    if (v.kind == Kind::Ident && (v.text == "true" || v.text == "false")) return v.text == "true";
    error("E012", v.pos, "expected true or false, got '" + v.text + v.unit + "'");
    return std::nullopt;
  }

  std::optional<std::int64_t> code_id(const ast::Value& v, const PolicySpec& spec) {
    if (v.kind == Kind::Ident) {
      for (std::size_t i = 0; i < spec.codes.size(); ++i)
        if (spec.codes[i] == v.text) return static_cast<std::int64_t>(i);
    }
    error("E011", v.pos, "unknown code '" + v.text + "'",
          did_you_mean(v.text, spec.codes) +
              (v.kind == Kind::Ident ? " (declare it in `codes { }`)" : ""));
    return std::nullopt;
  }

  // ---- conditions ---------------------------------------------------------------------------

  std::optional<Constant> constant(Attr attr, const ast::Value& v, const PolicySpec& spec) {
    Constant c;
    const Type type = info(attr).type;
    if (v.kind == Kind::String &&
        (type == Type::Code || type == Type::Bool || type == Type::Enum)) {
      error("E012", v.pos,
            std::string(info(attr).name) + " values are names, not strings: write " + v.text,
            "only string attributes (field, suggestion, trace_id, tool) compare with \"strings\"");
      return std::nullopt;
    }
    switch (type) {
      case Type::Code: {
        auto id = code_id(v, spec);
        if (!id) return std::nullopt;
        c.num = *id;
        return c;
      }
      case Type::Bool: {
        auto b = boolean(v);
        if (!b) return std::nullopt;
        c.num = *b;
        return c;
      }
      case Type::Enum: {
        const AttrInfo& ai = info(attr);
        std::vector<std::string_view> values(ai.values, ai.values + ai.value_count);
        for (std::size_t i = 0; i < values.size(); ++i)
          if (v.kind == Kind::Ident && v.text == values[i]) {
            c.num = static_cast<std::int64_t>(i);
            return c;
          }
        std::string list;
        for (std::size_t i = 0; i < values.size(); ++i)
          list += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + std::string(values[i]);
        error("E012", v.pos, std::string(ai.name) + " is " + list + ", not '" + v.text + "'",
              did_you_mean(v.text, values));
        return std::nullopt;
      }
      case Type::String:
        if (v.kind == Kind::Number) {
          error("E012", v.pos,
                std::string(info(attr).name) + " is a string; write \"" + v.text + "\"");
          return std::nullopt;
        }
        c.str = v.text;
        return c;
      case Type::Duration: {
        auto ms = duration(v);
        if (!ms) return std::nullopt;
        c.num = *ms;
        return c;
      }
      case Type::Count: {
        auto n = count(v);
        if (!n) return std::nullopt;
        c.num = *n;
        return c;
      }
    }
    return std::nullopt;
  }

  std::optional<Cond> condition(const ast::Expr& e, const PolicySpec& spec) {
    Cond c;
    c.kind = e.kind;
    c.pos = e.pos;
    if (e.kind != ast::Expr::Kind::Test) {
      bool ok = true;
      for (const auto& child : e.children) {
        auto cc = condition(child, spec);
        if (cc)
          c.children.push_back(std::move(*cc));
        else
          ok = false;
      }
      if (!ok) return std::nullopt;
      return c;
    }
    c.op = e.op;
    c.text = text_of(e);
    std::optional<Attr> attr;
    std::vector<std::string_view> names;
    for (std::size_t i = 0; i < kAttrCount; ++i) {
      if (static_cast<Attr>(i) == Attr::FieldInArguments || kAttributes[i].internal) continue;
      names.push_back(kAttributes[i].name);
      if (kAttributes[i].name == e.attr) attr = static_cast<Attr>(i);
    }
    if (!attr) {
      error("E010", e.pos, "unknown attribute '" + e.attr + "'", did_you_mean(e.attr, names));
      return std::nullopt;
    }
    c.attr = *attr;
    const AttrInfo& ai = info(*attr);
    const std::string name(ai.name);
    switch (e.op) {
      case Op::Truthy:
        if (ai.type == Type::Bool || ai.type == Type::String) return c;
        error("E012", e.pos, "'" + name + "' alone is not a condition",
              ai.untrusted ? "compare it, or write `" + name + " is present`"
                           : "compare it with a value");
        return std::nullopt;
      case Op::IsAbsent:
      case Op::IsPresent:
        if (ai.untrusted) return c;
        error("E012", e.pos, "'" + name + "' comes from the host and is never absent",
              "only envelope attributes (code, retryable, field, suggestion, retry_after, "
              "trace_id) can be absent");
        return std::nullopt;
      case Op::InArguments:
        if (*attr == Attr::Field) {
          c.attr = Attr::FieldInArguments;
          c.op = Op::Truthy;
          return c;
        }
        error("E024", e.pos,
              "only `field in arguments` is allowed, not '" + name + " in arguments'");
        return std::nullopt;
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge:
        if (ai.type != Type::Duration && ai.type != Type::Count) {
          error("E012", e.pos, "'" + name + "' cannot be ordered; use ==, != or in",
                "<, <=, > and >= apply to durations and counts");
          return std::nullopt;
        }
        break;
      case Op::InList:
        if (e.values.empty()) {
          error("E012", e.pos, "empty list after 'in'", "an empty set never matches");
          return std::nullopt;
        }
        break;
      default:
        break;
    }
    bool ok = true;
    for (const auto& v : e.values) {
      auto k = constant(*attr, v, spec);
      if (k)
        c.values.push_back(std::move(*k));
      else
        ok = false;
    }
    if (!ok) return std::nullopt;
    return c;
  }

  static std::string text_of(const ast::Expr& e) {
    std::string s = e.attr;
    auto value = [](const ast::Value& v) {
      return v.kind == Kind::String ? "\"" + v.text + "\"" : v.text + v.unit;
    };
    switch (e.op) {
      case Op::Truthy:
        return s;
      case Op::IsAbsent:
        return s + " is absent";
      case Op::IsPresent:
        return s + " is present";
      case Op::InArguments:
        return s + " in arguments";
      case Op::InList: {
        s += " in [";
        for (std::size_t i = 0; i < e.values.size(); ++i) s += (i ? ", " : "") + value(e.values[i]);
        return s + "]";
      }
      default:
        break;
    }
    static constexpr std::array<const char*, 6> ops = {"==", "!=", "<", "<=", ">", ">="};
    return s + " " + ops[static_cast<std::size_t>(e.op)] + " " + value(e.values.at(0));
  }

  // ---- routes -------------------------------------------------------------------------------

  std::optional<Action> action(const ast::Route& r) {
    Action a;
    auto it = std::find(kRoutes.begin(), kRoutes.end(), r.kind);
    if (it == kRoutes.end()) {
      error("E013", r.pos, "unknown route '" + r.kind + "'", did_you_mean(r.kind, kRoutes));
      return std::nullopt;
    }
    a.route = static_cast<Route>(it - kRoutes.begin());
    std::size_t next = 0;
    if (a.route == Route::Replace || a.route == Route::Degrade) {
      if (a.route == Route::Replace && r.args.empty()) {
        error("E014", r.pos, "replace needs the tool to call instead",
              "write replace \"tool.name\"");
        return std::nullopt;
      }
      if (!r.args.empty()) a.target = r.args[next++].text;
      if (a.route == Route::Degrade && r.args.size() == 1) {  // one string: the reason
        a.reason = std::move(a.target);
        a.target.clear();
      }
    }
    if (next < r.args.size()) a.reason = r.args[next++].text;
    if (next < r.args.size()) {
      error("E014", r.args[next].pos, "too many strings after route '" + r.kind + "'",
            "a route takes an optional reason (replace and degrade: a target first)");
      return std::nullopt;
    }
    return a;
  }

  // ---- blocks -------------------------------------------------------------------------------

  template <typename Handler>
  void settings(const std::vector<ast::Setting>& list, const std::vector<std::string_view>& keys,
                const char* block, Handler&& handle) {
    std::set<std::string> seen;
    for (const auto& s : list) {
      if (std::find(keys.begin(), keys.end(), s.key) == keys.end()) {
        error("E018", s.pos, std::string("unknown ") + block + " setting '" + s.key + "'",
              did_you_mean(s.key, keys));
        continue;
      }
      if (!seen.insert(s.key).second) {
        error("E021", s.pos, std::string(block) + " setting '" + s.key + "' is set twice");
        continue;
      }
      if (s.is_list != (s.key == "arguments")) {
        error("E019", s.pos,
              s.is_list ? "'" + s.key + "' takes one value, not a list"
                        : "'" + s.key + "' takes a [list]");
        continue;
      }
      handle(s);
    }
  }

  void tool_block(const ast::Policy& p, PolicySpec& spec) {
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

  // on_exhausted / on_open: never retry or repair; `replace` goes to the tool's fallback.
  void fallback_route(const ast::Setting& s, const PolicySpec& spec, Action& out) {
    constexpr std::array<std::string_view, 5> allowed = {"stop", "escalate", "degrade", "authorize",
                                                         "replace"};
    const ast::Value& v = s.values[0];
    if (v.kind != Kind::Ident ||
        std::find(allowed.begin(), allowed.end(), v.text) == allowed.end()) {
      error("E019", v.pos,
            s.key + " must be stop, escalate, degrade, authorize or replace, not '" + v.text + "'",
            "a spent budget or an open circuit must not lead to another retry or repair");
      return;
    }
    out.route =
        static_cast<Route>(std::find(kRoutes.begin(), kRoutes.end(), v.text) - kRoutes.begin());
    out.target.clear();
    if (out.route == Route::Replace) {
      if (spec.fallback.empty())
        error("E019", v.pos, s.key + " = replace needs the tool's fallback",
              "declare it: tool { fallback = \"other.tool\" }");
      out.target = spec.fallback;
    }
  }

  void limits_block(const ast::Policy& p, PolicySpec& spec) {
    // Without on_exhausted / on_open: the tool's fallback when it declares one, else stop.
    if (!spec.fallback.empty())
      spec.on_exhausted = spec.on_open = Action{Route::Replace, spec.fallback, ""};
    settings(
        p.limits,
        {"attempts", "repairs", "retry_after_max", "deadline", "min_delay", "on_exhausted",
         "on_open", "cost", "repeats", "try_timeout"},
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
                    s.key + " = " + v.text + " is outside [" + std::to_string(low) + ", " +
                        ceiling + "]");
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

  void breaker_block(const ast::Policy& p, PolicySpec& spec) {
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

  void throttle_block(const ast::Policy& p, PolicySpec& spec) {
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

  void backoff(const ast::Policy& p, PolicySpec& spec) {
    if (p.backoff.empty()) return;
    for (std::size_t i = 1; i < p.backoff.size(); ++i)
      error("E021", p.backoff[i].pos, "a policy has one backoff line");
    const ast::Backoff& b = p.backoff[0];
    constexpr std::array<std::string_view, 3> kinds = {"constant", "linear", "exponential"};
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
        constexpr std::array<std::string_view, 4> jitters = {"none", "full", "equal",
                                                             "decorrelated"};
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

  // ---- policy -------------------------------------------------------------------------------

  PolicySpec check_policy(const ast::Policy& p) {
    PolicySpec spec;
    spec.name = p.name;
    spec.file = file_.path;
    spec.pos = p.pos;
    if (p.name.empty()) error("E019", p.name_pos, "a policy needs a name");
    for (auto c : kBuiltinCodes) spec.codes.emplace_back(c);
    for (const auto& c : p.codes) {
      if (std::find(spec.codes.begin(), spec.codes.end(), c.text) != spec.codes.end())
        error("E022", c.pos,
              "code '" + c.text + "' is already " +
                  (std::find(kBuiltinCodes.begin(), kBuiltinCodes.end(), c.text) !=
                           kBuiltinCodes.end()
                       ? "built in"
                       : "declared"));
      else
        spec.codes.push_back(c.text);
    }
    tool_block(p, spec);
    limits_block(p, spec);
    breaker_block(p, spec);
    throttle_block(p, spec);
    backoff(p, spec);

    if (p.rules.size() > options_.max_rules)
      error("E091", p.pos,
            "policy has " + std::to_string(p.rules.size()) + " rules; the limit is " +
                std::to_string(options_.max_rules),
            "split the policy, or raise CompileOptions::max_rules");
    std::map<std::string, ast::Pos> names;
    for (const auto& r : p.rules) {
      auto [it, fresh] = names.emplace(r.name, r.pos);
      if (!fresh)
        error("E015", r.pos, "rule '" + r.name + "' is defined twice",
              "first defined at line " + std::to_string(it->second.line));
      RuleSpec rule;
      rule.name = r.name;
      rule.pos = r.pos;
      if (r.when) rule.when = condition(*r.when, spec);
      auto a = action(r.route);
      if (a) rule.action = std::move(*a);
      spec.rules.push_back(std::move(rule));
    }
    if (p.defaults.empty()) {
      // Optional when the rules cover every input: analysis proves it, or reports E016 with an
      // input no rule decides.
      RuleSpec rule;
      rule.name = "default";
      rule.pos = p.pos;
      rule.action = Action{Route::Stop, "", "no rule decides this input"};
      spec.rules.push_back(std::move(rule));
      spec.implicit_default = true;
    } else {
      for (std::size_t i = 1; i < p.defaults.size(); ++i)
        error("E017", p.defaults[i].pos, "a policy has one default");
      RuleSpec rule;
      rule.name = "default";
      rule.pos = p.defaults[0].pos;
      auto a = action(p.defaults[0].route);
      if (a) rule.action = std::move(*a);
      spec.rules.push_back(std::move(rule));
    }
    hit_policy(p, spec);
    waivers(p, spec);
    mappings(p, spec);
    assertions(p, spec);
    sequence_bounds(p, spec);
    add_guards(spec);
    add_invariants(spec);
    tests(p, spec);
    return spec;
  }

  // `assert sequence METRIC [CODE] <= LIMIT`: a known metric, a code only for calls_after, a
  // duration for the wait metrics and a count for the others.
  void sequence_bounds(const ast::Policy& p, PolicySpec& spec) {
    constexpr std::array<std::string_view, 5> metrics = {"total_wait", "max_delay", "calls",
                                                         "calls_after", "repairs"};
    for (const ast::Bound& b : p.bounds) {
      const std::string& m = b.metric.text;
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) {
        error("E032", b.metric.pos, "unknown sequence metric '" + m + "'",
              "metrics: total_wait, max_delay, calls, calls_after CODE, repairs" +
                  std::string(did_you_mean(m, metrics).empty() ? ""
                                                               : "; " + did_you_mean(m, metrics)));
        continue;
      }
      SequenceBound out;
      out.metric = m;
      if (m == "calls_after") {
        if (!b.code) {
          error("E032", b.metric.pos, "calls_after needs the code it counts from",
                "e.g. assert sequence calls_after TIMEOUT <= 2");
          continue;
        }
        if (!code_id(*b.code, spec)) continue;
        out.code = b.code->text;
      } else if (b.code) {
        error("E032", b.code->pos, "only calls_after takes a code");
        continue;
      }
      const bool wait = m == "total_wait" || m == "max_delay";
      const auto limit = wait ? duration(b.limit) : count(b.limit);
      if (!limit) continue;
      if (*limit < (m == "calls" ? 1 : 0)) {
        error("E032", b.limit.pos,
              m == "calls" ? "calls is at least 1 (the first call): a bound below cannot hold"
                           : "a bound below 0 can never hold");
        continue;
      }
      out.limit = *limit;
      out.text =
          m + (out.code.empty() ? "" : " " + out.code) + " <= " + b.limit.text + b.limit.unit;
      out.file = std::string(sources_.at(b.pos.source).path);
      out.line = b.pos.line;
      out.column = b.pos.column;
      spec.bounds.push_back(std::move(out));
    }
  }

  // `test` blocks: the context must read (strictly, as `recourse decide` reads it), the envelope
  // must be JSON, and the expectation must name a route, rules and budgets the policy has.
  void tests(const ast::Policy& p, PolicySpec& spec) {
    std::vector<std::string> deciders{"default"}, budgets;
    for (const auto& r : spec.rules) deciders.push_back(r.name);
    for (const auto& g : spec.guards) {
      deciders.push_back(g.name);
      if (!g.exhausted.empty()) budgets.push_back(g.exhausted);
    }
    std::map<std::string, ast::Pos> names;
    for (const ast::Test& t : p.tests) {
      if (auto [it, fresh] = names.emplace(t.name, t.name_pos); !fresh)
        error("E034", t.name_pos, "test " + quoted(t.name) + " is defined twice in the policy",
              "first defined at line " + std::to_string(it->second.line));
      TestSpec test;
      test.name = t.name;
      test.file = std::string(sources_.at(t.pos.source).path);
      test.pos = t.pos;
      test.envelope = t.envelope;
      if (const EnvelopeResult read = read_envelope(t.envelope); !read.ok)
        error("E028", t.envelope_pos, "the test's envelope does not read: " + read.error,
              "write the envelope as JSON, e.g. {\"code\": \"TIMEOUT\", \"retryable\": true}");
      if (t.context) {
        ContextResult c = read_context(*t.context);
        if (!c.ok)
          error("E028", t.context_pos,
                "the test's context does not read: " +
                    (c.errors.empty() ? std::string("not a JSON object") : c.errors[0].message),
                "the context takes the keys of `recourse decide --context` (docs/language.md)");
        test.context = std::move(c.context);
      }
      if (test.context.tool.empty())
        test.context.tool = spec.name;
      else if (test.context.tool != spec.name && spec.name != "*")  // "*" decides for any tool
        error("E028", t.context_pos,
              "the test's context names tool \"" + test.context.tool +
                  "\"; a test decides with "
                  "its own policy, \"" +
                  spec.name + "\"",
              "leave `tool` out of the context, or move the test to that policy");
      const ast::Expectation& e = t.expect;
      std::string expected = e.route.text;
      const auto route = std::find(kRoutes.begin(), kRoutes.end(), e.route.text);
      if (route == kRoutes.end())
        error("E013", e.route.pos, "unknown route '" + e.route.text + "'",
              did_you_mean(e.route.text, kRoutes));
      else
        test.route = static_cast<Route>(route - kRoutes.begin());
      if (e.repeated) error("E029", *e.repeated, "this clause is given twice in the expectation");
      if (e.target && route != kRoutes.end() && test.route != Route::Replace &&
          test.route != Route::Degrade)
        error("E029", e.target->pos, "only replace and degrade have a target to expect",
              "a route's reason is not checked by tests");
      if (e.target) {
        test.target = e.target->text;
        expected += " \"" + e.target->text + "\"";
      }
      if (e.rule) {
        if (std::find(deciders.begin(), deciders.end(), e.rule->text) == deciders.end())
          error("E029", e.rule->pos, "no rule or guard '" + e.rule->text + "' decides here",
                did_you_mean(e.rule->text, deciders));
        test.rule = e.rule->text;
        expected +=
            " rule " + (e.rule->kind == Kind::String ? "\"" + e.rule->text + "\"" : e.rule->text);
      }
      if (e.delay_min) {
        const ast::Value& last = e.delay_max ? *e.delay_max : *e.delay_min;
        test.delay_min_ms = duration(*e.delay_min);
        test.delay_max_ms = duration(last);
        expected += " delay " + e.delay_min->text + e.delay_min->unit;
        if (e.delay_max) expected += ".." + last.text + last.unit;
        if (test.delay_min_ms && *test.delay_min_ms < 0)
          error("E029", e.delay_min->pos, "a delay is never negative");
        if (test.delay_min_ms && test.delay_max_ms && *test.delay_min_ms > *test.delay_max_ms)
          error("E029", last.pos, "the delay range ends before it starts");
      }
      if (e.exhausted) {
        if (std::find(budgets.begin(), budgets.end(), e.exhausted->text) == budgets.end())
          error("E029", e.exhausted->pos, "no budget '" + e.exhausted->text + "' in this policy",
                did_you_mean(e.exhausted->text, budgets));
        test.exhausted = e.exhausted->text;
        expected += " exhausted " + e.exhausted->text;
      }
      test.expected = std::move(expected);
      spec.tests.push_back(std::move(test));
    }
  }

  // `map PROTOCOL KEY -> CODE` (adapters.hpp): the key must be one the protocol can send, the
  // code one the policy knows, and each (protocol, key) is mapped once.
  void mappings(const ast::Policy& p, PolicySpec& spec) {
    constexpr std::array<std::string_view, 4> protocols = {"http", "grpc", "jsonrpc", "mcp"};
    // gRPC status names by number (grpc/doc/statuscodes.md), as the gRPC adapter reads them.
    constexpr std::array<std::string_view, 17> grpc = {"OK",
                                                       "CANCELLED",
                                                       "UNKNOWN",
                                                       "INVALID_ARGUMENT",
                                                       "DEADLINE_EXCEEDED",
                                                       "NOT_FOUND",
                                                       "ALREADY_EXISTS",
                                                       "PERMISSION_DENIED",
                                                       "RESOURCE_EXHAUSTED",
                                                       "FAILED_PRECONDITION",
                                                       "ABORTED",
                                                       "OUT_OF_RANGE",
                                                       "UNIMPLEMENTED",
                                                       "INTERNAL",
                                                       "UNAVAILABLE",
                                                       "DATA_LOSS",
                                                       "UNAUTHENTICATED"};
    for (const auto& m : p.mappings) {
      const auto proto = std::find(protocols.begin(), protocols.end(), m.protocol.text);
      if (m.protocol.kind != Kind::Ident || proto == protocols.end()) {
        const std::string near = did_you_mean(m.protocol.text, protocols);
        error("E018", m.protocol.pos, "unknown protocol '" + m.protocol.text + "' in map",
              "map takes http, grpc, jsonrpc or mcp" + (near.empty() ? "" : "; " + near));
        continue;
      }
      const ast::Value& k = m.key;
      const bool integer = k.kind == Kind::Number && k.unit.empty() &&
                           k.text.find('.') == std::string::npos && k.text.size() <= 12;
      const std::int64_t n = integer ? std::stoll(k.text) : 0;
      std::string key = k.text;
      std::string problem;
      if (*proto == "http") {
        if (k.kind == Kind::String ? k.text.empty() : !(integer && n >= 100 && n <= 599))
          problem = "an HTTP status 100..599, or a body error type as a \"string\"";
      } else if (*proto == "grpc") {
        if (integer && n >= 0 && n <= 16)
          key = std::string(grpc[static_cast<std::size_t>(n)]);
        else if (k.kind != Kind::Ident || std::find(grpc.begin(), grpc.end(), k.text) == grpc.end())
          problem = "a gRPC status name (UNAVAILABLE) or number 0..16";
      } else if (!integer) {
        problem = "a JSON-RPC error code (an integer)";
      }
      if (!problem.empty()) {
        error("E019", k.pos,
              "map " + m.protocol.text + " needs " + problem + ", not '" + k.text + k.unit + "'",
              *proto == "grpc" ? did_you_mean(k.text, grpc) : std::string());
        continue;
      }
      if (!code_id(m.code, spec)) continue;
      const Protocol protocol = *proto == "http"   ? Protocol::Http
                                : *proto == "grpc" ? Protocol::Grpc
                                : *proto == "mcp"  ? Protocol::Mcp
                                                   : Protocol::JsonRpc;
      // jsonrpc and mcp keys are the same JSON-RPC error codes.
      auto rpc = [](Protocol x) { return x == Protocol::JsonRpc || x == Protocol::Mcp; };
      const bool twice =
          std::any_of(spec.mappings.begin(), spec.mappings.end(), [&](const CodeMapping& c) {
            return (c.protocol == protocol || (rpc(c.protocol) && rpc(protocol))) && c.key == key;
          });
      if (twice) {
        error("E021", m.pos, "map " + m.protocol.text + " " + k.text + " is given twice");
        continue;
      }
      spec.mappings.push_back({protocol, key, m.code.text});
    }
  }

  void hit_policy(const ast::Policy& p, PolicySpec& spec) {
    for (std::size_t i = 1; i < p.hit.size(); ++i)
      error("E021", p.hit[i].pos, "a policy has one hit policy");
    if (p.hit.empty()) return;
    constexpr std::array<std::string_view, 3> hits = {"first", "safest", "unique"};
    auto it = std::find(hits.begin(), hits.end(), p.hit[0].text);
    if (it == hits.end())
      error("E018", p.hit[0].pos, "unknown hit policy '" + p.hit[0].text + "'",
            did_you_mean(p.hit[0].text, hits));
    else
      spec.hit = static_cast<HitPolicy>(it - hits.begin());
  }

  void waivers(const ast::Policy& p, PolicySpec& spec) {
    for (const auto& w : p.waivers) {
      const std::string& name = w.name.text;
      if (std::find(kInvariants.begin(), kInvariants.end(), name) == kInvariants.end()) {
        error("E030", w.name.pos, "no invariant is named '" + name + "'",
              did_you_mean(name, kInvariants));
        continue;
      }
      if (w.reason.empty()) {
        error("E030", w.pos, "a waiver needs a reason",
              "waive " + name + " \"why this tool is safe\"");
        continue;
      }
      if (std::find(spec.waived.begin(), spec.waived.end(), name) != spec.waived.end()) {
        error("E030", w.pos, "invariant '" + name + "' is waived twice");
        continue;
      }
      spec.waived.push_back(name);
      warning("W110", w.pos, "invariant '" + name + "' waived: " + w.reason,
              "the compiler no longer enforces it for this policy");
    }
  }

  void assertions(const ast::Policy& p, PolicySpec& spec) {
    for (const auto& a : p.assertions) {
      AssertSpec out;
      out.pos = a.pos;
      if (a.kind.text != "never" && a.kind.text != "always") {
        error("E031", a.kind.pos, "an assertion is 'never' or 'always', not '" + a.kind.text + "'");
        continue;
      }
      out.never = a.kind.text == "never";
      bool ok = true;
      std::string routes;
      for (const auto& r : a.routes) {
        auto it = std::find(kRoutes.begin(), kRoutes.end(), r.text);
        if (r.kind != Kind::Ident || it == kRoutes.end()) {
          error("E013", r.pos, "unknown route '" + r.text + "'", did_you_mean(r.text, kRoutes));
          ok = false;
          continue;
        }
        out.routes |= 1u << (it - kRoutes.begin());
        routes += (routes.empty() ? "" : ", ") + r.text;
      }
      auto when = condition(a.when, spec);
      if (!ok || !when) continue;
      out.when = std::move(*when);
      out.text = "assert " + a.kind.text + " " +
                 (a.routes.size() == 1 ? routes : "[" + routes + "]") + " when ...";
      spec.assertions.push_back(std::move(out));
    }
  }

  // The built-in invariants, as assertions proven like the author's (analyze.cpp). Waived ones
  // are not checked.
  static void add_invariants(PolicySpec& spec) {
    using K = ast::Expr::Kind;
    // A policy that never retries or repairs has nothing to prove (and keeps its table small).
    if (std::none_of(spec.rules.begin(), spec.rules.end(), [](const RuleSpec& r) {
          return r.action.route == Route::Retry || r.action.route == Route::Repair;
        }))
      return;
    const auto test = synthesized_test;
    auto both = [](std::vector<Cond> children) {
      Cond c;
      c.kind = K::And;
      c.children = std::move(children);
      return c;
    };
    auto never = [&](std::string name, std::uint32_t routes, Cond when, std::string text) {
      if (waived(spec, name)) return;
      AssertSpec a;
      a.pos = spec.pos;
      a.never = true;
      a.routes = routes;
      a.when = std::move(when);
      a.text = std::move(text);
      a.invariant = std::move(name);
      spec.assertions.push_back(std::move(a));
    };
    const std::uint32_t retry = 1u << static_cast<int>(Route::Retry);
    const std::uint32_t repair = 1u << static_cast<int>(Route::Repair);
    Cond not_idempotent;
    not_idempotent.kind = K::Not;
    not_idempotent.children.push_back(test(Attr::Idempotent, Op::Truthy, 0, "idempotent"));
    never("retry_after_commit", retry | repair,
          test(Attr::SideEffect, Op::Eq, static_cast<std::int64_t>(SideEffect::Committed),
               "side_effect == committed"),
          "never [retry, repair] when side_effect == committed");
    std::vector<Cond> unknown = {
        test(Attr::SideEffect, Op::Eq, static_cast<std::int64_t>(SideEffect::Unknown),
             "side_effect == unknown"),
        not_idempotent};
    never("unsafe_resend", repair, both(unknown),
          "never repair when side_effect == unknown and not idempotent");
    if (spec.honours_keys)
      unknown.push_back(test(Attr::IdempotencyKey, Op::Ne, 1, "idempotency_key != pinned"));
    never("unsafe_resend", retry, both(unknown),
          spec.honours_keys ? "never retry when side_effect == unknown and not idempotent and "
                              "idempotency_key != pinned"
                            : "never retry when side_effect == unknown and not idempotent");
    never("context_overflow_retry", retry,
          test(Attr::Code, Op::Eq, std::int64_t{8}, "code == CONTEXT_OVERFLOW"),
          "never retry when code == CONTEXT_OVERFLOW");
    never("bounded_retries", retry | repair,
          test(Attr::AttemptsLeft, Op::Le, 0, "attempts_left <= 0"),
          "never [retry, repair] when attempts_left <= 0");
  }

  static bool waived(const PolicySpec& spec, std::string_view name) {
    return std::find(spec.waived.begin(), spec.waived.end(), name) != spec.waived.end();
  }

  // The guards, in precedence order (docs/language.md, "Guards and precedence"): side-effect
  // gates, the Retry-After cap, spent budgets, the open circuit.
  static void add_guards(PolicySpec& spec) {
    using K = ast::Expr::Kind;
    const auto test = synthesized_test;
    auto node = [](K kind, std::vector<Cond> children) {
      Cond c;
      c.kind = kind;
      c.children = std::move(children);
      return c;
    };
    enum Applies { kRetry = 1, kRepair = 2, kBoth = 3 };
    auto add = [&](std::string name, std::string exhausted, int applies, Cond when, Action action,
                   std::string reason) {
      Guard g;
      g.name = std::move(name);
      g.exhausted = std::move(exhausted);
      g.applies_to_retry = applies & kRetry;
      g.applies_to_repair = applies & kRepair;
      g.when = std::move(when);
      g.action = std::move(action);
      g.action.reason = std::move(reason);
      spec.guards.push_back(std::move(g));
    };
    auto budget = [&](std::string exhausted, int applies, Cond when, std::string reason) {
      add("budget:" + exhausted, exhausted, applies, std::move(when), spec.on_exhausted,
          std::move(reason));
    };
    const auto ms = [](std::int64_t v) { return std::to_string(v) + "ms"; };
    const auto committed = static_cast<std::int64_t>(SideEffect::Committed);
    const auto unknown = static_cast<std::int64_t>(SideEffect::Unknown);

    // Side-effect gates (RFC 9110 section 9.2.2; IETF Idempotency-Key draft): never resend after
    // a committed effect; after an unknown outcome, resend a non-idempotent call only with a
    // pinned key the tool honours (a repaired call carries a new key, so never), else verify.
    if (!waived(spec, "retry_after_commit"))
      add("gate:committed", "", kBoth,
          test(Attr::SideEffect, Op::Eq, committed, "side_effect == committed"),
          Action{Route::Stop, "", ""}, "side effect already committed");
    const Action verify = spec.verify.empty() ? Action{Route::Escalate, "", ""}
                                              : Action{Route::Replace, spec.verify, ""};
    auto unknown_outcome = [&] {
      return std::vector<Cond>{test(Attr::SideEffect, Op::Eq, unknown, "side_effect == unknown"),
                               node(K::Not, {test(Attr::Idempotent, Op::Truthy, 0, "idempotent")})};
    };
    std::vector<Cond> retry_unknown = unknown_outcome();
    if (spec.honours_keys)
      retry_unknown.push_back(test(Attr::IdempotencyKey, Op::Ne, 1, "idempotency_key != pinned"));
    if (!waived(spec, "unsafe_resend")) {
      add("gate:unknown_outcome", "", kRetry, node(K::And, std::move(retry_unknown)), verify,
          "outcome unknown; verify before resending");
      add("gate:unknown_outcome", "", kRepair, node(K::And, unknown_outcome()), verify,
          "outcome unknown; verify before resending");
    }

    budget("retry_after", kRetry,
           test(Attr::RetryAfter, Op::Gt, spec.retry_after_max_ms,
                "retry_after > " + ms(spec.retry_after_max_ms)),
           "server asked to wait longer than retry_after_max");
    // A call stuck failing the same way is the most specific diagnosis: it comes first.
    if (spec.repeats != kNoLimit)
      budget(
          "repeats", kBoth,
          test(Attr::Repeats, Op::Ge, spec.repeats, "repeats >= " + std::to_string(spec.repeats)),
          "the same call failed the same way too often; change approach");
    budget("attempts", kBoth, test(Attr::AttemptsLeft, Op::Le, 0, "attempts_left <= 0"),
           "attempt budget spent");
    budget("repairs", kRepair,
           test(Attr::Repairs, Op::Ge, spec.repairs, "repairs >= " + std::to_string(spec.repairs)),
           "repair budget spent");
    if (spec.cost_max != kNoLimit)
      budget("cost", kBoth,
             test(Attr::CostLeft, Op::Lt, spec.cost, "cost_left < " + std::to_string(spec.cost)),
             "cost budget spent");
    budget("deadline", kBoth, test(Attr::TimeLeft, Op::Le, 0, "time_left <= 0"),
           "operation deadline passed");
    budget("deadline", kRetry, test(Attr::DeadlineSlack, Op::Le, 0, "retry_after >= time_left"),
           "server asked to wait beyond the deadline");
    if (spec.throttle.enabled)
      budget("retry_tokens", kRetry, test(Attr::RetryThrottled, Op::Truthy, 0, "retry_throttled"),
             "retries throttled for this tool (gRFC A6 token bucket)");
    if (spec.breaker.enabled)
      add("circuit:open", "", kBoth, test(Attr::Circuit, Op::Eq, 1, "circuit == open"),
          spec.on_open, "circuit open for this tool");
  }

  const ast::File& file_;
  const grammar::Sources& sources_;
  const CompileOptions& options_;
  std::vector<Diagnostic>& out_;
  std::size_t errors_ = 0;
};

}  // namespace

std::vector<PolicySpec> check(const ast::File& file, const grammar::Sources& sources,
                              const CompileOptions& options, std::vector<Diagnostic>& diagnostics) {
  return Checker(file, sources, options, diagnostics).run();
}

}  // namespace recourse::detail
