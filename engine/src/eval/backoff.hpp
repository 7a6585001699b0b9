// Backoff and jitter: the delay before the next call, deterministic for the same inputs.
//
// Formulas from "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015), with n the
// number of the call that just failed (Context::attempt) and d = min(max, raw(n)):
//   raw(n): constant base; linear base*n; exponential base*factor^(n-1)
//   jitter none: d      full: U(0, d)      equal: d/2 + U(0, d/2)
//   decorrelated: s(1) = base, s(k) = min(max, U(base, 3*s(k-1))), delay s(n)
// U draws from SplitMix64 (Steele, Lea and Flood, OOPSLA 2014) over a hash of (operation id or
// trace id, n, policy seed): a counter-based generator, never a global RNG, so a replay gives
// byte-identical delays. The result is floored at the policy's min_delay (so full jitter never
// gives 0) and raised to the server's Retry-After hint when that is larger.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/model.hpp"

namespace recourse::detail {

/// SplitMix64's finaliser: a bijective mix of a 64-bit counter.
std::uint64_t splitmix64(std::uint64_t x) noexcept;
/// FNV-1a over bytes (the key's hash before mixing).
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 14695981039346656037ull) noexcept;

struct Delay {
  std::int64_t delay_ms = 0;  ///< what to wait
  std::int64_t draw_ms = 0;   ///< the random part drawn (0 for jitter none)
};

/// The delay after call `attempt` failed (an attempt below 1 counts as 1, for the draw too),
/// before floors and hints. `key` identifies the operation (its hash, mixed with the policy
/// seed); the draw depends on (key, attempt).
Delay backoff_delay(const Backoff& backoff, std::int64_t attempt, std::uint64_t key) noexcept;

/// The wait after a server hint of `hint_ms` (> 0) with `hint_jitter`: hint + U(0, spread), the
/// spread being floor(hint * hint_jitter) held so the wait never passes `cap_ms`
/// (limits.retry_after_max); draw_ms is the part added. Never below the hint; the hint itself
/// when hint_jitter is 0 or the hint is at the cap. The draw is keyed like backoff_delay()'s
/// (operation, attempt, policy seed), so sessions told the same wait spread apart, and the same
/// inputs wait the same.
Delay hint_delay(const Backoff& backoff, std::int64_t hint_ms, std::int64_t attempt,
                 std::uint64_t key, std::int64_t cap_ms) noexcept;
/// The greatest part hint_delay() may add to `hint_ms` (its spread), in ms.
std::int64_t hint_extra_max(const Backoff& backoff, std::int64_t hint_ms,
                            std::int64_t cap_ms) noexcept;

/// The least and the greatest delay backoff_delay() gives after call `attempt` over every key
/// (the jitter's range; both the same for jitter none), before floors and hints, in ms.
struct DelayRange {
  std::int64_t min_ms = 0, max_ms = 0;
  bool operator==(const DelayRange& o) const { return min_ms == o.min_ms && max_ms == o.max_ms; }
};
DelayRange backoff_range(const Backoff& backoff, std::int64_t attempt) noexcept;

}  // namespace recourse::detail
