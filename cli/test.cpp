// recourse test: runs the `test` blocks kept in policy files (docs/language.md, "Tests").
//
// Each file is compiled on its own, with the bases it extends (compile_paths finds NAME.recourse
// beside it), and only its own tests run, so a directory of strategies that all define "*" can
// be tested in one command. Text output lists each test with PASS or FAIL and, for a failure,
// the expected and the actual decision and every expectation not met; names are escaped as
// quoted() escapes them, so a control character cannot reach the terminal. `--format json`
// prints one JSON array of diagnostics: the compile diagnostics and one E130 error per failed
// test. `--coverage` (or `--threshold PERCENT`) adds which rules, defaults and guards each
// policy's tests reach (coverage.cpp); with `--format json` the output is then one object,
// {"diagnostics": [...], "coverage": {...}}.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"

namespace recourse::cli {
namespace {

// A policy's or a test's name on a PASS or FAIL line: escaped as quoted() escapes it, without
// the quotes.
std::string escaped(std::string_view name) {
  const std::string q = quoted(name);
  return q.substr(1, q.size() - 2);
}

Diagnostic failure(const TestResult& t) {
  Diagnostic d;
  d.code = "E130";
  d.file = t.file;
  d.line = t.line;
  d.column = t.column;
  d.offset = t.offset;
  std::string what;
  for (const auto& m : t.mismatches) what += (what.empty() ? "" : "; ") + m;
  d.message = fmt::format("test \"{}\" of policy \"{}\" failed: {}", t.name, t.policy, what);
  d.help = fmt::format("expected: {}; actual: {}", t.expected, t.actual);
  d.witness = t.input;
  return d;
}

}  // namespace

int run_test(const Options& o) {
  std::vector<Diagnostic> report;
  std::vector<FileCoverage> coverage;
  std::size_t passed = 0, failed = 0, broken = 0;
  for (const std::string& file : policy_files(o.paths)) {
    const Result<Bundle> r = compile_paths({file}, o.compile);
    if (o.format == Format::Text) {
      print_diagnostics(r.diagnostics(), o.format, std::cout);
    } else {
      report.insert(report.end(), r.diagnostics().begin(), r.diagnostics().end());
    }
    if (!r.ok() || has_errors(r.diagnostics(), o.strict)) {
      ++broken;
      continue;
    }
    coverage.push_back({file, {}});
    for (const Policy& policy : r->policies()) {
      std::vector<TestResult> own;
      for (const TestResult& t : run_tests(policy)) {
        if (t.file != file) continue;  // a base's tests run with the base's own file
        own.push_back(t);
        (t.passed ? passed : failed) += 1;
        if (!t.passed) report.push_back(failure(t));
        if (o.format == Format::Json) continue;
        std::cout << fmt::format("{} {}:{}:{} {}: {}\n", t.passed ? "PASS" : "FAIL", t.file, t.line,
                                 t.column, escaped(t.policy), escaped(t.name));
        if (t.passed) continue;
        std::cout << fmt::format("  expected: {}\n  actual:   {}\n", t.expected, t.actual);
        for (const auto& m : t.mismatches) std::cout << "  - " << m << "\n";
      }
      if (info(policy).file == file) coverage.back().policies.push_back(coverage_of(policy, own));
    }
  }
  const bool covers = o.coverage || o.threshold;
  if (o.format == Format::Json && covers) {  // {"diagnostics": [...], "coverage": {...}}
    std::ostringstream diagnostics;
    print_diagnostics(report, o.format, diagnostics);
    nlohmann::ordered_json reach;
    const bool enough = report_coverage(coverage, o.format, o.threshold, &reach);
    const nlohmann::ordered_json out = {
        {"diagnostics", nlohmann::ordered_json::parse(diagnostics.str())},
        {"coverage", std::move(reach)}};
    std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return failed || broken || !enough ? 1 : 0;
  }
  if (o.format == Format::Json)
    print_diagnostics(report, o.format, std::cout);
  else
    std::cout << fmt::format(
        "{} passed, {} failed{}\n", passed, failed,
        broken ? fmt::format(", {} file{} did not compile", broken, broken == 1 ? "" : "s") : "");
  const bool reached = !covers || report_coverage(coverage, o.format, o.threshold, nullptr);
  return failed || broken || !reached ? 1 : 0;
}

}  // namespace recourse::cli
