// Generated policies and their baselines (see generate.hpp).
#include "generate.hpp"

#include <fmt/format.h>

namespace recourse::bench {
namespace {

constexpr const char* kCodes[] = {"TRANSIENT",        "RATE_LIMITED", "TIMEOUT",  "VALIDATION",
                                  "PERMISSION",       "NOT_FOUND",    "CONFLICT", "QUOTA_EXCEEDED",
                                  "CONTEXT_OVERFLOW", "UNKNOWN",      "PENDING"};
constexpr std::uint8_t kCodeCount = std::size(kCodes);  // the code absent is kCodeCount
static_assert(kDomain[static_cast<std::size_t>(GenAttr::Code)] == kCodeCount + 1);
constexpr std::uint8_t kRetrySafe[] = {0, 1, 2, 6, 9, 10};  // never CONTEXT_OVERFLOW (E103)
constexpr const char* kSideEffects[] = {"none", "unknown", "committed"};
constexpr const char* kCircuits[] = {"closed", "open", "half_open"};
constexpr const char* kBools[] = {"false", "true"};
constexpr std::int64_t kRetryAfterCuts[] = {1000, 5000, 30000};  // thresholds rules compare with

/// splitmix64 as a stream: the same numbers on every platform and standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t x = (s_ += 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  std::uint8_t below(std::size_t n) { return static_cast<std::uint8_t>(next() % n); }

 private:
  std::uint64_t s_;
};

// The first plain retry_after index whose value is >= `ms` (values are sorted; 0 is absent).
std::uint8_t first_at_least(std::int64_t ms) {
  std::uint8_t i = 1;
  while (i < kRetryAfterMs.size() && kRetryAfterMs[i] < ms) ++i;
  return i;
}

// A random test on `attr`, and its text.
GenTest make_test(GenAttr attr, bool retry, Rng& rng, std::string& text) {
  GenTest t{attr, 0, 0, 0};
  const bool below = rng.below(2) == 0;
  switch (attr) {
    case GenAttr::Code: {
      const std::size_t n = 1 + rng.below(3);
      std::string names;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t c =
            retry ? kRetrySafe[rng.below(std::size(kRetrySafe))] : rng.below(kCodeCount);
        if (t.codes & (1u << c)) continue;
        t.codes |= static_cast<std::uint16_t>(1u << c);
        names += fmt::format("{}{}", names.empty() ? "" : ", ", kCodes[c]);
      }
      text = names.find(',') == std::string::npos ? "code == " + names : "code in [" + names + "]";
      break;
    }
    case GenAttr::Retryable:
    case GenAttr::Idempotent:
      t.lo = t.hi = rng.below(2);
      text = fmt::format("{} == {}", attr == GenAttr::Retryable ? "retryable" : "idempotent",
                         kBools[t.lo]);
      break;
    case GenAttr::SideEffect:
      t.lo = t.hi = rng.below(3);
      text = fmt::format("side_effect == {}", kSideEffects[t.lo]);
      break;
    case GenAttr::Circuit:
      t.lo = t.hi = rng.below(3);
      text = fmt::format("circuit == {}", kCircuits[t.lo]);
      break;
    case GenAttr::Attempt: {  // plain value attempt - 1
      const std::uint8_t k = static_cast<std::uint8_t>(2 + rng.below(4));
      t.lo = below ? 0 : k - 1;
      t.hi = below ? k - 2 : kDomain[static_cast<std::size_t>(attr)] - 1;
      text = fmt::format("attempt {} {}", below ? "<" : ">=", k);
      break;
    }
    case GenAttr::RetryAfter: {
      const std::int64_t ms = kRetryAfterCuts[rng.below(std::size(kRetryAfterCuts))];
      const std::uint8_t first = first_at_least(ms);
      t.lo = below ? 1 : first;
      t.hi = below ? first - 1 : kRetryAfterMs.size() - 1;
      text = fmt::format("retry_after {} {}ms", below ? "<" : ">=", ms);
      break;
    }
    case GenAttr::Field:
      t.lo = t.hi = rng.below(5);  // absent, or one of the first four names
      text = t.lo == 0 ? std::string("field is absent")
                       : fmt::format("field == \"{}\"", kFields[t.lo]);
      break;
    case GenAttr::Repeats:
      t.lo = static_cast<std::uint8_t>(1 + rng.below(3));
      t.hi = 3;
      text = fmt::format("repeats >= {}", t.lo);
      break;
    case GenAttr::kCount:
      break;
  }
  return t;
}

Route draw_route(Rng& rng) {
  static constexpr Route kRoutes[] = {Route::Retry,   Route::Retry,     Route::Retry,
                                      Route::Repair,  Route::Authorize, Route::Replace,
                                      Route::Degrade, Route::Escalate,  Route::Escalate,
                                      Route::Stop,    Route::Stop};
  return kRoutes[rng.below(std::size(kRoutes))];
}

