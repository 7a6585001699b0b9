// Lowering: the guards and invariants a checked policy implies (lower.cpp explains them).
#pragma once

#include "model/model.hpp"

namespace recourse::detail {

/// Appends to `spec` its guards (spec.guards, in precedence order: side-effect gates, the
/// Retry-After cap, spent budgets, the open circuit) and the built-in invariants not waived
/// (spec.assertions). Called once by the checker on a policy without errors; never throws on a
/// valid spec.
void lower(PolicySpec& spec);

}  // namespace recourse::detail
