// A compiled policy: its checked spec, its decision table and what decide() needs besides.
// Immutable once built; shared (through Policy and Decision::keep_alive) between threads.
#pragma once

#include <string>
#include <unordered_map>

#include "table.hpp"

namespace recourse::detail {

struct Compiled {
  PolicySpec spec;
  Table table;
  std::string hash;  ///< "sha256:<hex>" of the dump without positions: same table, same hash
  std::unordered_map<std::string_view, std::int64_t> code_ids;  ///< views into spec.codes
  std::uint64_t seed = 0;  ///< jitter seed, from the policy's name
  std::int64_t attempt_ceiling = 10;

  /// Builds the compiled form (the table must come from compile(spec)).
  static std::shared_ptr<const Compiled> make(PolicySpec spec, Table table,
                                              std::int64_t attempt_ceiling);
};

/// Every attribute of one input, computed before the lookup. Unknown codes read as UNKNOWN with
/// the recourse::kUnknownCode warning set and `nearest` naming the known code closest to the input.
Point make_point(const Compiled& policy, const Envelope& envelope, const Context& context,
                 std::uint32_t& warnings, std::string_view& nearest) noexcept;

/// The trace id minted for an envelope without one: a hash of (tool, operation id, attempt,
/// seed), printed as "local-%016x".
std::uint64_t mint_trace_id(const Context& context, std::uint64_t seed) noexcept;

/// Fills a decision from the action chosen (by the table or the interpreter; `label` and
/// `exhausted` must live in `policy`): delay, budgets, key directive, trace id.
void finish(const Compiled& policy, const Action& action, std::string_view label,
            std::string_view exhausted, std::uint32_t row, const Point& point,
            const Envelope& envelope, const Context& context, Decision& decision) noexcept;

}  // namespace recourse::detail
