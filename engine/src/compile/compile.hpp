// Compile stage: PolicySpec -> decision table.
#pragma once

#include <optional>
#include <vector>

#include "source/location.hpp"
#include "table/table.hpp"

namespace recourse::detail {

/// The order rules take in the table: file order, or under `hit safest` by safety_rank then file
/// order (first match over that order picks the most conservative matching rule); the default
/// is always last.
std::vector<std::uint32_t> rule_order(const PolicySpec& spec);

/// Builds the table of `spec`: columns and cells, one row per DNF term of each rule (guard rows
/// first for retry and repair rules), the bitsets, and the direct array when the domain is small
/// enough. A rule whose condition expands beyond options.max_terms_per_rule terms is E093 and
/// yields nullopt.
/// Warns W001 for a retry or repair rule that matches an absent envelope value only through `not`.
/// `sources` are the texts the policy's positions point into, for diagnostics.
/// With `also`, the columns also carry that policy's attributes and cuts, so two versions of a
/// policy share one cell space (recourse diff). Both must declare the same codes.
std::optional<Table> compile(const PolicySpec& spec, const CompileOptions& options,
                             const Sources& sources, std::vector<Diagnostic>& diagnostics,
                             const PolicySpec* also = nullptr);

/// The pipeline behind compile() and compile_paths(): parses every source, resolves `extends`
/// (with `load_bases`, reading NAME.recourse beside the extending file), checks and compiles
/// every policy, and with `analyse` runs the coverage analysis (shadowed rules, invariants,
/// assertions; it changes no table, only diagnostics). All or nothing: any error in any source
/// means no Bundle. Never throws.
Result<Bundle> compile_sources(const std::vector<Source>& sources, const CompileOptions& options,
                               bool load_bases, bool analyse);

}  // namespace recourse::detail
