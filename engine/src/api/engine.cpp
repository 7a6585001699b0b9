// Engine: the current bundle behind an atomic generation counter, a per-thread snapshot cache and
// per-thread counter shards (engine.hpp explains the read path).
#include "recourse/engine.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <thread>

namespace recourse {

namespace detail {

// Named, not file-local: Engine::Impl holds them, and GCC warns of a class whose fields have
// file-local types (-Wsubobject-linkage) where a unity build includes this file.

// A thread's counts for one engine. Written by its thread, read by counters(); both lock it.
struct EngineShard {
  std::mutex mutex;
  std::uint64_t decisions = 0;
  std::array<std::uint64_t, 7> routes{};  // by Route
  std::map<std::string, std::map<std::string, std::uint64_t, std::less<>>, std::less<>> rules;
  std::map<std::string, std::uint64_t, std::less<>> exhausted;
  ShadowCounters shadow;
};

// One immutable snapshot: what a decision needs.
struct EngineState {
  Bundle bundle;
  std::shared_ptr<const Bundle> candidate;  // shadow policies (engine.hpp); null without one
  DecisionLog log;
  std::uint64_t generation = 0;
};

}  // namespace detail

namespace {

using Shard = detail::EngineShard;
using State = detail::EngineState;

std::atomic<std::uint64_t> next_engine_id{1};

// The thread's cached snapshot of one engine. Engine ids are never reused, so a slot of an
// engine that is gone is never matched again (its `shard` is never dereferenced). `pin` holds
// the snapshot, and so the strings of this thread's decisions, until the next refresh.
struct Slot {
  std::uint64_t engine = 0;
  std::uint64_t generation = 0;
  std::shared_ptr<const State> pin;
  Shard* shard = nullptr;
};
constexpr std::size_t kSlots = 4;  // engines a thread alternates between without a refresh
thread_local std::array<Slot, kSlots> slots;
thread_local std::size_t next_victim = 0;

// The entry for `key`, made on first use.
template <typename Map>
typename Map::mapped_type& count_of(Map& map, std::string_view key) {
  auto it = map.find(key);
  if (it == map.end()) it = map.emplace(std::string(key), typename Map::mapped_type{}).first;
  return it->second;
}

// The candidate that shadows a decision for context.tool: one with a policy for the tool.
const Bundle* shadowing(const State& s, const Context& context) noexcept {
  return s.candidate && s.candidate->find(context.tool) ? s.candidate.get() : nullptr;
}

}  // namespace

struct Engine::Impl {
  const std::uint64_t id = next_engine_id.fetch_add(1);
  const EngineOptions options;
  std::atomic<std::uint64_t> generation{0};
  std::mutex mutex;  // guards state and shards; never held while deciding
  std::shared_ptr<const State> state;
  std::map<std::thread::id, std::unique_ptr<Shard>> shards;

  explicit Impl(EngineOptions o) : options(o) {}

  // The thread's snapshot: one acquire load when the cache is current; else a refresh under the
  // mutex (copying the state's pointer allocates nothing). Never throws: without memory for a
  // shard, the thread decides uncounted.
  const Slot& current() noexcept {
    const std::uint64_t g = generation.load(std::memory_order_acquire);
    Slot* slot = nullptr;
    for (Slot& s : slots)
      if (s.engine == id) slot = &s;
    if (slot && slot->generation == g) return *slot;
    if (!slot) slot = &slots[next_victim++ % kSlots];
    std::shared_ptr<const State> old = std::move(slot->pin);  // released after the unlock
    std::lock_guard<std::mutex> lock(mutex);
    Shard* mine = nullptr;
    if (options.count || state->candidate) try {
        auto& owned = shards[std::this_thread::get_id()];
        if (!owned) owned = std::make_unique<Shard>();
        mine = owned.get();
      } catch (...) {
      }
    slot->pin = state;
    slot->engine = id;
    slot->generation = state->generation;
    slot->shard = mine;
    return *slot;
  }

