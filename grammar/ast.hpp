// The abstract syntax tree of a .recourse file, with source positions.
//
// Stage: produced by grammar/parse.cpp from the PEGTL parse tree; read by the checker
// (engine/src/check/check.cpp), the compiler, the reference interpreter and the formatter. The AST
// keeps the author's spelling (names, units) so the checker can point at the exact token; all
// meaning (which attribute, which code) is resolved by the checker, not here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace recourse::ast {

/// A place in one source file: its 1-based line and character column, and its byte offset
/// (lines.hpp says what ends a line and what a column counts); `source` is the file's index
/// among the sources compiled together (a policy that extends a base holds positions in both
/// files). Line 0 is no position.
struct Pos {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::uint32_t source = 0;
  std::size_t offset = 0;
};

/// A literal as written: an identifier, a "string", or a number with an optional unit.
struct Value {
  enum class Kind { Ident, String, Number };
  Kind kind = Kind::Ident;
  std::string text;  ///< identifier or unescaped string; for numbers the digits without the unit
  std::string unit;  ///< "", "ms", "s", "m" or "h" (numbers only)
  Pos pos;
};

/// `key = value` or `key = [v1, v2]` inside a tool or limits block, or `key value` after backoff.
/// A string may follow the value: `on_exhausted = degrade "cache"` names the route's target.
struct Setting {
  std::string key;
  Pos pos;
  bool is_list = false;
  std::vector<Value> values;    ///< one value unless is_list
  std::optional<Value> target;  ///< the string after the value, if any
};

/// Comparison operators of a test. `Truthy` is a bare attribute (`retryable`, `suggestion`).
enum class Op { Eq, Ne, Lt, Le, Gt, Ge, InList, InArguments, IsAbsent, IsPresent, Truthy };

/// A condition. And/Or/Not own their operands in `children`; Test compares one attribute.
struct Expr {
  enum class Kind { And, Or, Not, Test };
  Kind kind = Kind::Test;
  Pos pos;
  std::vector<Expr> children;
  std::string attr;           ///< Test: the attribute as written
  Op op = Op::Truthy;         ///< Test: the operator
  std::vector<Value> values;  ///< Test: one value for comparisons, several for `in [..]`
};

/// The route a rule takes, e.g. `replace "payments.lookup" "reason"`.
struct Route {
  std::string kind;  ///< as written; the checker resolves it
  Pos pos;
  std::vector<Value> args;        ///< the strings after the route kind (target and/or reason)
  std::optional<Value> schedule;  ///< `with backoff NAME`: the named backoff a retry waits by
  std::optional<Value> attempts;  ///< `with ... attempts N`: this rule's own cap on attempts
};

/// `rule NAME [when COND] -> ROUTE` (a missing `when` matches every input).
struct Rule {
  std::string name;
  Pos pos;
  std::optional<Expr> when;
  Route route;
};

/// `backoff KIND key value ...`, or a named one: `backoff NAME { KIND key value ... }`.
struct Backoff {
  std::string name;  ///< empty for the policy's backoff line
  Pos name_pos;
  std::string kind;
  Pos pos;
  Pos kind_pos;
  std::vector<Setting> params;
};

/// `assert never|always ROUTES when COND`.
struct Assertion {
  Pos pos;
  Value kind;                 ///< never | always
  std::vector<Value> routes;  ///< one route, or a list
  Expr when;
};

/// `assert sequence METRIC [CODE] <= LIMIT`: a bound over the failures of one operation, checked
/// by `recourse fuzz` (no proof over the table covers sequences).
struct Bound {
  Pos pos;
  Value metric;
  std::optional<Value> code;
  Value limit;
};

/// `waive INVARIANT "reason"`.
struct Waiver {
  Pos pos;
  Value name;
  std::string reason;
};

/// `map PROTOCOL KEY -> CODE`: a per-tool override of an adapter's mapping (adapters.hpp).
struct Mapping {
  Pos pos;
  Value protocol;  ///< http, grpc, jsonrpc or mcp
  Value key;       ///< a status or error code (number or name), or an error type ("string")
  Value code;      ///< the code to give instead
};

/// What a `test` block expects; empty members are not checked.
struct Expectation {
  Pos pos;
  Value route;                     ///< route kind as written
  std::optional<Value> target;     ///< replace/degrade target
  std::optional<Value> rule;       ///< the rule, guard or "default" that decides
  std::optional<Value> delay_min;  ///< `delay D` or `delay D..MAX`
  std::optional<Value> delay_max;  ///< MAX of `delay D..MAX`
  std::optional<Value> exhausted;  ///< the budget that ran out
  std::optional<Pos> repeated;     ///< where a clause was given a second time
};

/// `test "name" { envelope {json} [context {json}] expect ... }`: one decision the policy must
/// make. The JSON texts are kept verbatim and read by the same readers as `recourse decide`.
struct Test {
  Pos pos;
  std::string name;
  Pos name_pos;
  std::string envelope;
  Pos envelope_pos;
  std::optional<std::string> context;
  Pos context_pos;
  Expectation expect;
};

/// One item of a policy in source order (the formatter prints items in the author's order):
/// its kind, where it starts, and the entries it added to the policy's vector of that kind
/// (settings for blocks, codes for `codes`, one entry otherwise; `breaker {}` adds none).
struct Item {
  enum class Kind {
    Tool,
    Limits,
    Breaker,
    Throttle,
    Backoff,
    Schedule,
    Codes,
    Rule,
    Default,
    Assert,
    Bound,
    Waive,
    Map,
    Hit,
    Test,
    Other
  };
  Kind kind = Kind::Other;
  Pos pos;
  std::size_t first = 0;
  std::size_t count = 0;
};

/// One `policy "name" { ... }` declaration.
struct Policy {
  std::string name;
  Pos pos;
  Pos name_pos;
  std::vector<Setting> tool;       ///< settings of every `tool {}` block, in order
  std::vector<Setting> limits;     ///< settings of every `limits {}` block, in order
  bool has_breaker = false;        ///< a `breaker {}` block is present (even empty: defaults)
  bool has_throttle = false;       ///< a `throttle {}` block is present
  std::vector<Setting> breaker;    ///< settings of every `breaker {}` block
  std::vector<Setting> throttle;   ///< settings of every `throttle {}` block
  std::vector<Backoff> backoff;    ///< every backoff line (the checker allows one)
  std::vector<Backoff> schedules;  ///< every named backoff, `backoff NAME { ... }`
  std::vector<Value> codes;        ///< declared codes, every `codes {}` block
  std::vector<Rule> rules;
  std::vector<Rule> defaults;  ///< `default -> ROUTE` lines (the checker wants exactly one)
  std::vector<Assertion> assertions;
  std::vector<Bound> bounds;  ///< `assert sequence` lines
  std::vector<Waiver> waivers;
  std::vector<Value> hit;         ///< `hit` lines (the checker allows one)
  std::vector<Mapping> mappings;  ///< `map` lines
  std::vector<Test> tests;        ///< `test` blocks (not inherited by extending policies)
  std::vector<Item> items;        ///< every item above, in source order
  std::optional<Value> base;      ///< `extends "base"`: the policy whose items this one inherits
};

/// A parsed file: an optional language version and its policies.
struct File {
  std::string path;
  std::optional<Value> version;
  std::vector<Policy> policies;
};

}  // namespace recourse::ast
