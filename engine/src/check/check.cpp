// Check stage: resolves and validates the AST of one file into PolicySpecs.
//
// Every error is collected (no early exit), each with a stable code and the position of the
// offending token: unknown attributes, codes, routes and settings (with the nearest valid name as
// help), type errors, duplicate rules, a missing or repeated default, and nonsense limits. Each
// policy is then lowered (lower.cpp): its guards and invariants synthesized.
#include "check/check.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "check/checker.hpp"
#include "check/lower.hpp"
#include "print.hpp"
#include "source/location.hpp"
#include "source/nearest.hpp"

namespace recourse::detail {
namespace {

// What a duration literal comes to in ms.
enum class Ms { Whole, Fraction, OutOfRange };

// The exact value of `number` ([-]digits[.digits], as the grammar reads a number) times
// `unit_ms`, in `ms` when it is a whole number of ms within 1e15; decimal arithmetic, so no
// spelling rounds into range or into a whole number (1.00000000000000001ms is a fraction, and
// 1.000s, with any number of zeros, 1000 ms). Past 7 fraction digits (trailing zeros aside) no
// unit gives whole ms: the last digit is not 0, so 10^digits would have to divide the unit's
// 2^a 5^b with a, b <= 7 (h is 3,600,000 = 2^7 3^2 5^5 ms).
Ms whole_ms(std::string_view number, std::int64_t unit_ms, std::int64_t& ms) {
  constexpr std::int64_t kMax = 1'000'000'000'000'000;
  const bool negative = !number.empty() && number.front() == '-';
  if (negative) number.remove_prefix(1);
  const auto dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  std::int64_t units = 0;
  for (const char c : whole) {
    if (units > kMax / unit_ms) return Ms::OutOfRange;
    units = units * 10 + (c - '0');
  }
  if (units > kMax / unit_ms) return Ms::OutOfRange;
  if (fraction.size() > 7) return Ms::Fraction;
  std::int64_t digits = 0, scale = 1;
  for (const char c : fraction) {
    digits = digits * 10 + (c - '0');
    scale *= 10;
  }
  if (digits * unit_ms % scale != 0) return Ms::Fraction;
  ms = units * unit_ms + digits * unit_ms / scale;
  if (ms > kMax) return Ms::OutOfRange;
  if (negative) ms = -ms;
  return Ms::Whole;
}

}  // namespace

std::optional<std::int64_t> Checker::duration(const ast::Value& v) {
  if (v.kind != Kind::Number || v.unit.empty()) {
    error("E025", v.pos,
          "expected a duration such as 250ms, 60s or 2m, got '" + v.text + v.unit + "'",
          "durations need a unit: ms, s, m or h");
    return std::nullopt;
  }
  constexpr std::array<std::string_view, 4> units = {"ms", "s", "m", "h"};
  constexpr std::array<std::int64_t, 4> unit_ms = {1, 1000, 60'000, 3'600'000};
  const auto unit = std::find(units.begin(), units.end(), v.unit);
  if (unit == units.end()) {
    error("E025", v.pos, "unknown unit '" + v.unit + "' in " + v.text + v.unit,
          help_with("durations take ms, s, m or h", v.unit, units));
    return std::nullopt;
  }
  std::int64_t ms = 0;
  switch (whole_ms(v.text, unit_ms[static_cast<std::size_t>(unit - units.begin())], ms)) {
    case Ms::Whole:
      return ms;
    case Ms::OutOfRange:
      error("E025", v.pos, "duration " + v.text + v.unit + " is out of range",
            "durations go up to 1e15 ms (about 31,000 years)");
      return std::nullopt;
    case Ms::Fraction:
      break;
  }
  error("E025", v.pos, "duration " + v.text + v.unit + " is not a whole number of milliseconds");
  return std::nullopt;
}

std::optional<std::int64_t> Checker::count(const ast::Value& v) {
  if (v.kind != Kind::Number || !v.unit.empty() || v.text.find('.') != std::string::npos ||
      v.text.size() > 15) {
    error("E012", v.pos, "expected a whole number (a count), got '" + v.text + v.unit + "'");
    return std::nullopt;
  }
  return std::stoll(v.text);
}

std::optional<double> Checker::real(const ast::Value& v) {
  if (v.kind != Kind::Number || !v.unit.empty() || v.text.size() > 40) {
    error("E012", v.pos, "expected a number, got '" + v.text + v.unit + "'");
    return std::nullopt;
  }
  return std::strtod(v.text.c_str(), nullptr);
}

std::optional<bool> Checker::boolean(const ast::Value& v) {
  if (v.kind == Kind::Ident && (v.text == "true" || v.text == "false")) return v.text == "true";
  error("E012", v.pos, "expected true or false, got '" + v.text + v.unit + "'");
  return std::nullopt;
}

std::optional<std::int64_t> Checker::code_id(const ast::Value& v, const PolicySpec& spec) {
  if (v.kind == Kind::Ident) {
    const auto it = code_ids_.find(v.text);
    if (it != code_ids_.end()) return it->second;
  }
  // A name may be a code yet to declare; a number never is one.
  std::string help = did_you_mean(v.text, spec.codes);
  if (v.kind == Kind::Ident)
    help += help.empty() ? "declare it in `codes { }`" : " (declare it in `codes { }`)";
  error("E011", v.pos, "unknown code '" + v.text + "'", help);
  return std::nullopt;
}

std::optional<Constant> Checker::constant(Attr attr, const ast::Value& v, const PolicySpec& spec) {
  Constant c;
  const Type type = info(attr).type;
  if (v.kind == Kind::String && (type == Type::Code || type == Type::Bool || type == Type::Enum)) {
    error("E039", v.pos,
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
        error("E039", v.pos,
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

std::optional<Cond> Checker::condition(const ast::Expr& e, const PolicySpec& spec) {
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
  c.text = grammar::condition_text(e);
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
      error("E041", e.pos, "'" + name + "' alone is not a condition",
            ai.untrusted ? "compare it, or write `" + name + " is present`"
                         : "compare it with a value");
      return std::nullopt;
    case Op::IsAbsent:
    case Op::IsPresent:
      if (ai.untrusted) return c;
      error("E041", e.pos, "'" + name + "' comes from the host and is never absent",
            "only envelope attributes (code, retryable, field, suggestion, retry_after, "
            "trace_id) can be absent");
      return std::nullopt;
    case Op::InArguments:
      if (*attr == Attr::Field) {
        c.attr = Attr::FieldInArguments;
        c.op = Op::Truthy;
        return c;
      }
      error("E024", e.pos, "only `field in arguments` is allowed, not '" + name + " in arguments'");
      return std::nullopt;
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
      if (ai.type != Type::Duration && ai.type != Type::Count) {
        error("E041", e.pos, "'" + name + "' cannot be ordered; use ==, != or in",
              "<, <=, > and >= apply to durations and counts");
        return std::nullopt;
      }
      break;
    case Op::InList:
      if (e.values.empty()) {
        error("E042", e.pos, "empty list after 'in'", "an empty set never matches");
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
  if (c.op == Op::InList) {  // sorted, once each, for eval_test()'s binary search
    const bool strings = ai.type == Type::String;
    auto less = [&](const Constant& a, const Constant& b) {
      return strings ? a.str < b.str : a.num < b.num;
    };
    std::sort(c.values.begin(), c.values.end(), less);
    c.values.erase(std::unique(c.values.begin(), c.values.end(),
                               [&](const Constant& a, const Constant& b) {
                                 return !less(a, b) && !less(b, a);
                               }),
                   c.values.end());
  }
  return c;
}

std::optional<Action> Checker::action(const ast::Route& r) {
  Action a;
  auto it = std::find(kRoutes.begin(), kRoutes.end(), r.kind);
  if (it == kRoutes.end()) {
    error("E013", r.pos, "unknown route '" + r.kind + "'", route_help(r.kind));
    return std::nullopt;
  }
  a.route = static_cast<Route>(it - kRoutes.begin());
  std::size_t next = 0;
  if (a.route == Route::Replace || a.route == Route::Degrade) {
    if (a.route == Route::Replace && r.args.empty()) {
      error("E014", r.pos, "replace needs the tool to call instead", "write replace \"tool.name\"");
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

PolicySpec Checker::check_policy(const ast::Policy& p) {
  PolicySpec spec;
  spec.name = p.name;
  spec.file = file_.path;
  spec.pos = p.pos;
  if (p.name.empty()) error("E038", p.name_pos, "a policy needs a name");
  code_ids_.clear();
  for (auto c : kBuiltinCodes) {
    code_ids_.emplace(c, static_cast<std::int64_t>(spec.codes.size()));
    spec.codes.emplace_back(c);
  }
  for (const auto& c : p.codes) {
    if (code_ids_.emplace(c.text, static_cast<std::int64_t>(spec.codes.size())).second)
      spec.codes.push_back(c.text);
    else
      error(
          "E022", c.pos,
          "code '" + c.text + "' is already " +
              (std::find(kBuiltinCodes.begin(), kBuiltinCodes.end(), c.text) != kBuiltinCodes.end()
                   ? "built in"
                   : "declared"));
  }
  if (const std::size_t declared = spec.codes.size() - kBuiltinCodes.size();
      declared > options_.max_codes)
    error("E095", p.pos,
          "policy declares " + std::to_string(declared) + " codes; the limit is " +
              std::to_string(options_.max_codes),
          "split the policy, or raise the limit (--max-codes N, CompileOptions::max_codes)");
  tool_block(p, spec);
  limits_block(p, spec);
  breaker_block(p, spec);
  throttle_block(p, spec);
  backoff(p, spec);

  if (p.rules.size() > options_.max_rules)
    error("E091", p.pos,
          "policy has " + std::to_string(p.rules.size()) + " rules; the limit is " +
              std::to_string(options_.max_rules),
          "split the policy, or raise the limit (--max-rules N, CompileOptions::max_rules)");
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
    if (a) {
      route_options(r.route, spec, *a);
      rule.action = std::move(*a);
    }
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
    if (a) {
      route_options(p.defaults[0].route, spec, *a);
      rule.action = std::move(*a);
    }
    spec.rules.push_back(std::move(rule));
  }
  hit_policy(p, spec);
  waivers(p, spec);
  mappings(p, spec);
  assertions(p, spec);
  sequence_bounds(p, spec);
  lower(spec);
  tests(p, spec);
  return spec;
}

std::vector<PolicySpec> check(const ast::File& file, const Sources& sources,
                              const CompileOptions& options, std::vector<Diagnostic>& diagnostics) {
  return Checker(file, sources, options, diagnostics).run();
}

}  // namespace recourse::detail
