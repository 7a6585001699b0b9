// Witnesses: concrete inputs for cubes of a compiled table (witness.cpp).
#pragma once

#include <optional>
#include <string>

#include "recourse/diagnostic.hpp"
#include "table/compiled.hpp"

namespace recourse::detail {

/// A concrete envelope and context, and the route they decide.
struct Input {
  Envelope envelope;
  Context context;
  Route route = Route::Stop;
};

/// Which of the host's per-call overrides a witness may send to reach a derived attribute's
/// cell: maxAttempts (attempts_left), deadlineMs (time_left, deadline_slack). Without one, the
/// witness reaches the cell through the policy's own limit: attempts_left through attempt and
/// lowerRetries, deadline_slack through retryAfterMs (recourse diff compares inputs without
/// them, where the two versions' limits differ).
struct Overrides {
  bool max_attempts = true;
  bool deadline = true;
};

/// An input whose attributes fall in `cube` and whose decision by `policy` keeps the route of
/// the row it matches (the checks after the lookup included); nullopt when the choices tried do
/// not land there (derived attributes can make a cell combination infeasible).
std::optional<Input> realize(const Compiled& policy, const Cube& cube, Overrides may = {});

/// `envelope {...} context {...}`, ready for `recourse decide`.
std::string input_json(const Input& input);

/// The input as a diagnostic's witness: the same JSON texts input_json() prints, and its route.
Witness witness_of(const Input& input);

}  // namespace recourse::detail
