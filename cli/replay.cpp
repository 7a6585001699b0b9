// `recourse replay`: a JSONL trace of failed tool calls through the policies.
//
// A line is {"tool", "envelope", "context"} (a failure) or {"tool", "outcome": "success",
// "context"}; a failure may carry "raw": {"protocol": "http", ...} (adapters.hpp) instead of an
// envelope. Lines whose context names a workflowId carry state across the trace: the
// workflow's counters (attempt, repairs, repeats, cost, elapsed since the operation's first call)
// replace the line's own, and the per-tool health (circuit breaker, retry tokens) is shared by
// every workflow of the run. Time comes from each line ("now" or context.nowMs, in ms), never
// from the clock, so a replay is deterministic. Lines without a workflowId decide as they are.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "recourse/state.hpp"

namespace recourse::cli {
namespace {

using json = nlohmann::ordered_json;

struct Summary {
  int decisions = 0, successes = 0, bad = 0, retries_avoided = 0;
  std::map<std::string, int> routes, warnings, exhausted;
};

struct Line {
  Envelope envelope;
  bool envelope_ok = true;
  Context context;
  bool success = false;
  std::int64_t now_ms = 0;
};

// Parses one trace line; prints the error and returns nullopt when it is not a trace line.
std::optional<Line> parse_line(const std::string& text, const std::string& where,
                               const Bundle& bundle) {
  auto bad = [&](const std::string& why) {
    std::cerr << fmt::format("{}: error: {}\n", where, why);
    return std::nullopt;
  };
  if (nesting(text) > kMaxTraceLineDepth || text.find('\0') != std::string::npos)
    return bad(fmt::format("trace line nested deeper than {} levels or holding a NUL byte",
                           kMaxTraceLineDepth));
  // The envelope (or a raw form, for its adapter) goes to its reader as written; the rest of the
  // line is parsed here.
  const auto span = raw_member(text, "envelope");
  const auto raw_span = raw_member(text, "raw");
  const std::string_view raw =
      span || !raw_span
          ? std::string_view()
          : std::string_view(text).substr(raw_span->first, raw_span->second - raw_span->first);
  std::string rest = text;
  if (span) rest.replace(span->first, span->second - span->first, "{}");
  if (!raw.empty()) rest.replace(raw_span->first, raw.size(), "{}");
  const json entry = json::parse(rest, nullptr, false);
  Line line;
  line.success = entry.is_object() && entry.value("outcome", "") == "success";
  if (entry.is_discarded() || !entry.is_object() || (!span && raw.empty() && !line.success))
    return bad(
        "not a trace line {\"tool\", \"envelope\" or \"raw\", \"context\"} or {\"tool\", "
        "\"outcome\": \"success\"}");
  if (span) {
    EnvelopeResult e =
        read_envelope(std::string_view(text).substr(span->first, span->second - span->first));
    line.envelope = std::move(e.envelope);
    line.envelope_ok = e.ok;
  }
  json ctx = entry.value("context", json::object());
  if (!ctx.is_object()) return bad("context is not an object");
  if (entry.contains("tool") && !ctx.contains("tool")) ctx["tool"] = entry["tool"];
  if (entry.contains("now") && !ctx.contains("nowMs")) ctx["nowMs"] = entry["now"];
  ContextResult c = read_context(ctx.dump());
  if (!c.ok) {
    for (const auto& d : c.errors)
      std::cerr << fmt::format("{}: error[{}]: {}\n", where, d.code, d.message);
    return std::nullopt;
  }
  line.context = std::move(c.context);
  line.now_ms = line.context.now_ms.value_or(0);
  if (!raw.empty()) {  // {"protocol": "http", ...}: its adapter, with the tool's `map` overrides
    AdapterResult r = adapt("", raw, &line.context, &bundle, std::nullopt);
    line.envelope = std::move(r.envelope);
    line.envelope_ok = r.ok;
  }
  return line;
}

std::string delay_text(const Decision& d) {
  return d.route == Route::Retry ? fmt::format("{}ms", d.delay_ms) : "-";
}

}  // namespace

int run_replay(const Options& o) {
  auto bundle = load(o.policies, o);
  if (!bundle) return 1;
  if (o.paths.empty()) return std::cerr << "error: replay needs a trace file (JSONL)\n", 1;
  std::string error;
  auto text = read_text(o.paths.front(), kMaxTraceBytes, error);
  if (!text) return std::cerr << "error: " << error << "\n", 1;

  std::shared_ptr<Store> store;  // --state: shared with other processes (default: this run's)
  if (!o.state.empty() && !(store = open_state(o.state))) return 1;
  std::map<std::string, Workflow> workflows;
  Health health(store);
  Summary sum;
  json rows = json::array();
  if (o.format == Format::Text)
    std::cout << fmt::format("{:>4}  {:<26} {:<16} {:>3} {:<9} {:>8}  {:<22} {}\n", "#", "tool",
                             "code", "att", "route", "delay", "rule", "warnings");
  std::istringstream in(*text);
  std::string raw;
  for (int number = 1; std::getline(in, raw); ++number) {
    if (raw.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto line = parse_line(raw, fmt::format("{}:{}", o.paths.front(), number), *bundle);
    if (!line) {
      ++sum.bad;
      continue;
    }
    Context& c = line->context;
    const Policy* policy = bundle->find(c.tool);
    Workflow* wf = c.workflow_id.empty()
                       ? nullptr
                       : &workflows.try_emplace(c.workflow_id, store, c.workflow_id).first->second;
    if (line->success) {
      ++sum.successes;
      if (wf) wf->record_success(c);
      if (wf && policy) health.record_success(*policy, c, line->now_ms);
      continue;
    }
    if (wf && policy) before_decision(wf, health, *policy, c, line->envelope, line->now_ms);
    const Decision d =
        line->envelope_ok ? bundle->decide(line->envelope, c) : bundle->unreadable(c);
    if (wf && policy) after_decision(wf, health, *policy, c, d);
    ++sum.decisions;
    const json out = json::parse(to_json(d, line->envelope));
    ++sum.routes[out["route"].get<std::string>()];
    for (const auto& w : out["warnings"]) ++sum.warnings[w["kind"].get<std::string>()];
    if (!d.exhausted.empty()) ++sum.exhausted[std::string(d.exhausted)];
    if (line->envelope.retryable.value_or(false) && d.route != Route::Retry) ++sum.retries_avoided;
    if (o.format == Format::Json) {
      rows.push_back(
          {{"line", number}, {"tool", c.tool}, {"workflow", c.workflow_id}, {"decision", out}});
      continue;
    }
    std::string kinds;
    for (const auto& w : out["warnings"])
      kinds += (kinds.empty() ? "" : ",") + w["kind"].get<std::string>();
    std::cout << fmt::format("{:>4}  {:<26} {:<16} {:>3} {:<9} {:>8}  {:<22} {}\n", number,
                             c.tool.substr(0, 26), line->envelope.code.value_or("-").substr(0, 16),
                             c.attempt, to_string(d.route), delay_text(d),
                             std::string(d.rule).substr(0, 22), kinds);
  }
  if (o.format == Format::Json) {
    json summary = {{"decisions", sum.decisions},
                    {"successes", sum.successes},
                    {"badLines", sum.bad},
                    {"routes", sum.routes},
                    {"retriesAvoided", sum.retries_avoided},
                    {"exhausted", sum.exhausted},
                    {"warnings", sum.warnings}};
    std::cout << json{{"decisions", rows}, {"summary", summary}}.dump(
                     2, ' ', false, json::error_handler_t::replace)
              << "\n";
    return sum.bad > 0 ? 1 : 0;
  }
  auto list = [](const std::map<std::string, int>& m) {
    std::string s;
    for (const auto& [k, n] : m) s += fmt::format(" {} {}", k, n);
    return s.empty() ? std::string(" none") : s;
  };
  std::cout << fmt::format("\n{} decisions, {} successes, {} bad lines\n", sum.decisions,
                           sum.successes, sum.bad)
            << "routes:" << list(sum.routes) << "\n"
            << fmt::format("retries avoided (envelope said retryable, policy did not retry): {}\n",
                           sum.retries_avoided)
            << "budgets exhausted:" << list(sum.exhausted) << "\n"
            << "warnings:" << list(sum.warnings) << "\n";
  return sum.bad > 0 ? 1 : 0;
}

}  // namespace recourse::cli
