// `recourse simulate`: options, the text table (with the distance to the seed's published
// figures), JSON and the SVG plot. The model is in simulate.cpp.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "simulate.hpp"

namespace recourse::cli {
namespace {

using json = nlohmann::ordered_json;
using sim::Scenario;

// The tolerances of issue 6: about three standard deviations of 12,000 operations' noise.
constexpr double kTolResolutionPp = 1.5;
constexpr double kTolAttemptsPerOp = 0.02;
constexpr double kTolCountShare = 0.10;

struct Args {
  std::vector<std::string> policies, strategies;  // --policy flags, then the positionals
  std::string preset = "seed";
  std::string plot;
  Scenario given;  // the values of the flags given on the command line
  std::vector<double> mix;
  std::vector<std::function<void(Scenario&)>> overrides;  // apply the flags that were given
};

Args& args() {
  static Args a;
  return a;
}

// One scenario flag: documented, range-checked, and applied over the preset only when given.
template <typename T>
void flag(CLI::App& c, const std::string& name, T Scenario::*member, const std::string& help, T low,
          T high) {
  Args& a = args();
  CLI::Option* option =
      c.add_option(name, a.given.*member, fmt::format("{} (seed: {})", help, Scenario{}.*member))
          ->check(CLI::Range(low, high));
  a.overrides.push_back([option, member](Scenario& s) {
    if (option->count() > 0) s.*member = args().given.*member;
  });
}

struct Row {
  sim::Strategy strategy;
  sim::Metrics m;
};

std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string signed_grouped(std::int64_t n) {
  return (n >= 0 ? "+" : "") + grouped(n);
}

std::string percent(double x) {
  return fmt::format("{:.1f}%", 100 * x);
}

// Distances to the published figures, and whether each is within its tolerance.
struct Distance {
  const sim::Published* row = nullptr;
  double resolution_pp = 0, attempts_per_op = 0;
  std::int64_t failed = 0, permanent = 0;
  bool ok_resolution = false, ok_attempts = false, ok_failed = false, ok_permanent = false;
  bool ok() const { return ok_resolution && ok_attempts && ok_failed && ok_permanent; }
};

bool count_ok(std::int64_t diff, std::int64_t published) {
  return std::abs(static_cast<double>(diff)) <=
         kTolCountShare * static_cast<double>(published) + 1e-9;
}

Distance distance(const sim::Metrics& m, sim::EnvelopeKind kind) {
  Distance d;
  d.row = &sim::published(kind);
  d.resolution_pp = 100 * (m.resolution() - d.row->resolution);
  d.attempts_per_op = m.attempts_per_op() - d.row->attempts_per_op;
  d.failed = m.failed_retries - d.row->failed_retries;
  d.permanent = m.permanent_retries - d.row->permanent_retries;
  d.ok_resolution = std::abs(d.resolution_pp) <= kTolResolutionPp + 1e-9;
  d.ok_attempts = std::abs(d.attempts_per_op) <= kTolAttemptsPerOp + 1e-9;
  d.ok_failed = count_ok(d.failed, d.row->failed_retries);
  d.ok_permanent = count_ok(d.permanent, d.row->permanent_retries);
  return d;
}

std::string count_distance(std::int64_t diff, std::int64_t published) {
  if (published == 0) return signed_grouped(diff);
  return fmt::format("{} ({:+.1f}%)", signed_grouped(diff),
                     100.0 * static_cast<double>(diff) / static_cast<double>(published));
}

const char* controller_name(sim::Controller c) {
  switch (c) {
    case sim::Controller::Policy:
      return "policy";
    case sim::Controller::RetryAll:
      return "retry every failure";
    default:
      return "retry when retryable";
  }
}

// The assumptions as (flag, value, meaning), in the order they are printed.
std::vector<std::array<std::string, 3>> assumptions(const Scenario& s) {
  auto num = [](double v) { return fmt::format("{}", v); };
  return {
      {"--failure-rate", num(s.failure_rate), "first calls that fail"},
      {"--mix", fmt::format("{},{},{},{}", s.mix[0], s.mix[1], s.mix[2], s.mix[3]),
       "weights of TRANSIENT, VALIDATION, PERMISSION, NOT_FOUND failures"},
      {"--transient-success", num(s.transient_success),
       "a retry (or any new call) after a transient failure succeeds"},
      {"--repair-code", num(s.repair_code), "a repair guided by the code alone succeeds"},
      {"--repair-hint", num(s.repair_hint),
       "a repair guided by a real field and a suggestion succeeds"},
      {"--recoveries", num(static_cast<double>(s.recoveries)),
       "recovery attempts (retries or repairs) per operation, at most"},
      {"--naive-retries", num(static_cast<double>(s.naive_retries)),
       "retries the built-in naive controllers allow themselves"},
      {"--deadline-ms", num(static_cast<double>(s.deadline_ms)),
       "a recovery call started later than this after the first call is late (cannot succeed)"},
      {"--tools", num(static_cast<double>(s.tools)), "simulated tools per run"},
      {"--all-retryable", num(s.all_retryable), "tools that mark every error retryable"},
      {"--mismatched", num(s.mismatched), "tools whose retryable contradicts their code"},
      {"--absurd-retry-after", num(s.absurd_retry_after),
       "tools that ask for a 30-day Retry-After on transient errors"},
      {"--no-trace-id", num(s.no_trace_id), "tools that omit traceId"},
      {"--bogus-field", num(s.bogus_field),
       "tools whose validation errors name a field the tool does not have"},
      {"--non-idempotent", num(s.non_idempotent), "tools whose calls are not idempotent"},
      {"--timeouts", num(s.timeouts),
       "transient failures that are timeouts: the side effect is unknown"},
      {"--timeout-applied", num(s.timeout_applied), "timed-out calls that were in fact applied"},
  };
}

const std::vector<std::string>& definitions() {
  static const std::vector<std::string> d = {
      "a blind retry of a validation failure never succeeds (only a repair can)",
      "failed retries count failed retries and failed repairs alike",
      "attempts are the first call plus each retry or repair (verify calls are counted apart)",
      "permanent-failure retries are retries or repairs of PERMISSION and NOT_FOUND failures",
      "a repair that follows a field the tool does not have never succeeds",
      "wasted attempts are retries or repairs that could not succeed: of a permanent failure, a "
      "blind retry of a validation failure, a repair of a made-up field, a late call",
      "a side-effect violation is a retry or repair of a non-idempotent call after an unknown or "
      "committed side effect; a duplicate effect is one where the earlier call had been applied",
      "authorize, replace (except to verify an unknown outcome), degrade, escalate and stop end "
      "the operation unresolved",
  };
  return d;
}

// The text without trailing blanks, and a newline.
std::string line(std::string text) {
  text.erase(text.find_last_not_of(' ') + 1);
  return text + "\n";
}

// Words of `text` in lines of at most `width` characters, the first after `first`, the others
// after `indent`.
std::string wrap(const std::string& text, std::size_t width, const std::string& first,
                 const std::string& indent) {
  std::string out = first, word;
  std::size_t column = first.size();
  bool line_empty = true;
  auto flush = [&] {
    if (word.empty()) return;
    if (!line_empty && column + 1 + word.size() > width) {
      out += "\n" + indent;
      column = indent.size();
      line_empty = true;
    }
    if (!line_empty) out += ' ', ++column;
    out += word;
    column += word.size();
    line_empty = false;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ')
      flush();
    else
      word += c;
  }
  flush();
  return out + "\n";
}

// The seed's row for a strategy: only policies are compared (the naive baselines are not the
// seed's controllers), each with the row of its envelope.
const sim::Published* reference(const Row& r, bool compare_published) {
  if (!compare_published || r.strategy.controller != sim::Controller::Policy) return nullptr;
  return &sim::published(r.strategy.envelope);
}

void print_text(const Scenario& s, const std::string& preset, const std::vector<Row>& rows,
                bool compare_published) {
  std::size_t w = 12;
  for (const auto& r : rows) w = std::max(w, r.strategy.name.size() + 2);
  std::cout << fmt::format(
      "recourse simulate: {} runs x {} operations = {} operations, seed {}, scenario {}\n\n",
      s.runs, s.ops, grouped(s.runs * s.ops), s.seed, preset);
  const std::string row_format = "{:<{}}{:<10}{:>10}{:>13}{:>16}{:>27}  {}";
  std::cout << line(fmt::format(row_format, "strategy", w, "envelope", "resolution", "attempts/op",
                                "failed retries", "permanent-failure retries", ""));
  bool any_reference = false;
  for (const auto& r : rows) {
    const auto& m = r.m;
    std::cout << line(fmt::format(row_format, r.strategy.name, w,
                                  sim::to_string(r.strategy.envelope), percent(m.resolution()),
                                  fmt::format("{:.3f}", m.attempts_per_op()),
                                  grouped(m.failed_retries), grouped(m.permanent_retries), ""));
    if (!reference(r, compare_published)) continue;
    any_reference = true;
    const Distance d = distance(m, r.strategy.envelope);
    std::cout << line(fmt::format(row_format, "  published", w, "", percent(d.row->resolution),
                                  fmt::format("{:.3f}", d.row->attempts_per_op),
                                  grouped(d.row->failed_retries), grouped(d.row->permanent_retries),
                                  fmt::format("seed: {}", d.row->label)));
    std::cout << line(fmt::format(
        row_format, "  distance", w, "", fmt::format("{:+.1f} pp", d.resolution_pp),
        fmt::format("{:+.3f}", d.attempts_per_op), count_distance(d.failed, d.row->failed_retries),
        count_distance(d.permanent, d.row->permanent_retries),
        d.ok() ? "within tolerance" : "OUTSIDE tolerance"));
  }
  if (any_reference)
    std::cout << fmt::format(
        "tolerance: {} pp (resolution), {} (attempts/op), {:.0f}% (counts): about three "
        "standard deviations of 12,000 operations\n",
        kTolResolutionPp, kTolAttemptsPerOp, 100 * kTolCountShare);
  else if (!compare_published)
    std::cout << "(the seed's published figures hold for its scenario and 12,000 operations "
                 "only: no distances)\n";

  const std::string safety_format = "{:<{}}{:>10}{:>9}{:>9}{:>9}{:>12}{:>12}{:>10}{:>7}\n";
  std::cout << "\n"
            << fmt::format(safety_format, "strategy", w, "resolution", "retries", "repairs",
                           "wasted", "violations", "duplicates", "verified", "late");
  for (const auto& r : rows) {
    const auto& m = r.m;
    std::cout << fmt::format(safety_format, r.strategy.name, w, percent(m.resolution()),
                             grouped(m.retries), grouped(m.repairs), grouped(m.wasted),
                             grouped(m.violations), grouped(m.duplicates), grouped(m.verifications),
                             grouped(m.late));
  }

  std::cout << "\nassumptions (scenario flags: synthetic inputs, not measurements):\n";
  const auto seed_values = assumptions(Scenario{});
  const auto values = assumptions(s);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto& [name, value, meaning] = values[i];
    const std::string& seed_value = seed_values[i][1];
    std::cout << wrap(
        value == seed_value ? meaning : fmt::format("{} (seed: {})", meaning, seed_value), 100,
        fmt::format("  {:<22}{:<10}", name, value), std::string(34, ' '));
  }
  std::cout << "definitions:\n";
  for (const auto& d : definitions()) std::cout << wrap(d, 100, "  - ", "    ");
  std::cout << "strategies:\n";
  for (const auto& r : rows)
    std::cout << fmt::format("  {:<{}}{} ({}), {} envelope\n", r.strategy.name, w,
                             r.strategy.source, controller_name(r.strategy.controller),
                             sim::to_string(r.strategy.envelope));
}

json by_class(const std::array<std::int64_t, 4>& counts) {
  json j = json::object();
  for (std::size_t i = 0; i < counts.size(); ++i) j[sim::kFailureCodes[i]] = counts[i];
  return j;
}

void print_json(const Scenario& s, const std::string& preset, const std::vector<Row>& rows,
                bool compare_published) {
  json a = json::object();
  for (const auto& [name, value, meaning] : assumptions(s)) {
    (void)meaning;
    const std::string key = name.substr(2);
    if (key == "mix")
      a[key] = {s.mix[0], s.mix[1], s.mix[2], s.mix[3]};
    else
      a[key] = std::stod(value);
  }
  json strategies = json::array();
  for (const auto& r : rows) {
    const auto& m = r.m;
    json row = {{"name", r.strategy.name},
                {"source", r.strategy.source},
                {"controller", controller_name(r.strategy.controller)},
                {"envelope", sim::to_string(r.strategy.envelope)},
                {"operations", m.operations},
                {"resolved", m.resolved},
                {"resolution", m.resolution()},
                {"attempts", m.attempts},
                {"attemptsPerOp", m.attempts_per_op()},
                {"retries", m.retries},
                {"repairs", m.repairs},
                {"failedRetries", m.failed_retries},
                {"permanentFailureRetries", m.permanent_retries},
                {"wastedAttempts", m.wasted},
                {"sideEffectViolations", m.violations},
                {"duplicateEffects", m.duplicates},
                {"verifications", m.verifications},
                {"lateCalls", m.late},
                {"refusedByRecoveryCap", m.horizon},
                {"firstCallFailures", by_class(m.failures)},
                {"resolvedAfter", by_class(m.resolved_after)},
                {"operationsDigest", fmt::format("{:016x}", m.operations_digest)},
                {"routes", m.routes},
                {"rules", m.rules},
                {"warnings", m.warnings}};
    if (reference(r, compare_published)) {
      const Distance d = distance(m, r.strategy.envelope);
      row["published"] = {{"row", d.row->label},
                          {"resolution", d.row->resolution},
                          {"attemptsPerOp", d.row->attempts_per_op},
                          {"failedRetries", d.row->failed_retries},
                          {"permanentFailureRetries", d.row->permanent_retries},
                          {"distance",
                           {{"resolutionPp", d.resolution_pp},
                            {"attemptsPerOp", d.attempts_per_op},
                            {"failedRetries", d.failed},
                            {"permanentFailureRetries", d.permanent}}},
                          {"withinTolerance", d.ok()}};
    }
    strategies.push_back(std::move(row));
  }
  json out = {{"seed", s.seed},
              {"runs", s.runs},
              {"opsPerRun", s.ops},
              {"operations", s.runs * s.ops},
              {"scenario", preset},
              {"assumptions", a},
              {"definitions", definitions()},
              {"tolerance",
               {{"resolutionPp", kTolResolutionPp},
                {"attemptsPerOp", kTolAttemptsPerOp},
                {"countShare", kTolCountShare}}},
              {"comparedWithPublished", compare_published},
              {"strategies", strategies}};
  std::cout << out.dump(2) << "\n";
}

std::string xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Grouped bars: one panel per metric, one bar per strategy, each panel on its own scale.
std::string svg(const Scenario& s, const std::string& preset, const std::vector<Row>& rows) {
  struct Metric {
    const char* title;
    std::function<double(const sim::Metrics&)> value;
    std::function<std::string(double)> label;
  };
  auto count = [](double v) { return grouped(static_cast<std::int64_t>(std::llround(v))); };
  const std::vector<Metric> metrics = {
      {"resolution", [](const sim::Metrics& m) { return 100 * m.resolution(); },
       [](double v) { return fmt::format("{:.1f}%", v); }},
      {"attempts/op", [](const sim::Metrics& m) { return m.attempts_per_op(); },
       [](double v) { return fmt::format("{:.3f}", v); }},
      {"failed retries", [](const sim::Metrics& m) { return double(m.failed_retries); }, count},
      {"permanent-failure retries",
       [](const sim::Metrics& m) { return double(m.permanent_retries); }, count},
      {"wasted attempts", [](const sim::Metrics& m) { return double(m.wasted); }, count},
      {"side-effect violations", [](const sim::Metrics& m) { return double(m.violations); }, count},
  };
  static constexpr std::array<const char*, 8> palette = {
      "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  const double panel_w = 200, gap = 24, left = 20, top = 70;
  const double plot_h = 150, base_y = top + 30 + plot_h;
  const double width = left * 2 + metrics.size() * panel_w + (metrics.size() - 1) * gap;
  const double legend_y = base_y + 30;
  const double height = legend_y + 22 * static_cast<double>(rows.size()) + 10;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, width, height);
  out += fmt::format(
      "<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">recourse simulate: {} "
      "operations ({} runs x {}), seed {}, scenario {}</text>\n",
      left, grouped(s.runs * s.ops), s.runs, s.ops, s.seed, xml(preset));
  out += fmt::format(
      "<text x=\"{}\" y=\"44\" fill=\"#555\">synthetic assumptions: failure rate {}, transient "
      "retry {}, repair {} (code) / {} (field and suggestion), {} recovery attempt(s); each "
      "panel on its own scale</text>\n",
      left, s.failure_rate, s.transient_success, s.repair_code, s.repair_hint, s.recoveries);
  const double n = static_cast<double>(std::max<std::size_t>(rows.size(), 1));
  const double slot = (panel_w - 20) / n, bar = slot * 0.75;
  for (std::size_t k = 0; k < metrics.size(); ++k) {
    const double x0 = left + k * (panel_w + gap);
    double high = 0;
    for (const auto& r : rows) high = std::max(high, metrics[k].value(r.m));
    if (high <= 0) high = 1;
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" font-weight=\"bold\" "
        "text-anchor=\"middle\">{}</text>\n",
        x0 + panel_w / 2, top + 10, xml(metrics[k].title));
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x0,
        base_y, x0 + panel_w, base_y);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double v = metrics[k].value(rows[i].m);
      const double h = plot_h * v / high;
      const double x = x0 + 10 + static_cast<double>(i) * slot + (slot - bar) / 2;
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
          "fill=\"{}\"><title>{}: {}</title></rect>\n",
          x, base_y - h, bar, h, palette[i % palette.size()], xml(rows[i].strategy.name),
          metrics[k].label(v));
      out += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"9\">{}</text>\n",
          x + bar / 2, base_y - h - 4, metrics[k].label(v));
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = legend_y + 22 * static_cast<double>(i);
    out += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"14\" height=\"14\" fill=\"{}\"/>\n"
        "<text x=\"{}\" y=\"{:.1f}\">{} — {} ({}, {} envelope)</text>\n",
        left, y, palette[i % palette.size()], left + 20, y + 11, xml(rows[i].strategy.name),
        xml(rows[i].strategy.source), controller_name(rows[i].strategy.controller),
        sim::to_string(rows[i].strategy.envelope));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace

