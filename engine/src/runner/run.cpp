// The runner's blocking form (Runner::run, recourse/runner.hpp): the step machine driven by the
// host's callbacks, with time from an injectable clock and waits through an injectable sleeper.
// The default sleeper waits on the runner's condition variable, so cancel() from another thread
// ends a wait at once; a test's sleeper advances its own clock and never sleeps.
#include <chrono>

#include "recourse/runner.hpp"

namespace recourse {

namespace {

std::int64_t system_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What a call whose callback failed reads as: a transport error the adapters map to UNKNOWN, so
// no policy retries it blind.
Outcome callback_failed() {
  Outcome o;
  o.kind = Outcome::Kind::Failure;
  o.protocol = Protocol::Http;
  o.raw = R"({"transportError":"host callback failed"})";
  return o;
}

Outcome abandoned() {
  Outcome o;
  o.kind = Outcome::Kind::Abandon;
  return o;
}

}  // namespace

Action Runner::run(const RunnerHost& host) {
  const auto now = [&] { return host.clock ? host.clock() : system_ms(); };
  const auto sleep = [&](std::int64_t ms) {
    if (host.sleep) return host.sleep(ms);
    std::unique_lock<std::mutex> lock(wait_mutex_);
    wait_cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return cancelled_.load(); });
  };
  for (;;) {
    Action a = next(now());
    Outcome o;
    try {
      switch (a.step) {
        case Step::Done:
          return a;
        case Step::Wait:
          sleep(a.wait_ms);
          continue;
        case Step::Call:
          o = host.call ? host.call(a) : callback_failed();
          if (o.kind != Outcome::Kind::Success && o.kind != Outcome::Kind::Failure)
            o = callback_failed();
          break;
        default:
          o = host.ask ? host.ask(a) : abandoned();
          if (o.kind != Outcome::Kind::Resume) o.kind = Outcome::Kind::Abandon;
          break;
      }
    } catch (...) {
      o = a.step == Step::Call ? callback_failed() : abandoned();
    }
    if (!report(o, now()).ok()) {  // a failure without envelope or raw form: read as unknown
      if (!report(callback_failed(), now()).ok()) cancel();
    }
  }
}

}  // namespace recourse
