// `recourse bench POLICY [--seconds N]`: nanoseconds per decision for an author's own policies,
// over inputs drawn across each policy's input domain (recourse/sample.hpp). A quick figure for
// one machine; bench/ holds the full benchmarks and their baselines.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace recourse::cli {

struct BenchOptions {
  std::vector<std::string> paths;  ///< policy files or directories
  double seconds = 1.0;            ///< time per policy, s (0.01 .. 600)
  bool json = false;               ///< --format json: one JSON object per policy, a line each
};

/// Registers the subcommand's options on `app`.
void add_bench_options(CLI::App& app, BenchOptions& options);
/// Runs it: 0 when every policy compiled, 1 otherwise (diagnostics on stderr).
int run_bench(const BenchOptions& options);

}  // namespace recourse::cli
