// Backoff and jitter (see backoff.hpp for the formulas and their source).
#include "eval/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace recourse::detail {

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h) noexcept {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

namespace {

// Uniform integer in [lo, hi] from the k-th draw of `key`.
std::int64_t uniform(std::uint64_t key, std::uint64_t k, std::int64_t lo,
                     std::int64_t hi) noexcept {
  if (hi <= lo) return lo;
  const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
  return lo + static_cast<std::int64_t>(splitmix64(key ^ splitmix64(k)) % span);
}

// The raw delay after call n (>= 1), capped at max.
std::int64_t capped(const Backoff& b, std::int64_t attempt) noexcept {
  const double n = static_cast<double>(attempt);
  double raw = static_cast<double>(b.base_ms);
  if (b.kind == BackoffKind::Linear) raw *= n;
  if (b.kind == BackoffKind::Exponential) raw *= std::pow(b.factor, n - 1);
  return raw >= static_cast<double>(b.max_ms) ? b.max_ms : static_cast<std::int64_t>(raw);
}

}  // namespace

Delay backoff_delay(const Backoff& b, std::int64_t attempt, std::uint64_t key) noexcept {
  attempt = std::max<std::int64_t>(attempt, 1);  // n is at least 1 for the draws as for the delay
  const std::int64_t d = capped(b, attempt);
  switch (b.jitter) {
    case Jitter::None:
      return {d, 0};
    case Jitter::Full: {
      const std::int64_t u = uniform(key, static_cast<std::uint64_t>(attempt), 0, d);
      return {u, u};
    }
    case Jitter::Equal: {
      const std::int64_t u = uniform(key, static_cast<std::uint64_t>(attempt), 0, d - d / 2);
      return {d / 2 + u, u};
    }
    case Jitter::Decorrelated: {
      // The sequence is a function of the key alone; attempts beyond 64 reuse the 64th step
      // (the cap has long been reached by then).
      std::int64_t sleep = b.base_ms;
      const std::int64_t steps = std::min<std::int64_t>(attempt, 64);
      for (std::int64_t k = 2; k <= steps; ++k) {
        const std::int64_t upper = sleep > b.max_ms / 3 ? b.max_ms : 3 * sleep;
        sleep = std::min(b.max_ms, uniform(key, static_cast<std::uint64_t>(k), b.base_ms, upper));
      }
      return {sleep, sleep - b.base_ms};
    }
  }
  return {d, 0};
}

Delay hint_delay(const Backoff& b, std::int64_t hint_ms, std::int64_t attempt, std::uint64_t key,
                 std::int64_t cap_ms) noexcept {
  if (b.hint_jitter <= 0 || hint_ms <= 0) return {hint_ms, 0};
  const std::int64_t spread = hint_extra_max(b, hint_ms, cap_ms);
  // Its own draws (k past 2^32), apart from the backoff's (k = n, or the decorrelated steps).
  const std::uint64_t k =
      (std::uint64_t{1} << 32) + static_cast<std::uint64_t>(std::max<std::int64_t>(attempt, 1));
  const std::int64_t u = uniform(key, k, 0, spread);
  return {hint_ms + u, u};
}

std::int64_t hint_extra_max(const Backoff& b, std::int64_t hint_ms, std::int64_t cap_ms) noexcept {
  if (b.hint_jitter <= 0 || hint_ms <= 0 || hint_ms >= cap_ms) return 0;
  // floor(hint * F) in double precision; hints stay below 2^53 ms wherever a retry is decided
  // (retry_after_max bounds them), so the product is exact enough to floor.
  const double spread = std::floor(static_cast<double>(hint_ms) * b.hint_jitter);
  return std::min(static_cast<std::int64_t>(spread), cap_ms - hint_ms);
}

DelayRange backoff_range(const Backoff& b, std::int64_t attempt) noexcept {
  attempt = std::max<std::int64_t>(attempt, 1);
  const std::int64_t d = capped(b, attempt);
  switch (b.jitter) {
    case Jitter::None:
      return {d, d};
    case Jitter::Full:
      return {0, d};
    case Jitter::Equal:
      return {d / 2, d};
    case Jitter::Decorrelated: {
      // Each step draws from [base, 3 * previous]: the greatest sequence triples up to the cap.
      std::int64_t high = b.base_ms;
      const std::int64_t steps = std::min<std::int64_t>(attempt, 64);
      for (std::int64_t k = 2; k <= steps; ++k)
        high = std::min(b.max_ms, high > b.max_ms / 3 ? b.max_ms : 3 * high);
      return {steps == 1 ? b.base_ms : std::min(b.max_ms, b.base_ms), high};
    }
  }
  return {d, d};
}

}  // namespace recourse::detail