  // A new state: each part given replaces the current one (`candidate` holding a null pointer
  // drops it).
  std::uint64_t publish(std::optional<Bundle> bundle, std::optional<DecisionLog> log,
                        std::optional<std::shared_ptr<const Bundle>> candidate = std::nullopt) {
    std::shared_ptr<const State> old;  // released after the unlock
    std::lock_guard<std::mutex> lock(mutex);
    auto next = std::make_shared<State>();
    next->bundle = bundle ? std::move(*bundle) : state->bundle;
    next->candidate = candidate ? std::move(*candidate) : state->candidate;
    next->log = log ? std::move(*log) : state->log;
    next->generation = state->generation + 1;
    old = std::exchange(state, std::move(next));
    generation.store(state->generation, std::memory_order_release);
    return state->generation;
  }

  // Counts and logs one decision, with the candidate's when it disagrees. Never throws.
  void after(const State& s, Shard* shard, const Envelope& envelope, const Context& context,
             const Decision& d, const Decision* candidate) noexcept {
    const std::uint32_t differences = candidate ? shadow_differences(d, *candidate) : 0;
    if (shard) try {
        std::lock_guard<std::mutex> lock(shard->mutex);
        if (options.count) {
          ++shard->decisions;
          ++shard->routes[static_cast<std::size_t>(d.route)];
          ++count_of(count_of(shard->rules, d.policy), d.rule);
          if (!d.exhausted.empty()) ++count_of(shard->exhausted, d.exhausted);
        }
        if (candidate) count_shadow(shard->shadow, d, *candidate, differences);
      } catch (...) {
      }
    if (s.log) try {
        s.log(DecisionRecord{envelope, context, d, differences ? candidate : nullptr, differences});
      } catch (...) {
      }
  }

  static void count_shadow(ShadowCounters& c, const Decision& live, const Decision& candidate,
                           std::uint32_t differences) {
    ++c.decisions;
    if (!differences) return;
    ++c.disagreements;
    ++c.rules[std::string(live.policy)]
             [std::string(live.rule) + " -> " + std::string(candidate.rule)];
    for (const auto& [bit, name] : kShadowDifferenceNames)
      if (differences & bit) ++c.differences[name];
  }

  // Publishes a compiled bundle as the live one or as the candidate.
  Result<std::uint64_t> install(Result<Bundle> compiled, bool as_candidate) {
    if (!compiled.ok()) return Result<std::uint64_t>::failure(std::move(compiled).diagnostics());
    Bundle bundle = std::move(*compiled);
    std::vector<Diagnostic> diagnostics = std::move(compiled).diagnostics();
    if (bundle.policies().empty()) {
      // An empty path list or an emptied directory would otherwise swap every tool to no_policy.
      diagnostics.push_back(error_diagnostic("E004",
                                             "the sources hold no policy: the current bundle stays",
                                             "reload from the files that define the policies"));
      return Result<std::uint64_t>::failure(std::move(diagnostics));
    }
    const std::uint64_t g =
        as_candidate
            ? publish(std::nullopt, std::nullopt, std::make_shared<const Bundle>(std::move(bundle)))
            : publish(std::move(bundle), std::nullopt);
    return {g, std::move(diagnostics)};
  }
};

Engine::Engine(Bundle bundle, EngineOptions options) : impl_(std::make_unique<Impl>(options)) {
  auto s = std::make_shared<State>();
  s->bundle = std::move(bundle);
  impl_->state = std::move(s);
}

Engine::~Engine() = default;

namespace {

Result<std::uint64_t> internal_error(const char* what) {
  return Result<std::uint64_t>::failure(
      error_diagnostic("E099", std::string("internal error while reloading: ") + what));
}

// A reload's result, with an exception (out of memory) turned into E099.
template <typename F>
Result<std::uint64_t> guarded(F&& reload) noexcept {
  try {
    return reload();
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
}

}  // namespace

Result<std::uint64_t> Engine::reload(const std::vector<Source>& sources,
                                     const CompileOptions& options) {
  return guarded([&] { return impl_->install(compile(sources, options), false); });
}

Result<std::uint64_t> Engine::reload_paths(const std::vector<std::string>& paths,
                                           const CompileOptions& options) {
  return guarded([&] { return impl_->install(compile_paths(paths, options), false); });
}

Result<std::uint64_t> Engine::reload_candidate(const std::vector<Source>& sources,
                                               const CompileOptions& options) {
  return guarded([&] { return impl_->install(compile(sources, options), true); });
}

Result<std::uint64_t> Engine::reload_candidate_paths(const std::vector<std::string>& paths,
                                                     const CompileOptions& options) {
  return guarded([&] { return impl_->install(compile_paths(paths, options), true); });
}

std::uint64_t Engine::set_candidate(Bundle bundle) {
  return impl_->publish(std::nullopt, std::nullopt,
                        std::make_shared<const Bundle>(std::move(bundle)));
}

std::uint64_t Engine::drop_candidate() {
  return impl_->publish(std::nullopt, std::nullopt, std::shared_ptr<const Bundle>());
}

std::shared_ptr<const Bundle> Engine::candidate() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->state->candidate;
}

std::uint64_t Engine::swap(Bundle bundle) {
  return impl_->publish(std::move(bundle), std::nullopt);
}

std::uint64_t Engine::set_log(DecisionLog log) {
  return impl_->publish(std::nullopt, std::move(log));
}

Decision Engine::decide(const Envelope& envelope, const Context& context) const noexcept {
  const Slot& slot = impl_->current();
  const Decision d = slot.pin->bundle.decide(envelope, context);
  if (const Bundle* candidate = shadowing(*slot.pin, context)) {
    const Decision shadow = candidate->decide(envelope, context);
    impl_->after(*slot.pin, slot.shard, envelope, context, d, &shadow);
  } else {
    impl_->after(*slot.pin, slot.shard, envelope, context, d, nullptr);
  }
  return d;
}

Decision Engine::unreadable(const Context& context) const noexcept {
  const Slot& slot = impl_->current();
  const Decision d = slot.pin->bundle.unreadable(context);
  if (const Bundle* candidate = shadowing(*slot.pin, context)) {
    const Decision shadow = candidate->unreadable(context);
    impl_->after(*slot.pin, slot.shard, Envelope{}, context, d, &shadow);
  } else {
    impl_->after(*slot.pin, slot.shard, Envelope{}, context, d, nullptr);
  }
  return d;
}

std::shared_ptr<const Bundle> Engine::bundle() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return std::shared_ptr<const Bundle>(impl_->state, &impl_->state->bundle);
}

