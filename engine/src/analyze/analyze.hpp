// Analysis stage: proofs and findings over a compiled table, decided exactly by cube algebra
// (coverage questions in cover.hpp, concrete inputs in witness.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "source/location.hpp"
#include "table/compiled.hpp"

namespace recourse::detail {

/// Proves the built-in invariants and the author's assertions over the table (errors E101-E104,
/// E120 with a counterexample input that `recourse decide` reproduces), and reports unreachable
/// rules (W101), retry rules a server can steer into retrying permanent failures (W103) and retry
/// rules that trust `retryable` without looking at `code` (W104). `sources` are the texts
/// the policy's positions point into. `options` bound the work of all the coverage questions
/// (CompileOptions::max_analysis_work) and the splits of each (max_cover_splits); a question
/// left open beyond them is W109, naming the option that stopped it.
void analyze(const Compiled& policy, const Sources& sources, const CompileOptions& options,
             std::vector<Diagnostic>& diagnostics);

}  // namespace recourse::detail
