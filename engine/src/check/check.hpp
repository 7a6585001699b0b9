// Check stage: ast::File -> PolicySpec for each policy, with every mistake reported in one pass.
#pragma once

#include <string_view>
#include <vector>

#include "model/model.hpp"
#include "source/location.hpp"

namespace recourse::detail {

/// Checks every policy of `file` (whose text is `text`, for caret lines). Appends diagnostics;
/// returns the specs of the policies that have no errors. Never throws on bad input.
std::vector<PolicySpec> check(const ast::File& file, const Sources& sources,
                              const CompileOptions& options, std::vector<Diagnostic>& diagnostics);

}  // namespace recourse::detail
