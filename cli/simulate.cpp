// `recourse simulate`: the model (see simulate.hpp and docs/simulate.md).
#include "simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "recourse/state.hpp"

namespace recourse::sim {
namespace {

// Lanes: independent streams of rolls for the same (seed, run, op, step).
enum Lane : std::uint64_t {
  kLaneFail = 1,         // step 0: the first call fails
  kLaneClass,            // step 0: the failure's class
  kLaneTool,             // step 0: the tool the operation calls
  kLaneField,            // step 0: the argument a validation failure names
  kLaneOutcome,          // step s >= 1: recovery call s succeeds
  kLaneTimeout,          // step s: a transient failure of call s is a timeout
  kLaneApplied,          // step s: a timed-out call s was applied
  kLaneToolTraits = 100  // per tool (op = tool index, step 0): + the trait's index
};
enum Trait : std::uint64_t {
  kAllRetryable,
  kMismatched,
  kAbsurd,
  kNoTrace,
  kBogus,
  kNonIdempotent
};

constexpr std::int64_t kCallMs = 100;        // every call takes this long
constexpr std::int64_t kOpSpacingMs = 1000;  // operation k starts at k seconds (run-local clock)
constexpr std::int64_t kNormalRetryAfterMs = 1000;
constexpr std::int64_t kAbsurdRetryAfterMs = 30LL * 24 * 3600 * 1000;  // 30 days
constexpr std::int64_t kLongestWaitMs = 10 * kAbsurdRetryAfterMs;      // keeps the clock finite
constexpr std::int64_t kNaiveBaseMs = 250;  // naive backoff without a Retry-After: 250ms * 2^k
const std::vector<std::string> kArguments = {"id", "query", "limit", "date"};

std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Tool {
  std::string name;
  bool idempotent = true;
  bool all_retryable = false, mismatched = false, absurd = false, no_trace = false, bogus = false;
};

std::vector<Tool> make_tools(const Scenario& s, std::uint64_t run) {
  std::vector<Tool> tools(static_cast<std::size_t>(s.tools));
  for (std::size_t i = 0; i < tools.size(); ++i) {
    auto has = [&](Trait t, double fraction) {
      return roll(s.seed, run, i, 0, kLaneToolTraits + t) < fraction;
    };
    Tool& t = tools[i];
    t.name = fmt::format("sim.tool{}", i);
    t.all_retryable = has(kAllRetryable, s.all_retryable);
    t.mismatched = has(kMismatched, s.mismatched);
    t.absurd = has(kAbsurd, s.absurd_retry_after);
    t.no_trace = has(kNoTrace, s.no_trace_id);
    t.bogus = has(kBogus, s.bogus_field);
    t.idempotent = !has(kNonIdempotent, s.non_idempotent);
  }
  return tools;
}

std::size_t pick_index(double u, std::size_t n) {
  return std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)));
}

Failure pick_failure(double u, const std::array<double, 4>& mix) {
  double total = 0;
  for (double w : mix) total += w;
  double at = u * total;
  for (std::size_t i = 0; i < 3; ++i) {
    if (at < mix[i]) return static_cast<Failure>(i);
    at -= mix[i];
  }
  return Failure::NotFound;
}

// The state of one failing operation, as the simulated world knows it.
struct Failing {
  Failure failure = Failure::Transient;
  bool timeout = false;                 // the last call timed out
  bool applied = false;                 // hidden: some call's effect was in fact applied
  SideEffect known = SideEffect::None;  // what the host knows
  std::size_t field = 0;                // the argument a validation failure names
};

