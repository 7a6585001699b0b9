// The runner's step machine (recourse/runner.hpp): one operation from its first call to its end.
//
// Phases: Ready (a call is due at due_ms; before it, next() says Wait), Calling (a call is out;
// report() takes its Success or Failure), Asking (a repair, an authorization or a person was
// asked for; report() takes Resume or Abandon), Done. A failure is read (the envelope, else the
// raw form through the adapters with the policy's `map` lines), the context is built from the
// runner's own counts and raised by the Workflow's (Workflow::apply), the Health records the
// failure and fills the circuit, the retry tokens and the ledger's side effect
// (cli/state.cpp's order for replay), the Engine decides, and the route becomes the next phase.
//
// The idempotency key follows the call, not the operation alone (IETF
// draft-ietf-httpapi-idempotency-key-header section 2: one key per request payload): a retry
// of the same arguments to the same tool reuses it; a repair, a replacement tool and any change
// of the arguments mint a new one (../shared/cases, idempotency-key-reused-after-body-change).
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <random>

#include "eval/backoff.hpp"
#include "recourse/adapters.hpp"
#include "recourse/runner.hpp"
#include "runner/wire.hpp"
#include "table/compiled.hpp"

namespace recourse {

const char* to_string(Step step) noexcept {
  switch (step) {
    case Step::Call:
      return "call";
    case Step::Wait:
      return "wait";
    case Step::Repair:
      return "repair";
    case Step::Authorize:
      return "authorize";
    case Step::Escalate:
      return "escalate";
    case Step::Done:
      return "done";
  }
  return "unknown";
}

const char* to_string(Ending ending) noexcept {
  switch (ending) {
    case Ending::None:
      return "none";
    case Ending::Success:
      return "success";
    case Ending::Decided:
      return "decided";
    case Ending::Committed:
      return "committed";
    case Ending::Deadline:
      return "deadline";
    case Ending::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

struct Runner::State {
  enum class Phase : std::uint8_t { Ready, Calling, Asking, Done };

  State(const Engine& e, Workflow& w, Health& h, std::shared_ptr<Store> s, RunnerSpec sp)
      : engine(e), workflow(w), health(h), store(std::move(s)), spec(std::move(sp)) {
    tool = spec.tool;
    arguments = spec.arguments;
    canonical = detail::canonical_json(arguments);
    if (!spec.new_key) {
      spec.new_key = [rng = std::mt19937_64(std::random_device{}())]() mutable {
        char key[33];
        std::snprintf(key, sizeof key, "%016" PRIx64 "%016" PRIx64, rng(), rng());
        return std::string(key);
      };
    }
  }

  const Engine& engine;
  Workflow& workflow;
  Health& health;
  std::shared_ptr<Store> store;
  RunnerSpec spec;

  Phase phase = Phase::Ready;
  bool started = false;
  std::int64_t started_ms = 0;
  std::int64_t due_ms = 0;  // Ready: when the next call may start
  std::string tool, arguments;
  std::string canonical;           // `arguments` as canonical JSON (their bytes if not JSON)
  std::string key, key_arguments;  // the key, and the canonical arguments it was minted for
  bool fresh_key = false;          // the next call takes a new key (repair, replacement)
  bool claimed = false;            // the call out has a ledger entry to settle
  std::int64_t attempt = 0;        // calls of `tool`
  std::int64_t repairs = 0;
  std::int64_t replacements = 0;
  std::optional<Decision> decision;
  Envelope envelope;
  std::string envelope_tool;          // the tool whose failure `envelope` is
  std::shared_ptr<const Bundle> pin;  // keeps `decision`'s strings and the policy alive
  Action out;                         // the Call or the ask handed out, or the Done action

  std::int64_t deadline_at() const {
    return spec.deadline_ms ? started_ms + *spec.deadline_ms : kUnlimited;
  }

  // The policy of `tool` in the bundle in use, kept alive by `pin`.
  const Policy* policy() {
    if (!pin) pin = engine.bundle();
    return pin->find(tool);
  }

  Action base(Step step, std::int64_t now_ms) const {
    Action a;
    a.step = step;
    a.tool = tool;
    a.attempt = attempt;
    a.elapsed_ms = now_ms - started_ms;
    a.decision = decision;
    a.envelope = envelope;
    return a;
  }

  Action finish(Ending ending, std::int64_t now_ms) {
    phase = Phase::Done;
    out = base(Step::Done, now_ms);
    out.ending = ending;
    return out;
  }

  // The host's fact about `tool` (RunnerSpec::idempotent, for the spec's tool only), else nullopt.
  std::optional<bool> host_idempotent() const {
    return tool == spec.tool ? spec.idempotent : std::nullopt;
  }

  // Whether a call of `tool` (whose compiled policy is `ps`, or nullptr) may be repeated safely.
  bool idempotent(const detail::PolicySpec* ps) const {
    return host_idempotent().value_or(ps && ps->idempotent);
  }

  // What the runner knows of the call that just failed, before the Workflow and Health add
  // theirs.
  Context context(std::int64_t now_ms) const {
    Context c;
    c.tool = tool;
    c.idempotent = host_idempotent();
    c.operation_id = spec.operation_id;
    c.workflow_id = spec.workflow_id;
    c.attempt = std::max<std::int64_t>(attempt, 1);
    c.repairs = repairs;
    c.elapsed_ms = now_ms - started_ms;
    c.deadline_ms = spec.deadline_ms;
    c.now_ms = now_ms;
    c.idempotency_key = key;
    c.idempotency_key_pinned = !key.empty();  // a retry resends it
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016" PRIx64, detail::fnv1a(canonical));
    c.args_hash = hash;
    return c;
  }

  // Ready: the call when it is due (and `call_now`), else a wait (Done when the wait would reach
  // the deadline).
  Action ready(std::int64_t now_ms, bool call_now = true) {
    if (now_ms >= due_ms && call_now) return call(now_ms);
    if (due_ms >= deadline_at()) return finish(Ending::Deadline, now_ms);
    Action wait = base(Step::Wait, now_ms);
    wait.wait_ms = std::max<std::int64_t>(due_ms - now_ms, 0);
    return wait;
  }

  Action call(std::int64_t now_ms) {
    const Policy* p = policy();
    const detail::PolicySpec* ps = p ? &detail::compiled(*p).spec : nullptr;
    if (p) {  // the breaker admits the call first (a half-open probe takes its lease here)
      Context c = context(now_ms);
      if (health.admit(*p, c, now_ms) == CircuitState::Open) return refused(*p, now_ms);
    }
    if (ps && ps->honours_keys) {
      if (key.empty() || fresh_key || canonical != key_arguments) {
        key = spec.new_key();
        key_arguments = canonical;
      }
    } else {
      key.clear();
    }
    fresh_key = false;
    claimed = false;
    if (store && !idempotent(ps)) {  // a call that may have a side effect: claim first
      const auto entry = store->claim(spec.operation_id, key, spec.ledger_lease_ms, now_ms);
      if (entry && entry->state == LedgerState::Committed) return finish(Ending::Committed, now_ms);
      claimed = entry.has_value();  // ours to settle: one runner per operation
    }
    ++attempt;
    const Context c = context(now_ms);
    if (p) workflow.record_attempt(c, p->call_cost(), now_ms);
    out = base(Step::Call, now_ms);
    out.arguments = arguments;
    out.idempotency_key = key;
    std::int64_t timeout = ps ? ps->try_timeout_ms : kUnlimited;
    if (ps && ps->deadline_ms != kUnlimited && !spec.deadline_ms)
      timeout = std::min(timeout, ps->deadline_ms - (now_ms - started_ms));
    timeout = std::min(timeout, deadline_at() == kUnlimited ? kUnlimited : deadline_at() - now_ms);
    if (timeout != kUnlimited) out.timeout_ms = std::max<std::int64_t>(timeout, 0);
    phase = Phase::Calling;
    return out;
  }

  void succeeded(std::int64_t now_ms) {
    const Context c = context(now_ms);
    if (const Policy* p = policy()) {
      workflow.record_success(c);
      health.record_success(*p, c, now_ms);
    }
    if (claimed) store->transition(spec.operation_id, LedgerState::Committed, now_ms);
    finish(Ending::Success, now_ms);
  }

  Status failed(const Outcome& o, std::int64_t now_ms) {
    const Policy* p = policy();
    std::optional<Envelope> read = o.envelope;
    if (!read) {
      AdapterOptions options;
      if (p) options.mappings = p->mappings();
      const std::optional<Protocol> protocol = o.protocol ? o.protocol : raw_form_protocol(o.raw);
      Result<Adapted> a = from_raw(protocol, o.raw, now_ms, options);
      if (a.ok()) read = std::move(a->envelope);
    }
    Context c = context(now_ms);
    c.side_effect = o.side_effect;
    if (claimed && o.side_effect && *o.side_effect != SideEffect::Unknown)
      store->transition(
          spec.operation_id,
          *o.side_effect == SideEffect::None ? LedgerState::Released : LedgerState::Committed,
          now_ms);
    claimed = false;
    static const Envelope kNone;  // unreadable: nothing to count a repeat by
    const Envelope& e = read ? *read : kNone;
    if (p) {
      workflow.record_failure(c, e);
      workflow.apply(*p, c, now_ms);
      health.record_failure(*p, c, now_ms, &e);
      health.prepare(*p, c, now_ms);
    }
    const Decision d = read ? engine.decide(*read, c) : engine.unreadable(c);
    decided(p, c, d, read ? std::move(*read) : Envelope{});
    route(d, now_ms);
    return {};
  }

  // Keeps decision `d`, taken on `e` in context `c`, and records it.
  void decided(const Policy* p, const Context& c, const Decision& d, Envelope e) {
    pin = engine.pinned();  // the bundle `d` came from (p's, unless a reload came between)
    if (p) {
      workflow.record_decision(c, d);
      health.record_decision(*p, c, d);
    }
    decision = d;
    envelope = std::move(e);
    envelope_tool = tool;
  }

  // The breaker refused the call of `tool` (its circuit is open): nothing is called, nothing is
  // recorded on the breaker, and the Engine decides with the circuit open on the failure this
  // tool last had in this operation, else on what the refusal is (a TRANSIENT failure, as
  // Envoy's overflow 503: docs/embedding.md); a rule that would retry or repair meets the
  // policy's `circuit:open` guard and goes to `on_open`. Then the route is followed.
  Action refused(const Policy& p, std::int64_t now_ms) {
    Envelope e;
    if (decision && envelope_tool == tool) {
      e = envelope;
    } else {
      e.code = "TRANSIENT";
      e.retryable = true;
      e.message = "the circuit of this tool is open: the call was not made";
    }
    Context c = context(now_ms);
    workflow.apply(p, c, now_ms);
    health.prepare(p, c, now_ms);
    const Decision d = engine.decide(e, c);
    decided(&p, c, d, std::move(e));
    const std::string refused_tool = tool;
    route(d, now_ms);
    // A replacement is called now (bounded by max_replacements). A retry of the same tool (the
    // circuit closed meanwhile: another runner's probe succeeded) is a wait, so a circuit that
    // flaps under other threads cannot loop here.
    if (phase == Phase::Ready) return ready(now_ms, tool != refused_tool);
    return out;
  }

  void route(const Decision& d, std::int64_t now_ms) {
    switch (d.route) {
      case Route::Retry:
        phase = Phase::Ready;
        due_ms = now_ms + d.delay_ms;
        return;
      case Route::Repair:
      case Route::Authorize:
      case Route::Escalate:
        phase = Phase::Asking;
        out = base(d.route == Route::Repair      ? Step::Repair
                   : d.route == Route::Authorize ? Step::Authorize
                                                 : Step::Escalate,
                   now_ms);
        out.arguments = arguments;
        return;
      case Route::Replace:
      case Route::Degrade:  // with a target: the degraded tool is called, as a replacement
        if (d.target.empty() || replacements >= spec.max_replacements) break;
        ++replacements;
        tool = std::string(d.target);
        attempt = 0;
        fresh_key = true;
        phase = Phase::Ready;
        due_ms = now_ms + d.delay_ms;
        return;
      case Route::Stop:
        break;
    }
    finish(Ending::Decided, now_ms);
  }
};

Runner::Runner(const Engine& engine, Workflow& workflow, Health& health,
               std::shared_ptr<Store> store, RunnerSpec spec)
    : state_(std::make_unique<State>(engine, workflow, health, std::move(store), std::move(spec))) {
}

Runner::~Runner() = default;

Result<std::unique_ptr<Runner>> Runner::make(const Engine& engine, Workflow& workflow,
                                             Health& health, std::shared_ptr<Store> store,
                                             RunnerSpec spec) {
  try {
    std::string why;
    if (spec.tool.empty())
      why = "the runner's spec names no tool";
    else if (spec.operation_id.empty())
      why = "the runner's spec has no operation id";
    else if (spec.deadline_ms && *spec.deadline_ms < 0)
      why = "the runner's deadline_ms is negative";
    else if (spec.max_replacements < 0)
      why = "the runner's max_replacements is negative";
    else if (spec.ledger_lease_ms < 0)
      why = "the runner's ledger_lease_ms is negative";
    if (!why.empty())
      return Result<std::unique_ptr<Runner>>::failure(error_diagnostic("R002", why));
    return std::unique_ptr<Runner>(
        new Runner(engine, workflow, health, std::move(store), std::move(spec)));
  } catch (const std::exception& e) {
    return Result<std::unique_ptr<Runner>>::failure(
        error_diagnostic("E099", std::string("internal error: ") + e.what()));
  }
}

Action Runner::next(std::int64_t now_ms) {
  State& s = *state_;
  try {
    if (s.phase == State::Phase::Done) return s.out;
    if (!s.started) {
      s.started = true;
      s.started_ms = s.due_ms = now_ms;
    }
    if (cancelled_.load()) return s.finish(Ending::Cancelled, now_ms);
    if (now_ms >= s.deadline_at()) return s.finish(Ending::Deadline, now_ms);
    if (s.phase != State::Phase::Ready) {
      s.out.elapsed_ms = now_ms - s.started_ms;
      return s.out;
    }
    return s.ready(now_ms);
  } catch (...) {  // out of memory, or a key source that threw: end rather than loop
    s.phase = State::Phase::Done;
    s.out = Action{};
    s.out.ending = Ending::Decided;
    return s.out;
  }
}

Status Runner::report(const Outcome& o, std::int64_t now_ms) {
  State& s = *state_;
  using K = Outcome::Kind;
  auto refuse = [](const std::string& why) {
    return Status::failure(error_diagnostic("R003", why));
  };
  // After cancel(), an outcome is still recorded (the Workflow, Health and ledger see the call),
  // but an operation it ends with a decision ends cancelled; a success stays a success.
  auto ended = [&](Status status) {
    if (cancelled_.load() && s.phase == State::Phase::Done && s.out.ending == Ending::Decided)
      s.out.ending = Ending::Cancelled;
    return status;
  };
  try {
    switch (s.phase) {
      case State::Phase::Calling:
        if (o.kind == K::Success) return s.succeeded(now_ms), Status{};
        if (o.kind != K::Failure) return refuse("a call's outcome is success or failure");
        if (!o.envelope && o.raw.empty())
          return refuse("a failure needs an envelope or a raw form");
        return ended(s.failed(o, now_ms));
      case State::Phase::Asking:
        if (o.kind == K::Abandon) return s.finish(Ending::Decided, now_ms), ended(Status{});
        if (o.kind != K::Resume)
          return refuse(std::string("the answer to ") + to_string(s.out.step) +
                        " is resume or abandon");
        if (o.arguments) {
          s.arguments = *o.arguments;
          s.canonical = detail::canonical_json(s.arguments);
        }
        if (s.out.step == Step::Repair) {
          ++s.repairs;
          s.fresh_key = true;
        }
        s.phase = State::Phase::Ready;
        s.due_ms = now_ms;
        return {};
      case State::Phase::Ready:
        return refuse("no call or question is out: ask next() first");
      case State::Phase::Done:
        return refuse("the operation has ended");
    }
    return refuse("no action is pending");
  } catch (const std::exception& e) {
    return Status::failure(error_diagnostic("E099", std::string("internal error: ") + e.what()));
  }
}

Status Runner::set_arguments(std::string arguments) {
  if (state_->phase != State::Phase::Ready)
    return Status::failure(
        error_diagnostic("R003", "the arguments change only while no call or question is out"));
  state_->arguments = std::move(arguments);
  state_->canonical = detail::canonical_json(state_->arguments);
  return {};
}

void Runner::cancel() noexcept {
  cancelled_.store(true);
  { std::lock_guard<std::mutex> lock(wait_mutex_); }
  wait_cv_.notify_all();
}

}  // namespace recourse
