// The benchmark cases and their agreement checks (see cases.hpp).
#include "cases.hpp"

#include "eval/backoff.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

namespace recourse::bench {

std::atomic<int> g_disagreements{0};

namespace {

constexpr std::uint64_t kSeed = 8;  // issue 8

void disagree(const Case& c, std::size_t i, const char* what) {
  if (g_disagreements.fetch_add(1) < 10)
    std::cerr << "DISAGREE " << c.name << " input " << i << ": " << what << "\n";
}

Bundle compile_or_die(const std::vector<Source>& sources) {
  Result<Bundle> r = compile(sources);
  if (!r.ok()) {
    for (const auto& d : r.diagnostics()) std::cerr << to_text(d) << "\n";
    std::abort();
  }
  return std::move(*r);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    std::abort();
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Cases live for the whole run; built on first use by whichever benchmark needs them.
template <class Key, class Make>
const Case& cached(std::map<Key, std::unique_ptr<Case>>& cache, const Key& key, Make make) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) slot = make();
  return *slot;
}

void fill_inputs(Case& c, const std::string& tool) {
  c.plain = draw_inputs(kInputs, kSeed);
  c.envelopes.resize(kInputs);
  c.contexts.resize(kInputs);
  for (std::size_t i = 0; i < kInputs; ++i) {
    to_engine(c.plain[i], c.envelopes[i], c.contexts[i]);
    c.contexts[i].tool = tool;
  }
}

}  // namespace

std::string source_dir() {
  return RECOURSE_SOURCE_DIR;
}

std::vector<std::string> example_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/rules/examples"))
    if (e.path().extension() == ".recourse") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

Route seed_if_chain(const Envelope& e, const Context& c) noexcept {
  Route r = Route::Stop;
  if (e.code && *e.code == "TRANSIENT" && e.retryable.value_or(false))
    r = Route::Retry;
  else if (e.code && *e.code == "VALIDATION" && e.field && e.suggestion)
    r = Route::Repair;
  else if (e.code && *e.code == "PERMISSION")
    r = Route::Authorize;
  if (r != Route::Retry && r != Route::Repair) return r;
  const SideEffect side = c.side_effect.value_or(SideEffect::Unknown);
  if (side == SideEffect::Committed) return Route::Stop;
  if (side == SideEffect::Unknown && !c.idempotent.value_or(false)) return Route::Escalate;
  if (r == Route::Retry && e.retry_after_ms.value_or(0) > 60000) return Route::Stop;
  if (std::min<std::int64_t>(c.max_attempts.value_or(2), 10) - c.attempt - c.lower_retries <= 0)
    return Route::Stop;
  if (r == Route::Repair && c.repairs >= 1) return Route::Stop;
  return r;
}

SeedDecision seed_full_chain(const Envelope& e, const Context& c) noexcept {
  // The jitter hash the engine documents (SplitMix64 over FNV-1a of the key), keyed by the
  // policy's name.
  using detail::fnv1a;
  using detail::splitmix64;
  static const std::uint64_t seed = splitmix64(fnv1a("*"));
  SeedDecision d;
  const bool transient = e.code && *e.code == "TRANSIENT" && e.retryable.value_or(false);
  const bool fixable = !transient && e.code && *e.code == "VALIDATION" && e.field && e.suggestion;
  const std::int64_t attempts = std::min<std::int64_t>(c.max_attempts.value_or(2), 10);
  d.attempts_left = std::max<std::int64_t>(0, attempts - c.attempt - c.lower_retries);
  d.repairs_left = std::max<std::int64_t>(0, 1 - c.repairs);
  d.attempts_after = d.attempts_left;
  d.repairs_after = d.repairs_left;
  if (transient || fixable) {
    const SideEffect side = c.side_effect.value_or(SideEffect::Unknown);
    d.route = Route::Stop;
    if (side == SideEffect::Committed) {
      d.rule = "gate:committed";
      d.reason = "side effect already committed";
    } else if (side == SideEffect::Unknown && !c.idempotent.value_or(false)) {
      d.route = Route::Escalate;
      d.rule = "gate:unknown_outcome";
      d.reason = "outcome unknown; verify before resending";
    } else if (transient && e.retry_after_ms.value_or(0) > 60000) {
      d.rule = "budget:retry_after";
      d.reason = "server asked to wait longer than retry_after_max";
    } else if (d.attempts_left <= 0) {
      d.rule = "budget:attempts";
      d.reason = "attempt budget spent";
    } else if (fixable && c.repairs >= 1) {
      d.rule = "budget:repairs";
      d.reason = "repair budget spent";
    } else if (fixable) {
      d.route = Route::Repair;
      d.rule = "fix_argument";
      d.repairs_after = d.repairs_left - 1;
      d.attempts_after = d.attempts_left - 1;
    } else {
      d.route = Route::Retry;
      d.rule = "transient";
      d.attempts_after = d.attempts_left - 1;
      const std::string_view key = !c.operation_id.empty() ? std::string_view(c.operation_id)
                                   : e.trace_id            ? std::string_view(*e.trace_id)
                                                           : std::string_view(c.tool);
      const std::int64_t n = std::max<std::int64_t>(c.attempt, 1);
      const std::int64_t cap = n > 7 ? 20000 : std::min<std::int64_t>(20000, 250LL << (n - 1));
      d.jitter_ms = static_cast<std::int64_t>(
          splitmix64(fnv1a(key, seed) ^ splitmix64(static_cast<std::uint64_t>(c.attempt))) %
          static_cast<std::uint64_t>(cap + 1));
      d.delay_ms = std::max({d.jitter_ms, std::int64_t{50}, e.retry_after_ms.value_or(0)});
    }
  } else if (e.code && *e.code == "PERMISSION") {
    d.route = Route::Authorize;
    d.rule = "needs_approval";
  }
  return d;
}

