// recourse test --coverage: which rules, guards and default each policy's tests reach.
//
// A test reaches the rule whose condition decided its input (the default when no rule matched)
// and the guard that then overrode that rule's route, if one did (TestResult::rule, ::guard). A
// policy's targets are its rules in the order they are tried, its default line and the guards
// that check some rule's route (PolicyInfo::rules, ::guards); its coverage is the share of them
// its own tests reach. Bases' policies are counted with their own files, as their tests run.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace recourse::cli {

PolicyCoverage coverage_of(const Policy& policy, const std::vector<TestResult>& tests) {
  const PolicyInfo info = recourse::info(policy);
  PolicyCoverage c;
  c.policy = std::string(policy.name());
  for (const RuleInfo& rule : info.rules) c.targets.push_back({rule.name, "", rule, 0});
  for (const std::string& guard : info.guards) c.targets.push_back({guard, guard, {}, 0});
  for (const TestResult& t : tests)
    for (CoverageTarget& target : c.targets)
      if (target.guard.empty() ? target.name == t.rule : target.guard == t.guard) ++target.tests;
  return c;
}

std::size_t PolicyCoverage::reached() const {
  return static_cast<std::size_t>(std::count_if(
      targets.begin(), targets.end(), [](const CoverageTarget& t) { return t.tests > 0; }));
}

namespace {

double percent(std::size_t part, std::size_t whole) {
  return whole == 0 ? 100.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// How a target is named in the text report: `rule NAME (line L)`, `default (line L)`,
// `guard NAME`.
std::string target_text(const CoverageTarget& t) {
  if (!t.guard.empty()) return "guard " + t.guard;
  const std::string where = t.rule.inherited ? "inherited" : fmt::format("line {}", t.rule.line);
  return (t.name == "default" ? std::string("default") : "rule " + t.name) + " (" + where + ")";
}

}  // namespace

bool report_coverage(const std::vector<FileCoverage>& files, Format format,
                     std::optional<double> threshold, nlohmann::ordered_json* json) {
  std::size_t reached = 0, total = 0;
  for (const FileCoverage& f : files)
    for (const PolicyCoverage& p : f.policies) {
      reached += p.reached();
      total += p.targets.size();
    }
  const double all = percent(reached, total);
  const bool passed = !threshold || all >= *threshold;
  if (format == Format::Json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const FileCoverage& f : files)
      for (const PolicyCoverage& p : f.policies) {
        nlohmann::ordered_json targets = nlohmann::ordered_json::array();
        for (const CoverageTarget& t : p.targets) {
          nlohmann::ordered_json target = {{"kind", !t.guard.empty()      ? "guard"
                                                    : t.name == "default" ? "default"
                                                                          : "rule"},
                                           {"name", t.name},
                                           {"tests", t.tests}};
          if (t.guard.empty()) {
            target["line"] = t.rule.line;
            target["column"] = t.rule.column;
            target["inherited"] = t.rule.inherited;
          }
          targets.push_back(std::move(target));
        }
        out.push_back({{"file", f.file},
                       {"policy", p.policy},
                       {"reached", p.reached()},
                       {"total", p.targets.size()},
                       {"percent", percent(p.reached(), p.targets.size())},
                       {"targets", std::move(targets)}});
      }
    *json = {
        {"policies", std::move(out)}, {"reached", reached}, {"total", total}, {"percent", all}};
    if (threshold) (*json)["threshold"] = *threshold;
    return passed;
  }
  for (const FileCoverage& f : files)
    for (const PolicyCoverage& p : f.policies) {
      std::cout << fmt::format("coverage {} {}: {} of {} ({:.1f}%)\n", f.file,
                               recourse::quoted(p.policy), p.reached(), p.targets.size(),
                               percent(p.reached(), p.targets.size()));
      for (const CoverageTarget& t : p.targets)
        if (t.tests == 0) std::cout << "  not reached: " << target_text(t) << "\n";
    }
  std::cout << fmt::format("coverage: {} of {} rules, defaults and guards reached ({:.1f}%)",
                           reached, total, all);
  if (threshold)
    std::cout << fmt::format(passed ? ", at least {}%" : ", below the threshold {}%", *threshold);
  std::cout << "\n";
  return passed;
}

}  // namespace recourse::cli
