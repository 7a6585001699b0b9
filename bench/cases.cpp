// The benchmark cases and their agreement checks (see cases.hpp).
#include "cases.hpp"

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
  CompileResult r = compile(sources);
  if (!r.ok()) {
    for (const auto& d : r.diagnostics) std::cerr << to_text(d) << "\n";
    std::abort();
  }
  return std::move(*r.bundle);
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
      if (seed_if_chain(e, x) != c->policy->decide(e, x).route) disagree(*c, i, "if-chain");
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
      const Decision r = c->policy->interpret(c->envelopes[i], c->contexts[i]);
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