Route peer_if_chain(const PeerPlain& e) noexcept {
  enum : std::uint8_t { kTransient, kValidation, kPermission, kNotFound, kConflict, kRateLimited };
  if (e.side_effect == 2 && !e.idempotent) return Route::Stop;                         // 1
  if (e.attempt >= e.max_attempts) return Route::Stop;                                 // 2
  if (e.code == kTransient && e.retryable) return Route::Retry;                        // 3
  if (e.code == kRateLimited) return Route::Retry;                                     // 4
  if (e.code == kValidation && e.has_field && e.has_suggestion) return Route::Repair;  // 5
  if (e.code == kValidation) return Route::Escalate;                                   // 6
  if (e.code == kPermission) return Route::Authorize;                                  // 7
  if (e.code == kNotFound) return Route::Replace;                                      // 8
  if (e.code == kConflict && e.idempotent) return Route::Retry;                        // 9
  return Route::Stop;                                                                  // 10
}

PeerLookup::PeerLookup() {
  for (std::uint8_t c = 0; c < 8; ++c)
    for (std::uint8_t bits = 0; bits < 16; ++bits)
      for (std::uint8_t side = 0; side < 3; ++side)
        for (std::uint8_t spent = 0; spent < 2; ++spent) {
          const PeerPlain e{c,    std::uint8_t(bits & 1),      std::uint8_t(bits >> 1 & 1),
                            side, std::uint8_t(bits >> 2 & 1), std::uint8_t(bits >> 3 & 1),
                            1,    std::uint8_t(spent ? 1 : 2)};
          routes_[index(e)] = static_cast<std::uint8_t>(peer_if_chain(e));
        }
}

const Case& peer_case() {
  static std::map<int, std::unique_ptr<Case>> cache;
  return cached(cache, 0, [] {
    static constexpr const char* kCodes[] = {"TRANSIENT", "VALIDATION",   "PERMISSION", "NOT_FOUND",
                                             "CONFLICT",  "RATE_LIMITED", "INTERNAL",   "UNKNOWN"};
    auto c = std::make_unique<Case>();
    c->name = "peer";
    c->bundle = compile_or_die(
        {{"peer.recourse", read_file(source_dir() + "/bench/peer/recourse/peer.recourse")}});
    c->policy = &c->bundle.policies().front();
    c->envelopes.resize(kInputs);
    c->contexts.resize(kInputs);
    for (const Plain& p : draw_inputs(kInputs, kSeed)) {  // reshaped to the peer's domain
      const std::uint8_t r = p[1] + 3 * p[6];
      c->peer.push_back(PeerPlain{std::uint8_t(p[0] % 8), std::uint8_t(r & 1), std::uint8_t(p[3]),
                                  p[2], std::uint8_t(r >> 1 & 1), std::uint8_t(r >> 2 & 1),
                                  std::uint8_t(1 + (p[4] + 6 * p[8]) % 10),
                                  std::uint8_t(1 + (p[5] + 5 * p[7]) % 10)});
    }
    for (std::size_t i = 0; i < kInputs; ++i) {
      const PeerPlain& e = c->peer[i];
      Envelope& env = c->envelopes[i];
      Context& ctx = c->contexts[i];
      env.code = kCodes[e.code];
      env.retryable = e.retryable == 1;
      if (e.has_field) env.field = "amount";
      if (e.has_suggestion) env.suggestion = "12.50";
      env.trace_id = "trace-0001";
      ctx.tool = "peer";
      ctx.operation_id = "op-0001";
      ctx.idempotent = e.idempotent == 1;
      ctx.side_effect = static_cast<SideEffect>(e.side_effect);
      ctx.attempt = e.attempt;
      ctx.max_attempts = e.max_attempts;
      const Route chain = peer_if_chain(e);
      if (c->policy->decide(env, ctx).route != chain) disagree(*c, i, "if-chain");
      if (c->peer_lookup.route(e) != chain) disagree(*c, i, "direct lookup");
    }
    return c;
  });
}

