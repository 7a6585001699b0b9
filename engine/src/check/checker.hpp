// The checker's state and its parts, shared by the files of the check stage: check.cpp (values,
// conditions, routes, the policy), blocks.cpp (the tool, limits, breaker, throttle, backoff and
// hit settings) and items.cpp (sequence bounds, tests, maps, waivers, assertions). Internal.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/model.hpp"
#include "model/settings.hpp"
#include "source/location.hpp"
#include "source/nearest.hpp"

namespace recourse::detail {

// Checks one file's policies. Every member reports into `out` and counts errors of the policy
// being checked; run() keeps the specs of the policies with none.
class Checker {
 public:
  Checker(const ast::File& file, const Sources& sources, const CompileOptions& options,
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
  using Op = ast::Op;
  using Kind = ast::Value::Kind;

  static constexpr const auto& kRoutes = Names<Route>::kValues;

  void report(Severity severity, const char* code, ast::Pos pos, std::string message,
              std::string help) {
    detail::report(out_, sources_, pos, severity, code, std::move(message), std::move(help));
    if (severity == Severity::Error) ++errors_;
  }
  void error(const char* code, ast::Pos pos, std::string message, std::string help = {}) {
    report(Severity::Error, code, pos, std::move(message), std::move(help));
  }
  void warning(const char* code, ast::Pos pos, std::string message, std::string help = {}) {
    report(Severity::Warning, code, pos, std::move(message), std::move(help));
  }

  // "did you mean 'X'?" for the candidate nearest `name`, or empty when none is near.
  template <typename Range>
  static std::string did_you_mean(std::string_view name, const Range& candidates) {
    const auto n = nearest(name, candidates);
    return n.empty() ? std::string() : "did you mean '" + std::string(n) + "'?";
  }
  // The help of E013 (unknown route): the nearest route when one is near, else every route.
  static std::string route_help(std::string_view name) {
    const std::string suggestion = did_you_mean(name, kRoutes);
    if (!suggestion.empty()) return suggestion;
    std::string routes;
    for (const auto& r : kRoutes) routes += (routes.empty() ? "" : ", ") + std::string(r);
    return "a route is one of " + routes;
  }
  // `help`, then "; did you mean 'X'?" when a candidate is near `name`: no suggestion rather than
  // an empty one.
  template <typename Range>
  static std::string help_with(std::string help, std::string_view name, const Range& candidates) {
    const std::string suggestion = did_you_mean(name, candidates);
    return suggestion.empty() ? help : help + "; " + suggestion;
  }

  // ---- values -------------------------------------------------------------------------------

  // A duration literal in ms: a number with a unit (ms, s, m, h) that is a whole number of ms.
  std::optional<std::int64_t> duration(const ast::Value& v);

  // A plain integer (a count).
  std::optional<std::int64_t> count(const ast::Value& v);

  // A plain number (a ratio, a factor).
  std::optional<double> real(const ast::Value& v);
  // `true` or `false`.
  std::optional<bool> boolean(const ast::Value& v);
  // A code name the policy knows, as its id.
  std::optional<std::int64_t> code_id(const ast::Value& v, const PolicySpec& spec);

  // ---- conditions ---------------------------------------------------------------------------

  // A literal compared with `attr`, of the attribute's type.
  std::optional<Constant> constant(Attr attr, const ast::Value& v, const PolicySpec& spec);
  // A `when` expression, resolved; nullopt after reporting its errors.
  std::optional<Cond> condition(const ast::Expr& e, const PolicySpec& spec);

  // ---- routes -------------------------------------------------------------------------------

  // `-> ROUTE [target]`: a known route with the target it needs.
  std::optional<Action> action(const ast::Route& r);

  // ---- blocks -------------------------------------------------------------------------------

  // Each setting of `list`, a setting of `block` in the settings table (model/settings.hpp),
  // given once and with the right shape, to `handle`.
  template <typename Handler>
  void settings(const std::vector<ast::Setting>& list, const char* block, Handler&& handle) {
    std::vector<std::string_view> keys, lists, either;
    for (const SettingDef* def : settings_of(block)) {
      keys.push_back(def->key);
      if (def->kind == ValueKind::Names || def->kind == ValueKind::Codes) lists.push_back(def->key);
      if (def->kind == ValueKind::Tools) either.push_back(def->key);
    }
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
      if (std::find(either.begin(), either.end(), s.key) == either.end() &&
          s.is_list != (std::find(lists.begin(), lists.end(), s.key) != lists.end())) {
        error("E037", s.pos,
              s.is_list ? "'" + s.key + "' takes one value, not a list"
                        : "'" + s.key + "' takes a [list]");
        continue;
      }
      if (s.target && s.key != "on_exhausted" && s.key != "on_open") {
        error("E037", s.target->pos, "'" + s.key + "' takes no string after its value",
              "only on_exhausted and on_open name a target: on_exhausted = degrade \"tool\"");
        continue;
      }
      handle(s);
    }
  }

