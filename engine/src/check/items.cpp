// Check stage, the policy's other items: `assert sequence` bounds, `test` blocks, `map` lines,
// `waive` and `assert` (docs/language.md sections 11-16). Part of the Checker (checker.hpp).
#include <map>
#include <set>

#include "check/checker.hpp"

namespace recourse::detail {

void Checker::sequence_bounds(const ast::Policy& p, PolicySpec& spec) {
  constexpr std::array<std::string_view, 5> metrics = {"total_wait", "max_delay", "calls",
                                                       "calls_after", "repairs"};
  for (const ast::Bound& b : p.bounds) {
    const std::string& m = b.metric.text;
    if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) {
      error("E032", b.metric.pos, "unknown sequence metric '" + m + "'",
            help_with("metrics: total_wait, max_delay, calls, calls_after CODE, repairs", m,
                      metrics));
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
    out.text = m + (out.code.empty() ? "" : " " + out.code) + " <= " + b.limit.text + b.limit.unit;
    out.file = std::string(sources_.at(b.pos.source).path);
    out.line = b.pos.line;
    out.column = b.pos.column;
    out.offset = b.pos.offset;
    spec.bounds.push_back(std::move(out));
  }
}

void Checker::tests(const ast::Policy& p, PolicySpec& spec) {
  std::vector<std::string> deciders{"default"}, budgets;
  for (const auto& r : spec.rules) deciders.push_back(r.name);
  for (const auto& g : spec.guards) {
    deciders.push_back(g.name);
    if (!g.exhausted.empty()) budgets.push_back(g.exhausted);
  }
  std::map<std::string, ast::Pos> names;
  for (const ast::Test& t : p.tests) {
    if (auto [it, fresh] = names.emplace(t.name, t.name_pos); !fresh)
      error("E034", t.name_pos,
            "test " + recourse::quoted(t.name) + " is defined twice in the policy",
            "first defined at line " + std::to_string(it->second.line));
    TestSpec test;
    test.name = t.name;
    test.file = std::string(sources_.at(t.pos.source).path);
    test.pos = t.pos;
    test.envelope = t.envelope;
    if (const Result<Envelope> read = read_envelope(t.envelope); !read.ok())
      error("E028", t.envelope_pos, "the test's envelope does not read: " + read.message(),
            "write the envelope as JSON, e.g. {\"code\": \"TIMEOUT\", \"retryable\": true}");
    if (t.context) {
      Result<Context> c = read_context(*t.context);
      if (c.ok())
        test.context = std::move(*c);
      else
        error("E028", t.context_pos, "the test's context does not read: " + c.message(),
              "the context takes the keys of `recourse decide --context` (docs/language.md)");
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
      error("E013", e.route.pos, "unknown route '" + e.route.text + "'", route_help(e.route.text));
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

void Checker::mappings(const ast::Policy& p, PolicySpec& spec) {
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
      error("E018", m.protocol.pos, "unknown protocol '" + m.protocol.text + "' in map",
            help_with("map takes http, grpc, jsonrpc or mcp", m.protocol.text, protocols));
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
      error("E035", k.pos,
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

void Checker::waivers(const ast::Policy& p, PolicySpec& spec) {
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

void Checker::assertions(const ast::Policy& p, PolicySpec& spec) {
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
        error("E013", r.pos, "unknown route '" + r.text + "'", route_help(r.text));
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

}  // namespace recourse::detail
