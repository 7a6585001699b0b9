// `recourse replay`: a JSONL trace of failed tool calls through the policies.
//
// A line is {"tool", "envelope", "context"} (a failure) or {"tool", "outcome": "success",
// "context"}; a failure may carry "raw": {"protocol": "http", ...} (adapters.hpp) instead of an
// envelope. Lines whose context names a workflowId carry state across the trace: the
// workflow's counters (attempt, repairs, repeats, cost, elapsed since the operation's first call)
// replace the line's own, and the per-tool health (circuit breaker, retry tokens) is shared by
// every workflow of the run. Time comes from each line ("now" or context.nowMs, in ms), never
// from the clock, so a replay is deterministic. Lines without a workflowId decide as they are.
// A line may also be a decision-log record (engine.hpp): its input is decided as it was logged
// (a redacted record with the steering categories logged beside its redacted texts, counted as
// redacted); an operator's breaker command in the same log (`recourse breaker --log`) is counted
// and skipped.
//
// --shadow CANDIDATE decides every failure of a tool the candidate policies name with them too
// (the tools they lack are not shadowed), with the context the
// live decision saw and without touching the state (engine.hpp, "Shadow policies"), and prints
// where they disagree: one row per policy and pair of rules, with its count, what differed and
// the first line it happened on, whose envelope and context `recourse decide` reproduces.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "cli.hpp"
#include "trace.hpp"

namespace recourse::cli {
namespace {

using json = nlohmann::ordered_json;

struct Summary {
  int decisions = 0, successes = 0, bad = 0, retries_avoided = 0, records = 0, redacted = 0,
      commands = 0, shadowed = 0;
  std::map<std::string, int> routes, warnings, exhausted;
};

// The disagreements of one policy and pair of rules, with the first as an example.
struct Disagreement {
  int count = 0;
  std::uint32_t differences = 0;  // every ShadowDifference seen
  int line = 0;
  bool redacted = false;  // the example is a redacted decision-log record
  std::string envelope, context, live_route, candidate_route;
};
// (policy, live rule, candidate rule) -> disagreements
using ShadowTable = std::map<std::tuple<std::string, std::string, std::string>, Disagreement>;

std::string difference_names(std::uint32_t bits) {
  std::string out;
  for (const auto& [bit, name] : kShadowDifferenceNames)
    if (bits & bit) out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

json shadow_json(const ShadowTable& table, int decisions) {
  int disagreements = 0;
  json rows = json::array();
  for (const auto& [key, d] : table) {
    disagreements += d.count;
    rows.push_back({{"policy", std::get<0>(key)},
                    {"liveRule", std::get<1>(key)},
                    {"candidateRule", std::get<2>(key)},
                    {"count", d.count},
                    {"differences", difference_names(d.differences)},
                    {"example",
                     {{"line", d.line},
                      {"redacted", d.redacted},
                      {"liveRoute", d.live_route},
                      {"candidateRoute", d.candidate_route},
                      {"envelope", json::parse(d.envelope)},
                      {"context", json::parse(d.context)}}}});
  }
  return {{"decisions", decisions}, {"disagreements", disagreements}, {"rules", rows}};
}

void print_shadow(const ShadowTable& table, int decisions, const std::vector<std::string>& paths) {
  int disagreements = 0;
  for (const auto& [key, d] : table) disagreements += d.count;
  std::string names;
  for (const auto& p : paths) names += (names.empty() ? "" : " ") + p;
  std::cout << fmt::format("\nshadow {}: {} of {} shadowed decisions disagree\n", names,
                           disagreements, decisions);
  if (table.empty()) return;
  const char* row = "{:<20} {:<18} {:<18} {:>5}  {:<30} {}\n";
  std::cout << fmt::format(row, "policy", "live rule", "candidate rule", "count", "differences",
                           "example");
  for (const auto& [key, d] : table)
    std::cout << fmt::format(row, std::get<0>(key), std::get<1>(key), std::get<2>(key), d.count,
                             difference_names(d.differences), fmt::format("line {}", d.line));
  std::cout << "examples (recourse decide --policy CANDIDATE --envelope E --context C gives the "
               "candidate's route):\n";
  for (const auto& [key, d] : table) {
    std::cout << fmt::format("  line {}: {} -> {}\n    envelope {}\n    context  {}\n", d.line,
                             d.live_route, d.candidate_route, d.envelope, d.context);
    if (d.redacted)
      std::cout << "    note: a redacted decision-log record, decided with the steering "
                   "categories logged for its texts as received; recourse decide scans the "
                   "redacted texts instead\n";
  }
}

}  // namespace

int run_replay(const Options& o) {
  auto bundle = load(o.policies, o, false);
  if (!bundle) return 1;
  std::optional<Bundle> candidate;
  if (!o.shadow.empty() && !(candidate = load(o.shadow, o, false))) return 1;
  ShadowTable shadow;
  if (o.paths.empty()) return std::cerr << "error: replay needs a trace file (JSONL)\n", 1;
  LineReader reader(o.max_line_bytes, o.max_trace_bytes);
  if (!reader.open(o.paths.front())) return std::cerr << "error: " << reader.error() << "\n", 1;

  DecisionLogFile log;
  if (!log.open(o.log, log_options(o))) return 1;
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
    if (line->command) {
      ++sum.commands;
      continue;
    }
    const std::optional<Decision> decided = state.step(*line);
    if (!decided) {
      ++sum.successes;
      continue;
    }
    const Decision& d = *decided;
    const Context& c = line->context;
    std::optional<Decision> other;
    if (candidate && candidate->find(c.tool))
      other = line->envelope_ok ? candidate->decide(line->envelope, c) : candidate->unreadable(c);
    sum.shadowed += other.has_value();
    const std::uint32_t differences = other ? shadow_differences(d, *other) : 0;
    if (differences) {
      Disagreement& row =
          shadow[{std::string(d.policy), std::string(d.rule), std::string(other->rule)}];
      if (row.count++ == 0) {
        row.line = number;
        row.redacted = line->redacted;
        row.envelope = to_json(line->envelope);
        row.context = to_json(c);
        row.live_route = to_string(d.route);
        row.candidate_route = to_string(other->route);
      }
      row.differences |= differences;
    }
    log.write(line->envelope, c, d, differences ? &*other : nullptr, differences);
    sum.records += line->record;
    sum.redacted += line->redacted;
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
      json row = {{"line", number},
                  {"tool", c.tool},
                  {"workflow", c.workflow_id},
                  {"decision", json::parse(to_json(d, line->envelope))}};
      if (line->redacted) row["redacted"] = true;
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
    if (sum.records) summary["logRecords"] = sum.records;
    if (sum.redacted) summary["redactedRecords"] = sum.redacted;
    if (sum.commands) summary["breakerCommands"] = sum.commands;
    if (candidate) summary["shadow"] = shadow_json(shadow, sum.shadowed);
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
  if (sum.records)
    std::cout << fmt::format("{} of the lines were decision-log records, decided as logged{}\n",
                             sum.records,
                             sum.redacted ? fmt::format(" ({} redacted: their texts as the log "
                                                        "kept them, their steering as logged)",
                                                        sum.redacted)
                                          : std::string());
  if (sum.commands)
    std::cout << fmt::format("{} breaker commands (recourse breaker --log) skipped\n",
                             sum.commands);
  if (candidate) print_shadow(shadow, sum.shadowed, o.shadow);
  return failed || sum.bad > 0 || !log.close() ? 1 : 0;
}

}  // namespace recourse::cli
