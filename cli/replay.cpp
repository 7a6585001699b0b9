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

#include "cli.hpp"
#include "trace.hpp"

namespace recourse::cli {
namespace {

using json = nlohmann::ordered_json;

struct Summary {
  int decisions = 0, successes = 0, bad = 0, retries_avoided = 0;
  std::map<std::string, int> routes, warnings, exhausted;
};

}  // namespace

int run_replay(const Options& o) {
  auto bundle = load(o.policies, o, false);
  if (!bundle) return 1;
  if (o.paths.empty()) return std::cerr << "error: replay needs a trace file (JSONL)\n", 1;
  LineReader reader(o.max_line_bytes, o.max_trace_bytes);
  if (!reader.open(o.paths.front())) return std::cerr << "error: " << reader.error() << "\n", 1;

  DecisionLogFile log;
  if (!log.open(o.log)) return 1;
  std::shared_ptr<Store> store;  // --state: shared with other processes (default: this run's)
  if (!o.state.empty() && !(store = open_state(o.state))) return 1;
  TraceState state(*bundle, store);
  Summary sum;
  // JSON: {"decisions": [...], "summary": {...}} as dump(2) writes it, one decision at a time.
  auto indented = [](const json& value, const char* indent) {
    std::string text = value.dump(2, ' ', false, json::error_handler_t::replace), out;
    for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
      end = std::min(text.find('\n', at), text.size());
      out += (at ? std::string("\n") + indent : std::string()) + text.substr(at, end - at);
    }
    return out;
  };
  if (o.format == Format::Json) std::cout << "{\n  \"decisions\": [";
  bool first_row = true, failed = false;
  if (o.format == Format::Text)
    std::cout << fmt::format("{:>4}  {:<26} {:<16} {:>3} {:<9} {:>8}  {:<22} {}\n", "#", "tool",
                             "code", "att", "route", "delay", "rule", "warnings");
  std::string raw;
  for (int number = 1;; ++number) {
    const LineReader::Result read = reader.next(raw);
    if (read == LineReader::Result::End) break;
    if (read == LineReader::Result::TooLarge || read == LineReader::Result::Failed) {
      std::cerr << "error: " << reader.error() << "\n";
      failed = true;
      break;
    }
    if (read == LineReader::Result::TooLong) {
      std::cerr << fmt::format(
          "{}:{}: error: trace line is longer than {} bytes (--max-line-bytes)\n", o.paths.front(),
          number, o.max_line_bytes);
      ++sum.bad;
      continue;
    }
    if (raw.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto line =
        parse_trace_line(raw, fmt::format("{}:{}", o.paths.front(), number), *bundle, o.from);
    if (!line) {
      ++sum.bad;
      continue;
    }
    const std::optional<Decision> decided = state.step(*line);
    if (!decided) {
      ++sum.successes;
      continue;
    }
    const Decision& d = *decided;
    const Context& c = line->context;
    log.write(line->envelope, c, d);
    ++sum.decisions;
    ++sum.routes[to_string(d.route)];
    // The warnings' kinds as the decision's JSON lists them: the envelope's, then the decision's.
    std::string kinds;
    auto count = [&](const std::string& kind) {
      ++sum.warnings[kind];
      kinds += (kinds.empty() ? "" : ",") + kind;
    };
    for (const auto& w : line->envelope.warnings) count(w.kind);
    for (const auto& [bit, kind] : kDecisionWarningKinds)
      if (d.warnings & bit) count(kind);
    if (!d.exhausted.empty()) ++sum.exhausted[std::string(d.exhausted)];
    if (line->envelope.retryable.value_or(false) && d.route != Route::Retry) ++sum.retries_avoided;
    if (o.format == Format::Json) {
      const json row = {{"line", number},
                        {"tool", c.tool},
                        {"workflow", c.workflow_id},
                        {"decision", json::parse(to_json(d, line->envelope))}};
      std::cout << (first_row ? "\n    " : ",\n    ") << indented(row, "    ");
      first_row = false;
      continue;
    }
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
    std::cout << (first_row ? "]" : "\n  ]") << ",\n  \"summary\": " << indented(summary, "  ")
              << "\n}\n";
    return failed || sum.bad > 0 || !log.close() ? 1 : 0;
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
  return failed || sum.bad > 0 || !log.close() ? 1 : 0;
}

}  // namespace recourse::cli