bool holds(const GenTest& t, const Plain& in) noexcept {
  const std::uint8_t v = in[static_cast<std::size_t>(t.attr)];
  if (t.attr == GenAttr::Code) return v < kCodeCount && ((t.codes >> v) & 1u);
  return v >= t.lo && v <= t.hi;
}

}  // namespace

GenPolicy generate(std::size_t rules, std::uint64_t seed) {
  Rng rng(seed);
  GenPolicy out;
  out.text =
      "version 1\npolicy \"gen\" {\n  tool   { arguments = [amount, currency, date] }\n"
      "  limits { attempts = 10 }\n";
  for (std::size_t r = 0; r < rules; ++r) {
    GenRule rule;
    rule.route = draw_route(rng);
    const bool retry = rule.route == Route::Retry;
    const std::size_t n = 2 + rng.below(3);
    std::uint32_t used = retry ? 1u : 0u;  // a retry rule always tests the code (first)
    std::string when;
    for (std::size_t i = 0; i < n; ++i) {
      GenAttr attr = GenAttr::Code;
      if (!(retry && i == 0)) {
        do attr = static_cast<GenAttr>(rng.below(kGenAttrs));
        while (used & (1u << static_cast<unsigned>(attr)));
        used |= 1u << static_cast<unsigned>(attr);
      }
      std::string text;
      rule.tests.push_back(make_test(attr, retry, rng, text));
      when += (when.empty() ? "" : " and ") + text;
    }
    const char* target = rule.route == Route::Replace ? " \"gen.fallback\"" : "";
    out.text += fmt::format("  rule r{} when {} -> {}{}\n", r, when, to_string(rule.route), target);
    out.rules.push_back(std::move(rule));
  }
  out.text += "  default -> stop\n}\n";
  return out;
}

std::vector<Plain> draw_inputs(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Plain> out(n);
  for (auto& p : out)
    for (std::size_t a = 0; a < kGenAttrs; ++a) p[a] = rng.below(kDomain[a]);
  return out;
}

void to_engine(const Plain& p, Envelope& e, Context& c) {
  auto at = [&](GenAttr a) { return p[static_cast<std::size_t>(a)]; };
  e = Envelope{};
  if (at(GenAttr::Code) < kCodeCount) e.code = kCodes[at(GenAttr::Code)];
  if (at(GenAttr::Retryable) < 2) e.retryable = at(GenAttr::Retryable) == 1;
  if (at(GenAttr::RetryAfter) > 0) e.retry_after_ms = kRetryAfterMs[at(GenAttr::RetryAfter)];
  if (at(GenAttr::Field) > 0) e.field = kFields[at(GenAttr::Field)];
  e.trace_id = "trace-0001";
  c = Context{};
  c.tool = "gen";
  c.operation_id = "op-0001";
  c.side_effect = static_cast<SideEffect>(at(GenAttr::SideEffect));
  c.idempotent = at(GenAttr::Idempotent) == 1;
  c.attempt = at(GenAttr::Attempt) + 1;
  c.circuit = static_cast<CircuitState>(at(GenAttr::Circuit));
  c.repeats = at(GenAttr::Repeats);
}

Route if_chain(const GenPolicy& policy, const Plain& in, std::size_t& rule) noexcept {
  const auto& rules = policy.rules;
  rule = rules.size();
  Route route = Route::Stop;
  for (std::size_t r = 0; r < rules.size(); ++r) {
    bool all = true;
    for (const GenTest& t : rules[r].tests) all = all && holds(t, in);
    if (all) {
      rule = r;
      route = rules[r].route;
      break;
    }
  }
  if (route != Route::Retry && route != Route::Repair) return route;
  const std::uint8_t side = in[static_cast<std::size_t>(GenAttr::SideEffect)];
  if (side == 2) return Route::Stop;  // committed
  if (side == 1 && in[static_cast<std::size_t>(GenAttr::Idempotent)] == 0) return Route::Escalate;
  const std::uint8_t wait = in[static_cast<std::size_t>(GenAttr::RetryAfter)];
  if (route == Route::Retry && wait > 0 && kRetryAfterMs[wait] > 60000) return Route::Stop;
  if (10 - (in[static_cast<std::size_t>(GenAttr::Attempt)] + 1) <= 0) return Route::Stop;
  return route;  // budget:repairs cannot fire: the inputs have made no repairs
}

DirectLookup::DirectLookup(const GenPolicy& policy) {
  std::size_t size = 1;
  for (std::uint8_t d : kDomain) size *= d;
  routes_.resize(size);
  Plain p{};
  for (std::size_t index = 0; index < size; ++index) {
    std::size_t rest = index;
    for (std::size_t a = kGenAttrs; a-- > 0;) {
      p[a] = static_cast<std::uint8_t>(rest % kDomain[a]);
      rest /= kDomain[a];
    }
    std::size_t rule = 0;
    routes_[index] = static_cast<std::uint8_t>(if_chain(policy, p, rule));
  }
}

}  // namespace recourse::bench
