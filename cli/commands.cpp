// The subcommands: check, decide, explain, replay, compile --dump.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"

namespace recourse::cli {
namespace {

using json = nlohmann::ordered_json;

int fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

// Reads the envelope JSON (file or stdin) and the context JSON (file, or empty context). With
// --from the input is a raw form, read through its adapter once the context (tool, now) is known
// (read_failure()).
bool read_inputs(const Options& o, const Bundle& bundle, Envelope& envelope, Context& context) {
  std::string error;
  auto text = read_text(o.envelope, kMaxEnvelopeFileBytes, error);
  if (!text) return fail(error), false;
  // An envelope needs no context, and its errors come first; a raw form's adapter needs it.
  std::optional<Result<Adapted>> r;
  if (o.from.empty() && !(r = read_failure(o.from, *text, context, bundle))->ok())
    return fail(r->message()), false;
  if (o.context.empty()) {
    std::cerr << "warning: no --context: deciding for tool \"\" (the \"*\" policy), attempt 1, "
                 "side effect unknown\n";
  } else {
    auto ctx_text = read_text(o.context, kMaxContextBytes, error);
    if (!ctx_text) return fail(error), false;
    Result<Context> c = read_context(*ctx_text);
    if (!c.ok()) {
      print_diagnostics(c.diagnostics(), o.format, std::cerr);
      return false;
    }
    context = std::move(*c);
  }
  if (!o.from.empty() && !(r = read_failure(o.from, *text, context, bundle))->ok())
    return fail(r->message()), false;
  envelope = std::move((*r)->envelope);
  return true;
}

}  // namespace

int run_check(const Options& o) {
  const Result<Bundle> r = compile_paths(o.paths, o.compile);
  print_diagnostics(r.diagnostics(), o.format, std::cout);
  const bool failed = !r.ok() || has_errors(r.diagnostics(), o.strict);
  if (o.format == Format::Text) {
    std::size_t errors = 0, warnings = 0;
    for (const auto& d : r.diagnostics())
      (d.severity == Severity::Error ? errors : warnings) += d.severity != Severity::Note;
    auto count = [](std::size_t n, const char* one, const char* many) {
      return fmt::format("{} {}", n, n == 1 ? one : many);
    };
    std::cout << fmt::format("{}: {}, {}\n",
                             r.ok() ? count(r->policies().size(), "policy", "policies") + " checked"
                                    : std::string("nothing compiled"),
                             count(errors, "error", "errors"),
                             count(warnings, "warning", "warnings"));
  }
  return failed ? 1 : 0;
}

int run_decide(const Options& o, bool explain) {
  auto bundle = load(o.policies, o, false);
  if (!bundle) return 1;
  Envelope envelope;
  Context context;
  if (!read_inputs(o, *bundle, envelope, context)) return 1;
  // --state: the call is counted, and the decision made and recorded, against the shared state.
  std::shared_ptr<Store> store;
  if (!o.state.empty() && !(store = open_state(o.state))) return 1;
  std::optional<Workflow> workflow;
  std::optional<Health> health;
  const Policy* stateful = store ? bundle->find(context.tool) : nullptr;
  if (stateful) {
    if (!context.operation_id.empty()) workflow.emplace(store, context.workflow_id);
    health.emplace(store);
    before_decision(workflow ? &*workflow : nullptr, *health, *stateful, context, envelope,
                    context.now_ms.value_or(wall_ms()));
  }
  if (!explain) {
    DecisionLogFile log;
    if (!log.open(o.log, log_options(o))) return 1;
    const Decision d = bundle->decide(envelope, context);
    if (stateful) after_decision(workflow ? &*workflow : nullptr, *health, *stateful, context, d);
    std::cout << to_json(d, envelope) << "\n";
    log.write(envelope, context, d);
    return log.close() ? 0 : 1;
  }
  const Policy* policy = bundle->find(context.tool);
  if (!policy)
    return fail(fmt::format("no policy for tool \"{}\" and no \"*\" policy", context.tool));
  const Explanation x = recourse::explain(*policy, envelope, context);
  if (o.format == Format::Json) {
    std::cout << json::parse(to_json(x, envelope)).dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("policy \"{}\" {}\n", policy->name(), policy->hash());
  for (const auto& r : x.rules) {
    std::cout << fmt::format("  {} rule {} (line {})\n", r.matched ? "MATCH" : "no   ", r.rule,
                             r.line);
    for (const auto& t : r.tests)
      std::cout << fmt::format("        {:<5} {}   [{}]\n", t.result ? "true" : "false", t.test,
                               t.value);
  }
  if (!x.guard.empty())
    std::cout << fmt::format("  guard {} overrides the rule's route: {}\n", x.guard,
                             x.decision.reason);
  std::cout << fmt::format("decision: {} (delay {}, rule {})\n", to_string(x.decision.route),
                           delay_text(x.decision), x.decision.rule);
  if (x.decision.backoff_attempt)
    std::cout << fmt::format(
        "  backoff restarted after the server's pushback at attempt {} (gRFC A6): step {} of "
        "attempt {}\n",
        context.pushback_attempt, x.decision.backoff_attempt, x.decision.attempt);
  std::cout << to_json(x.decision, envelope) << "\n";
  return 0;
}

int run_compile(const Options& o) {
  auto bundle = load(o.paths, o);
  if (!bundle) return 1;
  for (const auto& p : bundle->policies()) {
    if (o.dump)
      std::cout << p.dump();
    else
      std::cout << fmt::format("policy \"{}\" {}\n", p.name(), p.hash());
  }
  return 0;
}

int run_diff(const Options& o) {
  std::string error;
  auto before = read_text(o.before, o.compile.max_source_bytes, error);
  if (!before) return fail(error);
  auto after = read_text(o.after, o.compile.max_source_bytes, error);
  if (!after) return fail(error);
  const Result<PolicyDiff> compared =
      diff({o.before, *before}, {o.after, *after}, o.name, o.compile);
  if (!compared.diagnostics().empty())
    print_diagnostics(compared.diagnostics(), o.format, std::cerr);
  if (!compared.ok()) return 1;
  const PolicyDiff& r = *compared;
  // One side of a change: `route "target" (rule)`, with the key directive and the delays when
  // they are what differs.
  auto side = [](const DecisionChange& c, bool after) {
    const Route route = after ? c.after_route : c.before_route;
    const std::string& target = after ? c.after_target : c.before_target;
    std::string out = to_string(route);
    if (!target.empty()) out += fmt::format(" \"{}\"", target);
    out += fmt::format(" ({})", after ? c.after_rule : c.before_rule);
    if (c.before_key != c.after_key)
      out += fmt::format(" key {}", to_string(after ? c.after_key : c.before_key));
    const bool delays = c.before_delay_min_ms != c.after_delay_min_ms ||
                        c.before_delay_max_ms != c.after_delay_max_ms;
    if (delays && route == Route::Retry)
      out += fmt::format(" delay {}..{}ms", after ? c.after_delay_min_ms : c.before_delay_min_ms,
                         after ? c.after_delay_max_ms : c.before_delay_max_ms);
    return out;
  };
  if (o.format == Format::Json) {
    auto decision = [](Route route, const std::string& target, const std::string& rule,
                       const std::string& exhausted, KeyDirective key, std::int64_t min_ms,
                       std::int64_t max_ms) {
      return json{{"rule", rule},
                  {"route", to_string(route)},
                  {"target", target},
                  {"exhausted", exhausted},
                  {"idempotencyKey", to_string(key)},
                  {"delayMs", {{"min", min_ms}, {"max", max_ms}}}};
    };
    json changes = json::array();
    for (const auto& c : r.changes)
      changes.push_back(
          {{"before", decision(c.before_route, c.before_target, c.before_rule, c.before_exhausted,
                               c.before_key, c.before_delay_min_ms, c.before_delay_max_ms)},
           {"after", decision(c.after_route, c.after_target, c.after_rule, c.after_exhausted,
                              c.after_key, c.after_delay_min_ms, c.after_delay_max_ms)},
           {"example", c.example}});
    json settings = json::array();
    for (const auto& s : r.settings)
      settings.push_back({{"setting", s.setting}, {"before", s.before}, {"after", s.after}});
    std::cout << json{{"changes", changes}, {"settings", settings}}.dump(2) << "\n";
  } else if (r.changes.empty() && r.settings.empty()) {
    std::cout << "no decision changes\n";
  } else {
    for (const auto& s : r.settings)
      std::cout << fmt::format("setting {}: {} -> {}\n", s.setting, s.before, s.after);
    for (const auto& c : r.changes)
      std::cout << fmt::format("{} -> {}\n    e.g. {}\n", side(c, false), side(c, true),
                               c.example.empty() ? "(no concrete input found)" : c.example);
    std::cout << fmt::format("{} region{} of inputs change decision{}\n", r.changes.size(),
                             r.changes.size() == 1 ? "" : "s",
                             r.settings.empty()
                                 ? std::string()
                                 : fmt::format(", {} setting{} changed", r.settings.size(),
                                               r.settings.size() == 1 ? "" : "s"));
  }
  return r.changes.empty() && r.settings.empty() ? 0 : 1;
}

}  // namespace recourse::cli
