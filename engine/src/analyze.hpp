// Analysis stage: questions about a compiled table, decided exactly by cube algebra.
#pragma once

#include <string_view>
#include <vector>

#include "compiled.hpp"

namespace recourse::detail {

/// Proves the built-in invariants and the author's assertions over the table (errors E101-E104,
/// E120 with a counterexample input that `recourse decide` reproduces), and reports unreachable
/// rules (W101), retry rules a server can steer into retrying permanent failures (W103) and retry
/// rules that trust `retryable` without looking at `code` (W104). `text` is the policy's source.
void analyze(const Compiled& policy, std::string_view text, std::vector<Diagnostic>& diagnostics);

}  // namespace recourse::detail