Envelope make_envelope(const Tool& tool, EnvelopeKind kind, const Failing& f, std::uint64_t run,
                       std::uint64_t op, std::uint64_t step) {
  Envelope e;
  if (!tool.no_trace) e.trace_id = fmt::format("t-{}-{}-{}", run, op, step);
  if (kind == EnvelopeKind::Generic) {
    e.message = "Something went wrong";
    return e;
  }
  const bool transient = f.failure == Failure::Transient;
  e.code = f.timeout ? "TIMEOUT" : kFailureCodes[static_cast<std::size_t>(f.failure)];
  static constexpr std::array<const char*, 4> messages = {
      "upstream unavailable", "invalid argument", "permission denied", "not found"};
  e.message = f.timeout ? "request timed out" : messages[static_cast<std::size_t>(f.failure)];
  bool retryable = transient;
  if (tool.mismatched) retryable = !retryable;
  if (tool.all_retryable) retryable = true;
  e.retryable = retryable;
  if (kind != EnvelopeKind::Full) return e;
  if (f.failure == Failure::Validation) {
    const std::string field = tool.bogus ? "nonexistent_field" : kArguments[f.field];
    e.field = field;
    e.suggestion = fmt::format("send a valid {}", field);
  }
  if (transient && !f.timeout)
    e.retry_after_ms = tool.absurd ? kAbsurdRetryAfterMs : kNormalRetryAfterMs;
  return e;
}

// The chance that a recovery call succeeds; 0 marks a call that cannot succeed.
double success_chance(const Scenario& s, const Failing& f, Route route, const Envelope& e,
                      const Tool& tool) {
  switch (f.failure) {
    case Failure::Transient:
      return s.transient_success;
    case Failure::Validation:
      if (route != Route::Repair) return 0;  // a blind retry of a validation failure never succeeds
      if (e.field && e.suggestion) return tool.bogus ? 0 : s.repair_hint;
      return s.repair_code;
    default:
      return 0;  // permanent
  }
}

class Runner {
 public:
  Runner(const Scenario& s, const Strategy& st, Metrics& m) : s_(s), st_(st), m_(m) {}

  void run(std::uint64_t run) {
    const std::vector<Tool> tools = make_tools(s_, run);
    Workflow workflow(st_.store, fmt::format("{}/r{}", st_.scope, run));
    for (std::uint64_t op = 0; op < static_cast<std::uint64_t>(s_.ops); ++op)
      operation(tools, workflow, run, op);
  }

 private:
  double u(std::uint64_t run, std::uint64_t op, std::uint64_t step, Lane lane) const {
    return roll(s_.seed, run, op, step, lane);
  }