  // A count, duration (ms) or number setting's value in the range its row gives; else E019
  // (with `help`) and nullopt.
  std::optional<double> ranged(const SettingDef& def, const ast::Value& v, std::string help = {});

  // One method per block: its settings into `spec` (blocks.cpp).
  void tool_block(const ast::Policy& p, PolicySpec& spec);
  // on_exhausted / on_open: never retry or repair; `replace` goes to the tool's fallback chain,
  // `degrade "x"` names its target.
  void fallback_route(const ast::Setting& s, const PolicySpec& spec, Action& out);
  void limits_block(const ast::Policy& p, PolicySpec& spec);
  void breaker_block(const ast::Policy& p, PolicySpec& spec);
  // `counts = [CODE, ...]`: known codes (E011), at least one (E037), into ascending ids.
  void breaker_counts(const ast::Setting& s, PolicySpec& spec);
  void throttle_block(const ast::Policy& p, PolicySpec& spec);
  void backoff(const ast::Policy& p, PolicySpec& spec);
  /// One backoff's kind and parameters (the policy's line or a named one) into `out`.
  void backoff_params(const ast::Backoff& b, Backoff& out);
  /// A route's `with backoff NAME attempts N`: the schedule resolved, the cap in range.
  void route_options(const ast::Route& r, const PolicySpec& spec, Action& a);

  // ---- policy -------------------------------------------------------------------------------

  // One policy: codes, blocks, rules, default, then the other items (items.cpp), lowered.
  PolicySpec check_policy(const ast::Policy& p);

  // `assert sequence METRIC [CODE] <= LIMIT`: a known metric, a code only for calls_after, a
  // duration for the wait metrics and a count for the others.
  void sequence_bounds(const ast::Policy& p, PolicySpec& spec);

  // `test` blocks: the context must read (strictly, as `recourse decide` reads it), the envelope
  // must be JSON, and the expectation must name a route, rules and budgets the policy has.
  void tests(const ast::Policy& p, PolicySpec& spec);

  // `map PROTOCOL KEY -> CODE` (adapters.hpp): the key must be one the protocol can send, the
  // code one the policy knows, and each (protocol, key) is mapped once.
  void mappings(const ast::Policy& p, PolicySpec& spec);

  // `hit first|safest|unique` (blocks.cpp).
  void hit_policy(const ast::Policy& p, PolicySpec& spec);
  // `waive INVARIANT because "..."`: a known invariant, waived once.
  void waivers(const ast::Policy& p, PolicySpec& spec);
  // `assert never|always ROUTES when ...`.
  void assertions(const ast::Policy& p, PolicySpec& spec);

  const ast::File& file_;
  const Sources& sources_;
  const CompileOptions& options_;
  std::vector<Diagnostic>& out_;
  std::size_t errors_ = 0;
  // The codes of the policy being checked (PolicySpec::codes) and their ids.
  std::unordered_map<std::string, std::int64_t> code_ids_;
};

}  // namespace recourse::detail
