// A compiled policy: its checked spec, its decision table and what decide() needs besides.
// Immutable once built; shared (through Policy) between threads.
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "table/table.hpp"

namespace recourse::detail {

/// The policy's codes by name, for decide(): open addressing over a hash of every byte (eight
/// at a time), then one comparison. Allocates nothing on lookup (a std::unordered_map divides by
/// a prime). Every byte counts: a policy may declare thousands of codes that differ in one byte,
/// and a hash of a few of them put those in one run of slots.
class CodeIndex {
 public:
  /// Adds `name` (a view into the policy's code table) with its id; amortized constant time.
  void emplace(std::string_view name, std::int64_t id);
  /// The id of `name`, or -1.
  std::int64_t find(std::string_view name) const noexcept {
    if (slots_.empty()) return -1;
    for (std::size_t i = hash(name) & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].id < 0) return -1;
      if (same(slots_[i].name, name)) return slots_[i].id;
    }
  }

 private:
  // a == b by eight-byte words: codes are short, and a call to memcmp costs more than them.
  static bool same(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    std::size_t i = 0;
    for (; i + 8 <= a.size(); i += 8) {
      std::uint64_t x, y;
      std::memcpy(&x, a.data() + i, 8);
      std::memcpy(&y, b.data() + i, 8);
      if (x != y) return false;
    }
    for (; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  // Each word is folded in by a multiply; SplitMix64's finaliser spreads the result over the
  // low bits the table indexes by.
  static std::size_t hash(std::string_view s) noexcept {
    std::uint64_t h = s.size();
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    }
    if (i < s.size()) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i);
      h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    }
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
  struct Slot {
    std::string_view name;
    std::int64_t id = -1;
  };
  void place(const Slot& slot);        // into slots_, which has a free slot
  std::vector<Slot> entries_, slots_;  // slots_: a power of two, at most a quarter full
};

struct Compiled {
  PolicySpec spec;
  Table table;
  std::string hash;        ///< "sha256:<hex>" of the dump without positions: same table, same hash
  CodeIndex code_ids;      ///< views into spec.codes
  std::uint64_t seed = 0;  ///< jitter seed, from the policy's name
  std::int64_t attempt_ceiling = 10;
  SteeringLimits steering;  ///< the steering detector's limits (CompileOptions::steering)
  /// The attributes decide() computes: the table's columns and what finish() reads.
  std::uint32_t wanted = kAllAttrs;

  /// Builds the compiled form (the table must come from compile(spec)).
  static std::shared_ptr<const Compiled> make(PolicySpec spec, Table table,
                                              std::int64_t attempt_ceiling,
                                              const SteeringLimits& steering = {});
};

/// The attributes in `wanted` (a mask of bit(Attr)) of one input, computed before the lookup;
/// the code is always resolved. Unknown codes read as UNKNOWN with the recourse::kUnknownCode
/// warning set and `nearest` naming the known code closest to the input.
Point make_point(const Compiled& policy, const Envelope& envelope, const Context& context,
                 std::uint32_t wanted, std::uint32_t& warnings, std::string_view& nearest) noexcept;

/// The trace id minted for an envelope without one: a hash of (tool, operation id, attempt,
/// seed), printed as "local-%016x".
std::uint64_t mint_trace_id(const Context& context, std::uint64_t seed) noexcept;

/// The idempotency-key directive of a decision with `route`: when the tool honours keys, a
/// retry resends the same key and a repair sends a new one; otherwise none. (finish() clears it
/// when the deadline turns a retry into a stop.)
inline KeyDirective key_directive(const PolicySpec& spec, Route route) noexcept {
  if (!spec.honours_keys) return KeyDirective::None;
  return route == Route::Retry    ? KeyDirective::Reuse
         : route == Route::Repair ? KeyDirective::New
                                  : KeyDirective::None;
}

/// Fills a decision from the action chosen (by the table or the interpreter; `label`,
/// `exhausted` and the action must live in `policy`): delay, budgets, key directive, trace id.
/// `rule_attempts` is the deciding rule's own cap on attempts (`with attempts N`) when the
/// action is a guard's that does not carry it (the interpreter's); nullopt: the action's.
void finish(const Compiled& policy, const Action& action, std::string_view label,
            std::string_view exhausted, const Point& point, const Envelope& envelope,
            const Context& context, Decision& decision,
            std::optional<std::int64_t> rule_attempts = std::nullopt) noexcept;

}  // namespace recourse::detail