  void operation(const std::vector<Tool>& tools, Workflow& wf, std::uint64_t run,
                 std::uint64_t op) {
    ++m_.operations;
    const Tool& tool = tools[pick_index(u(run, op, 0, kLaneTool), tools.size())];
    const bool policy_run = st_.controller == Controller::Policy;
    const Policy* policy = policy_run ? st_.bundle->find(tool.name) : nullptr;
    const std::int64_t cost = policy ? policy->call_cost() : 1;

    Context ctx;
    ctx.tool = tool.name;
    ctx.idempotent = tool.idempotent;
    ctx.side_effect = SideEffect::None;
    ctx.arguments = kArguments;
    ctx.operation_id = fmt::format("r{}-o{}", run, op);
    ctx.workflow_id = fmt::format("r{}", run);
    ctx.args_hash = "v0";
    const std::int64_t start = static_cast<std::int64_t>(op + 1) * kOpSpacingMs;
    std::int64_t now = start;
    auto call = [&] {
      ++m_.attempts;
      if (policy_run) wf.record_attempt(ctx, cost, now);
      now += kCallMs;
    };
    auto resolved = [&](const Failing* f) {
      ++m_.resolved;
      if (f) ++m_.resolved_after[static_cast<std::size_t>(f->failure)];
      if (policy_run) wf.record_success(ctx);
    };

    call();
    const bool fails = u(run, op, 0, kLaneFail) < s_.failure_rate;
    Failing f;
    if (fails) {
      f.failure = pick_failure(u(run, op, 0, kLaneClass), s_.mix);
      f.field = pick_index(u(run, op, 0, kLaneField), kArguments.size());
    }
    m_.operations_digest =
        mix64(m_.operations_digest ^
              mix64((op << 16) ^ (pick_index(u(run, op, 0, kLaneTool), tools.size()) << 4) ^
                    (fails ? 8u + static_cast<unsigned>(f.failure) : 0u)));
    if (!fails) return resolved(nullptr);
    ++m_.failures[static_cast<std::size_t>(f.failure)];
    failed_at(f, run, op, 0);

    std::int64_t recoveries = 0, version = 0;
    for (std::uint64_t step = 0;;) {
      const Envelope e = make_envelope(tool, st_.envelope, f, run, op, step);
      Route route = Route::Stop;
      std::int64_t wait = 0;
      if (policy_run) {
        ctx.side_effect = f.known;
        wf.record_failure(ctx, e);
        for (bool verified = false;;) {
          Context c = ctx;
          c.now_ms = now;
          wf.apply(c, now);
          const Decision d = st_.bundle->decide(e, c);
          wf.record_decision(c, d);
          ++m_.routes[to_string(d.route)];
          ++m_.rules[std::string(d.rule)];
          for (const auto& [bit, kind] : kDecisionWarningKinds)
            if (d.warnings & bit) ++m_.warnings[kind];
          // An unknown outcome sent to another tool: the host verifies (one call of the verify
          // tool), which tells whether the effect was applied.
          if (d.route == Route::Replace && f.known == SideEffect::Unknown && !tool.idempotent &&
              !verified) {
            ++m_.verifications;
            now += kCallMs;
            verified = true;
            if (f.applied) return resolved(&f);
            f.known = SideEffect::None;
            ctx.side_effect = f.known;
            continue;
          }
          route = d.route;
          wait = d.delay_ms;
          break;
        }
      } else {
        const bool wants = st_.controller == Controller::RetryAll || e.retryable.value_or(false);
        route = wants && recoveries < s_.naive_retries ? Route::Retry : Route::Stop;
        wait = e.retry_after_ms.value_or(kNaiveBaseMs << std::min<std::int64_t>(recoveries, 20));
        ++m_.routes[to_string(route)];
      }
      if (route != Route::Retry && route != Route::Repair) return;
      if (recoveries >= s_.recoveries) {
        ++m_.horizon;
        return;
      }

      // The recovery call.
      ++recoveries;
      ++step;
      ++(route == Route::Retry ? m_.retries : m_.repairs);
      now += std::min(wait, kLongestWaitMs);
      const bool late = now - start > s_.deadline_ms;
      if (!tool.idempotent && f.known != SideEffect::None) {
        ++m_.violations;
        if (f.applied) ++m_.duplicates;
      }
      if (f.failure == Failure::Permission || f.failure == Failure::NotFound)
        ++m_.permanent_retries;
      double p = success_chance(s_, f, route, e, tool);
      if (late) {
        ++m_.late;
        p = 0;
      }
      if (p <= 0) ++m_.wasted;
      if (route == Route::Repair) ctx.args_hash = fmt::format("v{}", ++version);
      call();
      if (u(run, op, step, kLaneOutcome) < p) return resolved(&f);
      ++m_.failed_retries;
      if (late) return;
      failed_at(f, run, op, step);
    }
  }

  // The call `step` failed: a transient failure may be a timeout, whose outcome the host does
  // not know (and which may have been applied).
  void failed_at(Failing& f, std::uint64_t run, std::uint64_t op, std::uint64_t step) const {
    f.timeout = f.failure == Failure::Transient && u(run, op, step, kLaneTimeout) < s_.timeouts;
    if (!f.timeout) return;
    if (f.known == SideEffect::None) f.known = SideEffect::Unknown;
    if (u(run, op, step, kLaneApplied) < s_.timeout_applied) f.applied = true;
  }

  const Scenario& s_;
  const Strategy& st_;
  Metrics& m_;
};

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

const char* to_string(EnvelopeKind kind) noexcept {
  switch (kind) {
    case EnvelopeKind::Generic:
      return "generic";
    case EnvelopeKind::Code:
      return "code";
    default:
      return "full";
  }
}

