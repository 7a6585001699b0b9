// Views for `recourse diff` (diff_views.cpp): two versions of a policy rewritten so that one
// cell space holds the raw inputs of both.
//
// A table's derived columns are relative to its own limits: attempts_left is the version's
// attempts minus attempt and lowerRetries, time_left its deadline minus elapsed, cost_left its
// cost limit minus costSpent, `field in arguments` its tool's argument list, and an unset
// `idempotent` its tool's flag. Where the two versions' settings differ, the same input falls in
// different cells of the two tables, and comparing the tables cell by cell would compare
// different inputs. A view fixes which of the host's overrides the inputs carry (maxAttempts,
// deadlineMs, arguments, idempotent); within it each derived attribute is either the same in
// both versions (the host sent the override) or a known function of raw inputs and the
// version's setting. in_view() rewrites each test on such an attribute into the first version's
// coordinates (attempts_left, deadline_slack and cost_left shift by the difference of the
// limits), into a raw attribute (time_left into elapsed), or into a constant (an unlimited
// budget, the tool's flag, `field in [its arguments]`). The union of the views covers every input
// once, and within a view one cell holds inputs both versions decide alike cell by cell: the
// comparison is exact.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.hpp"

namespace recourse::detail {

/// One part of the input space: the limits whose per-call override the inputs lack (`raw`: the
/// version's own setting applies) among those that differ between the two versions. Costs have
/// no override, so a cost limit that differs is always raw.
struct View {
  bool attempts = false;    ///< no maxAttempts: attempts_left follows limits.attempts
  bool deadline = false;    ///< no deadlineMs: time_left follows limits.deadline
  bool arguments = false;   ///< no arguments: `field in arguments` follows tool.arguments
  bool idempotent = false;  ///< no idempotent: the tool's flag applies
  bool cost = false;        ///< cost_left follows limits.cost (always, when the limits differ)
};

/// Every view of the two versions' input space: one per combination of sent and missing
/// overrides among the settings that differ (a single view when none does).
std::vector<View> views(const PolicySpec& before, const PolicySpec& after,
                        std::int64_t attempt_ceiling);

/// `version` (before or after) rewritten for `view`, its tests on derived attributes in the
/// view's common coordinates (those of `before`, or of the version with a limit where the
/// other has none), its assertions dropped. Its limits (attempts, deadline, cost) are set to
/// those coordinates' so that make_point() computes them, and realize() finds inputs in them.
PolicySpec in_view(const PolicySpec& version, const PolicySpec& before, const PolicySpec& after,
                   const View& view, std::int64_t attempt_ceiling);

/// The retry delays of `spec` waiting by `backoff` (the policy's or a rule's named one) after
/// call `attempt` with Retry-After `hint_ms` (0 when absent): the backoff's range over every
/// jitter draw, floored at min_delay and raised to the hint (and the hint's jitter), as decide()
/// computes it before the deadline's check.
struct DelayBounds {
  std::int64_t min_ms = 0, max_ms = 0;
  bool operator==(const DelayBounds& o) const { return min_ms == o.min_ms && max_ms == o.max_ms; }
  bool operator!=(const DelayBounds& o) const { return !(*this == o); }
};
DelayBounds delay_bounds(const PolicySpec& spec, const Backoff& backoff, std::int64_t attempt,
                         std::int64_t hint_ms);

/// Adds to `spec` (a view's) an assertion that cuts attempt at 1..`last` and retry_after at
/// each bound of either version's delays there, so each cell of a view's table has one delay
/// range per version. Only where the two versions' delays can differ (backoff or min_delay).
void cut_for_delays(PolicySpec& spec, const PolicySpec& before, const PolicySpec& after,
                    std::int64_t last);

/// Whether the two versions' retry delays can differ for some input.
bool delays_differ(const PolicySpec& before, const PolicySpec& after);

}  // namespace recourse::detail
