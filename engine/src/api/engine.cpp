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
};

// One immutable snapshot: what a decision needs.
struct EngineState {
  Bundle bundle;
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
    if (options.count) try {
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

  std::uint64_t publish(std::optional<Bundle> bundle, std::optional<DecisionLog> log) {
    std::shared_ptr<const State> old;  // released after the unlock
    std::lock_guard<std::mutex> lock(mutex);
    auto next = std::make_shared<State>();
    next->bundle = bundle ? std::move(*bundle) : state->bundle;
    next->log = log ? std::move(*log) : state->log;
    next->generation = state->generation + 1;
    old = std::exchange(state, std::move(next));
    generation.store(state->generation, std::memory_order_release);
    return state->generation;
  }

  // Counts and logs one decision. Never throws.
  void after(const State& s, Shard* shard, const Envelope& envelope, const Context& context,
             const Decision& d) noexcept {
    if (shard) try {
        std::lock_guard<std::mutex> lock(shard->mutex);
        ++shard->decisions;
        ++shard->routes[static_cast<std::size_t>(d.route)];
        ++count_of(count_of(shard->rules, d.policy), d.rule);
        if (!d.exhausted.empty()) ++count_of(shard->exhausted, d.exhausted);
      } catch (...) {
      }
    if (s.log) try {
        s.log(DecisionRecord{envelope, context, d});
      } catch (...) {
      }
  }

  Result<std::uint64_t> install(Result<Bundle> compiled) {
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
    return {publish(std::move(bundle), std::nullopt), std::move(diagnostics)};
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

}  // namespace

Result<std::uint64_t> Engine::reload(const std::vector<Source>& sources,
                                     const CompileOptions& options) {
  try {
    return impl_->install(compile(sources, options));
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
}

Result<std::uint64_t> Engine::reload_paths(const std::vector<std::string>& paths,
                                           const CompileOptions& options) {
  try {
    return impl_->install(compile_paths(paths, options));
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
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
  impl_->after(*slot.pin, slot.shard, envelope, context, d);
  return d;
}

Decision Engine::unreadable(const Context& context) const noexcept {
  const Slot& slot = impl_->current();
  const Decision d = slot.pin->bundle.unreadable(context);
  impl_->after(*slot.pin, slot.shard, Envelope{}, context, d);
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

}  // namespace recourse