bool Scenario::is_seed() const noexcept {
  const Scenario d;
  return failure_rate == d.failure_rate && mix[0] == mix[1] && mix[1] == mix[2] &&
         mix[2] == mix[3] && transient_success == d.transient_success &&
         repair_code == d.repair_code && repair_hint == d.repair_hint &&
         recoveries == d.recoveries && all_retryable == 0 && mismatched == 0 &&
         absurd_retry_after == 0 && no_trace_id == 0 && bogus_field == 0 && non_idempotent == 0 &&
         timeouts == 0;
}

Scenario hostile_preset() {
  Scenario s;
  s.all_retryable = 0.2;
  s.mismatched = 0.1;
  s.absurd_retry_after = 0.1;
  s.no_trace_id = 0.2;
  s.bogus_field = 0.2;
  s.non_idempotent = 0.3;
  s.timeouts = 0.3;
  s.recoveries = 3;
  return s;
}

std::optional<Strategy> parse_strategy(const std::string& spec, std::string& error) {
  Strategy st;
  std::string rest = spec;
  std::optional<EnvelopeKind> kind;
  if (const auto colon = spec.find(':'); colon != std::string::npos) {
    const std::string prefix = spec.substr(0, colon);
    if (prefix == "generic" || prefix == "code" || prefix == "full") {
      kind = prefix == "generic" ? EnvelopeKind::Generic
             : prefix == "code"  ? EnvelopeKind::Code
                                 : EnvelopeKind::Full;
      rest = spec.substr(colon + 1);
    }
  }
  st.source = rest;
  if (!rest.empty() && rest[0] == '@') {
    if (rest == "@retry-all")
      st.controller = Controller::RetryAll;
    else if (rest == "@retryable")
      st.controller = Controller::Retryable;
    else {
      error = fmt::format("unknown built-in controller {} (known: @retry-all, @retryable)", rest);
      return std::nullopt;
    }
    st.name = rest.substr(1);
    st.envelope = kind.value_or(EnvelopeKind::Full);
  } else {
    if (rest.empty()) {
      error = fmt::format("strategy {} names no policy file", spec);
      return std::nullopt;
    }
    st.name = std::filesystem::path(rest).stem().string();
    if (st.name.empty()) st.name = rest;
    st.envelope = kind                              ? *kind
                  : starts_with(st.name, "generic") ? EnvelopeKind::Generic
                  : starts_with(st.name, "code")    ? EnvelopeKind::Code
                                                    : EnvelopeKind::Full;
  }
  if (kind) st.name = fmt::format("{}:{}", to_string(*kind), st.name);
  return st;
}

double Metrics::resolution() const noexcept {
  return operations ? static_cast<double>(resolved) / static_cast<double>(operations) : 0;
}
double Metrics::attempts_per_op() const noexcept {
  return operations ? static_cast<double>(attempts) / static_cast<double>(operations) : 0;
}

double roll(std::uint64_t seed, std::uint64_t run, std::uint64_t op, std::uint64_t step,
            std::uint64_t lane) noexcept {
  std::uint64_t h = mix64(seed);
  h = mix64(h ^ run);
  h = mix64(h ^ op);
  h = mix64(h ^ step);
  h = mix64(h ^ lane);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

Metrics simulate(const Scenario& scenario, const Strategy& strategy) {
  Metrics m;
  Runner runner(scenario, strategy, m);
  for (std::uint64_t run = 0; run < static_cast<std::uint64_t>(scenario.runs); ++run)
    runner.run(run);
  return m;
}

const Published& published(EnvelopeKind kind) noexcept {
  static constexpr std::array<Published, 3> rows = {{
      {"generic message", 0.671, 1.402, 3953, 2449},
      {"error code only", 0.712, 1.198, 1005, 0},
      {"actionable envelope", 0.755, 1.198, 487, 0},
  }};
  return rows[static_cast<std::size_t>(kind)];
}

}  // namespace recourse::sim
