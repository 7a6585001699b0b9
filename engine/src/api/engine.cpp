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
// engine that is gone is never matched again (its `shard` is never dereferenced).
//
// `pin` owns the snapshot through a control block of this thread's own: decisions pin their
// policy by copying it (an aliasing pointer), so the reference count they write is on a cache
// line no other thread writes, not the one every thread shares.
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
  // mutex. Never throws: without memory for a shard, the thread decides uncounted.
  // Returns nullptr only when there is no memory for the thread's pin.
  const Slot* current() noexcept {
    const std::uint64_t g = generation.load(std::memory_order_acquire);
    Slot* slot = nullptr;
    for (Slot& s : slots)
      if (s.engine == id) slot = &s;
    if (slot && slot->generation == g) return slot;
    if (!slot) slot = &slots[next_victim++ % kSlots];
    std::shared_ptr<const State> old = std::move(slot->pin);  // released after the unlock
    slot->engine = 0;
    try {
      std::lock_guard<std::mutex> lock(mutex);
      Shard* mine = nullptr;
      if (options.count) try {
          auto& owned = shards[std::this_thread::get_id()];
          if (!owned) owned = std::make_unique<Shard>();
          mine = owned.get();
        } catch (...) {
        }
      auto owner = std::make_shared<const std::shared_ptr<const State>>(state);
      slot->pin = std::shared_ptr<const State>(owner, owner->get());
      slot->engine = id;
      slot->generation = state->generation;
      slot->shard = mine;
    } catch (...) {
      return nullptr;
    }
    return slot;
  }

  // The snapshot in use (for a thread out of memory, the engine's own, under the mutex).
  std::shared_ptr<const State> fallback() noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    return state;
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

  ReloadResult install(CompileResult compiled) {
    ReloadResult r;
    r.diagnostics = std::move(compiled.diagnostics);
    r.ok = compiled.ok();
    if (r.ok && compiled.bundle->policies().empty()) {
      // An empty path list or an emptied directory would otherwise swap every tool to no_policy.
      Diagnostic d;
      d.code = "E004";
      d.message = "the sources hold no policy: the current bundle stays";
      d.help = "reload from the files that define the policies";
      r.diagnostics.push_back(std::move(d));
      r.ok = false;
    }
    r.generation = r.ok ? publish(std::move(compiled.bundle), std::nullopt)
                        : generation.load(std::memory_order_acquire);
    return r;
  }
};

Engine::Engine(Bundle bundle, EngineOptions options) : impl_(std::make_unique<Impl>(options)) {
  auto s = std::make_shared<State>();
  s->bundle = std::move(bundle);
  impl_->state = std::move(s);
}

Engine::~Engine() = default;

namespace {

ReloadResult internal_error(const std::exception& e, std::uint64_t generation) {
  ReloadResult r;
  r.generation = generation;
  Diagnostic d;
  d.code = "E099";
  d.message = std::string("internal error while reloading: ") + e.what();
  r.diagnostics.push_back(std::move(d));
  return r;
}

}  // namespace

ReloadResult Engine::reload(const std::vector<Source>& sources, const CompileOptions& options) {
  try {
    return impl_->install(compile(sources, options));
  } catch (const std::exception& e) {
    return internal_error(e, generation());
  }
}

ReloadResult Engine::reload_paths(const std::vector<std::string>& paths,
                                  const CompileOptions& options) {
  try {
    return impl_->install(compile_paths(paths, options));
  } catch (const std::exception& e) {
    return internal_error(e, generation());
  }
}

std::uint64_t Engine::swap(Bundle bundle) {
  return impl_->publish(std::move(bundle), std::nullopt);
}

std::uint64_t Engine::set_log(DecisionLog log) {
  return impl_->publish(std::nullopt, std::move(log));
}

Decision Engine::decide(const Envelope& envelope, const Context& context) const noexcept {
  const Slot* slot = impl_->current();
  if (!slot) {  // out of memory for a pin: decide with the shared snapshot, pinned the usual way
    const std::shared_ptr<const State> s = impl_->fallback();
    Decision d = s->bundle.decide(envelope, context);
    impl_->after(*s, nullptr, envelope, context, d);
    return d;
  }
  const State& s = *slot->pin;
  const Policy* p = s.bundle.find(context.tool);
  Decision d = p ? p->decide_unpinned(envelope, context) : s.bundle.decide(envelope, context);
  if (p) d.keep_alive = std::shared_ptr<const detail::Compiled>(slot->pin, p->impl_.get());
  impl_->after(s, slot->shard, envelope, context, d);
  return d;
}

Decision Engine::unreadable(const Context& context) const noexcept {
  const Slot* slot = impl_->current();
  const std::shared_ptr<const State> s = slot ? slot->pin : impl_->fallback();
  Decision d = s->bundle.unreadable(context);
  impl_->after(*s, slot ? slot->shard : nullptr, Envelope{}, context, d);
  return d;
}

std::shared_ptr<const Bundle> Engine::bundle() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return std::shared_ptr<const Bundle>(impl_->state, &impl_->state->bundle);
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
