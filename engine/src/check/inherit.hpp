// Inheritance stage: `policy "x" extends "base"` -> one policy holding its own items and the
// items it inherits, before the checker sees it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "source/location.hpp"

namespace recourse::detail {

/// Finds the source of a base policy that none of the parsed files defines: called with the
/// base's name and the path of the file that extends it; returns the parsed file that defines
/// it, its text added to the Sources given to inherit() and its positions carrying that index;
/// or nullopt.
using BaseLoader =
    std::function<std::optional<ast::File>(std::string_view name, std::string_view from_path)>;

/// Replaces every policy of `files` that extends a base by the merged policy: its own rules
/// first, then the base's (transitively); its tool, limits, breaker and throttle settings over
/// the base's key by key; its backoff, default and hit policy, else the base's; codes, `map`
/// lines, assertions, sequence bounds and waivers of both. Tests are not inherited. Files `load`
/// returns are appended to `files`. A missing base (E026) or a cycle (E027) is reported at the
/// `extends` and the policy is dropped, as is one with more than `max_depth` bases above it
/// (E033). `sources` locate diagnostics. Never throws but for allocation failure.
void inherit(std::vector<ast::File>& files, const Sources& sources, const BaseLoader& load,
             std::size_t max_depth, std::vector<Diagnostic>& diagnostics);

}  // namespace recourse::detail