void add_simulate_options(CLI::App& c, Options& options) {
  Args& a = args();
  c.add_option("--state", options.state,
               "keep the workflows' counters in memory, sqlite:PATH or redis://HOST:PORT")
      ->type_name("SPEC");
  c.add_option("--policy,-p", a.policies,
               "a strategy: [generic:|code:|full:]PATH, or @retry-all / @retryable (repeatable)");
  c.add_option("strategies", a.strategies,
               "more strategies, run on the same operations and rolls, side by side");
  c.add_option("--scenario", a.preset, "preset the flags below start from: seed or hostile")
      ->check(CLI::IsMember({"seed", "hostile"}));
  c.add_option("--plot", a.plot, "also write grouped bars per metric to this SVG file");
  c.add_option("--seed", a.given.seed, "the generator's seed (default 1)");
  flag<std::int64_t>(c, "--runs", &Scenario::runs, "runs (workflows)", 1, 100000);
  flag<std::int64_t>(c, "--ops", &Scenario::ops, "operations per run", 1, 100000);
  flag<std::int64_t>(c, "--tools", &Scenario::tools, "simulated tools per run", 1, 1000);
  flag<double>(c, "--failure-rate", &Scenario::failure_rate, "first calls that fail", 0, 1);
  c.add_option("--mix", a.mix,
               "weights of TRANSIENT,VALIDATION,PERMISSION,NOT_FOUND failures (seed: 1,1,1,1)")
      ->delimiter(',')
      ->expected(4)
      ->check(CLI::Range(0.0, 1e6));
  flag<double>(c, "--transient-success", &Scenario::transient_success,
               "a new call after a transient failure succeeds", 0, 1);
  flag<double>(c, "--repair-code", &Scenario::repair_code,
               "a repair guided by the code alone succeeds", 0, 1);
  flag<double>(c, "--repair-hint", &Scenario::repair_hint,
               "a repair guided by a real field and a suggestion succeeds", 0, 1);
  flag<std::int64_t>(c, "--recoveries", &Scenario::recoveries,
                     "recovery attempts per operation at most", 0, 10);
  flag<std::int64_t>(c, "--naive-retries", &Scenario::naive_retries,
                     "the naive controllers' retry cap", 0, 10);
  flag<std::int64_t>(c, "--deadline-ms", &Scenario::deadline_ms,
                     "recovery calls started later are late", 1, INT64_C(1) << 50);
  flag<double>(c, "--all-retryable", &Scenario::all_retryable,
               "tools that mark every error retryable", 0, 1);
  flag<double>(c, "--mismatched", &Scenario::mismatched,
               "tools whose retryable contradicts the code", 0, 1);
  flag<double>(c, "--absurd-retry-after", &Scenario::absurd_retry_after,
               "tools asking for a 30-day Retry-After", 0, 1);
  flag<double>(c, "--no-trace-id", &Scenario::no_trace_id, "tools omitting traceId", 0, 1);
  flag<double>(c, "--bogus-field", &Scenario::bogus_field, "tools naming fields they do not have",
               0, 1);
  flag<double>(c, "--non-idempotent", &Scenario::non_idempotent,
               "tools whose calls are not idempotent", 0, 1);
  flag<double>(c, "--timeouts", &Scenario::timeouts,
               "transient failures that are timeouts (outcome unknown)", 0, 1);
  flag<double>(c, "--timeout-applied", &Scenario::timeout_applied,
               "timed-out calls that were in fact applied", 0, 1);
}

