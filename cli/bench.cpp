// `recourse bench` (see bench.hpp): compile, draw inputs across each policy's domain, then time
// decide() in rounds over those inputs until the time is up.
#include "bench.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "recourse/tooling.hpp"

namespace recourse::cli {

namespace {

constexpr std::size_t kSamples = 1024;

// The strategy line of the dump ("strategy direct 11x3 = 33 entries"), without "strategy ".
std::string strategy_of(const Policy& policy) {
  const std::string dump = policy.dump();
  const auto at = dump.find("\nstrategy ");
  if (at == std::string::npos) return "?";
  const auto begin = at + 10;
  return dump.substr(begin, dump.find('\n', begin) - begin);
}

}  // namespace

void add_bench_options(CLI::App& app, BenchOptions& o) {
  app.add_option("paths", o.paths, "policy files or directories")->required();
  app.add_option("--seconds", o.seconds, "time per policy, in seconds (default 1)")
      ->check(CLI::Range(0.01, 600.0));
  app.add_flag_function(
      "--json", [&](std::int64_t) { o.json = true; }, "one JSON object per policy, a line each");
}

int run_bench(const BenchOptions& o) {
  Options load_options;
  const auto bundle = load(o.paths, load_options);
  if (!bundle) return 1;
  using Clock = std::chrono::steady_clock;
  for (const Policy& policy : bundle->policies()) {
    const std::vector<Sample> samples = sample_inputs(policy, kSamples, 1);
    const auto budget = std::chrono::duration<double>(o.seconds);
    std::uint64_t decisions = 0, sink = 0;
    const auto start = Clock::now();
    auto elapsed = Clock::duration::zero();
    while (elapsed < budget) {
      for (const Sample& s : samples)
        sink += static_cast<std::uint64_t>(policy.decide(s.envelope, s.context).route);
      decisions += samples.size();
      elapsed = Clock::now() - start;
    }
    const double ns =
        std::chrono::duration<double, std::nano>(elapsed).count() / static_cast<double>(decisions);
    if (o.json) {
      nlohmann::json j{{"policy", policy.name()},         {"nsPerDecision", ns},
                       {"decisions", decisions},          {"inputs", samples.size()},
                       {"strategy", strategy_of(policy)}, {"routeSum", sink}};
      std::cout << j.dump() << "\n";
    } else {
      std::cout << fmt::format(
          "policy \"{}\": {:.1f} ns per decision ({} decisions over {} inputs "
          "across its domain; strategy {})\n",
          policy.name(), ns, decisions, samples.size(), strategy_of(policy));
    }
  }
  return 0;
}

}  // namespace recourse::cli