const Case& seed_case() {
  static std::map<int, std::unique_ptr<Case>> cache;
  return cached(cache, 0, [] {
    auto c = std::make_unique<Case>();
    c->name = "seed";
    c->bundle = compile_or_die(
        {{"actionable.recourse", read_file(source_dir() + "/rules/bench/actionable.recourse")}});
    c->policy = &c->bundle.policies().front();
    fill_inputs(*c, "seed");
    // The seed's envelope: its four codes matter; a suggestion on some, two attempts at most.
    static constexpr const char* kCodes[] = {"TRANSIENT", "VALIDATION", "PERMISSION", "NOT_FOUND"};
    for (std::size_t i = 0; i < kInputs; ++i) {
      const Plain& p = c->plain[i];
      Envelope& e = c->envelopes[i];
      Context& x = c->contexts[i];
      if (e.code) e.code = kCodes[p[0] % 4];
      if (p[static_cast<std::size_t>(GenAttr::Repeats)] % 2) e.suggestion = "2026-11-30";
      x.attempt = 1 + p[static_cast<std::size_t>(GenAttr::Attempt)] % 2;
      x.repairs = p[static_cast<std::size_t>(GenAttr::Circuit)] == 1 ? 1 : 0;
      x.circuit = CircuitState::Closed;
      x.repeats = 0;
      const Decision d = c->policy->decide(e, x);
      if (seed_if_chain(e, x) != d.route) disagree(*c, i, "if-chain");
      const SeedDecision f = seed_full_chain(e, x);
      if (f.route != d.route || f.rule != d.rule || f.reason != d.reason ||
          f.delay_ms != d.delay_ms || f.jitter_ms != d.jitter_ms ||
          f.attempts_left != d.attempts.before || f.attempts_after != d.attempts.after ||
          f.repairs_left != d.repairs.before || f.repairs_after != d.repairs.after)
        disagree(*c, i, "full if-chain");
    }
    return c;
  });
}

const Case& example_case(const std::string& file) {
  static std::map<std::string, std::unique_ptr<Case>> cache;
  return cached(cache, file, [&] {
    auto c = std::make_unique<Case>();
    c->name = file;
    c->bundle = compile_or_die({{file, read_file(source_dir() + "/rules/examples/" + file)}});
    c->policy = &c->bundle.policies().front();
    fill_inputs(*c, std::string(c->policy->name()));
    for (std::size_t i = 0; i < kInputs; ++i) {  // the table against the reference interpreter
      const Decision d = c->policy->decide(c->envelopes[i], c->contexts[i]);
      const Decision r = recourse::interpret(*c->policy, c->envelopes[i], c->contexts[i]);
      if (d.route != r.route || d.rule != r.rule || d.delay_ms != r.delay_ms)
        disagree(*c, i, "interpreter");
    }
    return c;
  });
}

const Case& generated_case(std::size_t rules) {
  static std::map<std::size_t, std::unique_ptr<Case>> cache;
  return cached(cache, rules, [&] {
    auto c = std::make_unique<Case>();
    c->name = "gen" + std::to_string(rules);
    c->gen = generate(rules, kSeed);
    c->bundle = compile_or_die({{c->name + ".recourse", c->gen.text}});
    c->policy = &c->bundle.policies().front();
    c->lookup = std::make_unique<DirectLookup>(c->gen);
    fill_inputs(*c, "gen");
    for (std::size_t i = 0; i < kInputs; ++i) {
      std::size_t rule = 0;
      const Route chain = if_chain(c->gen, c->plain[i], rule);
      const Decision d = c->policy->decide(c->envelopes[i], c->contexts[i]);
      if (d.route != chain) disagree(*c, i, "if-chain");
      if (c->lookup->route(c->plain[i]) != chain) disagree(*c, i, "direct lookup");
    }
    return c;
  });
}

}  // namespace recourse::bench