int run_simulate(const Options& o) {
  Args& a = args();
  Scenario s = a.preset == "hostile" ? sim::hostile_preset() : Scenario{};
  for (const auto& apply : a.overrides) apply(s);
  s.seed = a.given.seed;
  if (!a.mix.empty()) {
    double total = 0;
    for (std::size_t i = 0; i < 4; ++i) total += s.mix[i] = a.mix[i];
    if (total <= 0) return std::cerr << "error: --mix needs a positive weight\n", 2;
  }
  if (s.runs * s.ops > 10000000)
    return std::cerr << "error: --runs x --ops is limited to 10,000,000 operations\n", 2;

  std::vector<std::string> specs = a.policies;
  specs.insert(specs.end(), a.strategies.begin(), a.strategies.end());
  if (specs.empty())
    return std::cerr << "error: simulate needs a strategy (--policy or a positional)\n", 2;
  std::shared_ptr<Store> store;
  if (!o.state.empty() && !(store = open_state(o.state))) return 1;
  std::vector<Row> rows;
  for (const auto& spec : specs) {
    std::string error;
    auto strategy = sim::parse_strategy(spec, error);
    if (!strategy) return std::cerr << "error: " << error << "\n", 2;
    if (strategy->controller == sim::Controller::Policy) {
      strategy->bundle = load({strategy->source}, o);
      if (!strategy->bundle) return 1;
      strategy->store = store;  // keys unique to this invocation: a store may outlive it
      strategy->scope = fmt::format("simulate-{}/{}", wall_ms(), strategy->name);
    }
    rows.push_back({std::move(*strategy), {}});
  }
  for (auto& r : rows) r.m = sim::simulate(s, r.strategy);

  const bool compare_published = s.is_seed() && s.runs * s.ops == sim::kPublishedOperations;
  if (o.format == Format::Json)
    print_json(s, a.preset, rows, compare_published);
  else
    print_text(s, a.preset, rows, compare_published);
  if (!a.plot.empty()) {
    std::ofstream file(a.plot, std::ios::binary);
    file << svg(s, a.preset, rows);
    if (!file) return std::cerr << "error: cannot write " << a.plot << "\n", 1;
  }
  return 0;
}

}  // namespace recourse::cli