std::shared_ptr<const Bundle> Engine::pinned() const {
  for (const Slot& s : slots)
    if (s.engine == impl_->id) return std::shared_ptr<const Bundle>(s.pin, &s.pin->bundle);
  return bundle();
}

std::uint64_t Engine::generation() const noexcept {
  return impl_->generation.load(std::memory_order_acquire);
}

DecisionCounters Engine::counters() const {
  DecisionCounters out;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (const auto& [thread, shard] : impl_->shards) {
    std::lock_guard<std::mutex> shard_lock(shard->mutex);
    out.decisions += shard->decisions;
    for (std::size_t r = 0; r < shard->routes.size(); ++r)
      if (shard->routes[r]) out.routes[to_string(static_cast<Route>(r))] += shard->routes[r];
    for (const auto& [policy, rules] : shard->rules)
      for (const auto& [rule, n] : rules) out.rules[policy][rule] += n;
    for (const auto& [budget, n] : shard->exhausted) out.exhausted[budget] += n;
  }
  return out;
}

ShadowCounters Engine::shadow_counters() const {
  ShadowCounters out;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (const auto& [thread, shard] : impl_->shards) {
    std::lock_guard<std::mutex> shard_lock(shard->mutex);
    const ShadowCounters& s = shard->shadow;
    out.decisions += s.decisions;
    out.disagreements += s.disagreements;
    for (const auto& [policy, pairs] : s.rules)
      for (const auto& [pair, n] : pairs) out.rules[policy][pair] += n;
    for (const auto& [name, n] : s.differences) out.differences[name] += n;
  }
  return out;
}

std::uint32_t shadow_differences(const Decision& live, const Decision& candidate) noexcept {
  std::uint32_t bits = 0;
  if (live.route != candidate.route) bits |= kShadowRoute;
  if (live.target != candidate.target) bits |= kShadowTarget;
  if (live.rule != candidate.rule || live.policy != candidate.policy) bits |= kShadowRule;
  if (live.delay_ms != candidate.delay_ms || live.retry_at_ms != candidate.retry_at_ms ||
      live.timeout_ms != candidate.timeout_ms)
    bits |= kShadowDelay;
  if (live.idempotency_key != candidate.idempotency_key) bits |= kShadowKey;
  if (live.exhausted != candidate.exhausted) bits |= kShadowExhausted;
  return bits;
}

}  // namespace recourse
