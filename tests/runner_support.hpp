// What the runner's tests share: an Engine over inline policies, one MemoryStore, the Health
// and a Workflow on it, and runners whose idempotency keys count ("key-1", "key-2", ...).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support.hpp"

namespace test {

/// ms since the epoch at which the tests' fake clocks start.
constexpr std::int64_t kT0 = 1'700'000'000'000;

/// A write that honours idempotency keys: retried when throttled (nothing applied) or timed out
/// (resent under its pinned key), repaired on an invalid argument, authorized, escalated.
inline const char* const kOrders = R"(version 1
policy "orders.create" {
  tool { idempotent = false  arguments = [amount, currency]  idempotency_keys = true }
  limits { attempts = 4  repairs = 1  retry_after_max = 30s  deadline = 2m  min_delay = 50ms  on_exhausted = stop }
  backoff constant base 100ms jitter none
  rule already_done when side_effect == committed -> stop
  rule throttled when code in [TRANSIENT, RATE_LIMITED] and retryable and side_effect == none -> retry
  rule keyed_resend when code == TIMEOUT -> retry
  rule fix when code == VALIDATION and field in arguments -> repair
  rule approve when code == PERMISSION -> authorize
  rule person when code == CONFLICT -> escalate
  default -> stop
}
)";

/// A write that takes no idempotency key: a timeout is an unknown outcome it may not resend.
inline const char* const kOrdersWrite = R"(version 1
policy "orders.write" {
  tool { idempotent = false  idempotency_keys = false }
  limits { attempts = 3 }
  backoff constant base 100ms jitter none
  rule lost when code == TIMEOUT -> retry
  default -> stop
}
)";

/// A read with a breaker (two failures open it for 30 s) and a fallback tool.
inline const char* const kSearch = R"(version 1
policy "search.query" {
  tool { idempotent = true  fallback = "search.cache" }
  limits { attempts = 5  deadline = 1m  min_delay = 50ms }
  breaker { failures = 2  cooldown = 30s }
  backoff constant base 200ms jitter none
  rule transient when code in [TRANSIENT, RATE_LIMITED, TIMEOUT] -> retry
  default -> stop
}
)";

struct Loop {
  explicit Loop(const std::vector<std::string>& policies)
      : store(std::make_shared<recourse::MemoryStore>()), workflow(store), health(store) {
    std::vector<recourse::Source> sources;
    for (const auto& text : policies)
      sources.push_back({"p" + std::to_string(sources.size()) + ".recourse", text});
    auto r = engine.reload(sources);
    INFO(r.message());
    REQUIRE(r.ok());
  }

  /// A spec for operation "op-1" whose keys count from "key-1".
  recourse::RunnerSpec spec(const std::string& tool, const std::string& arguments) {
    recourse::RunnerSpec s;
    s.tool = tool;
    s.arguments = arguments;
    s.operation_id = "op-1";
    s.new_key = [n = 0]() mutable { return "key-" + std::to_string(++n); };
    return s;
  }

  std::unique_ptr<recourse::Runner> runner(recourse::RunnerSpec s) {
    auto r = recourse::Runner::make(engine, workflow, health, store, std::move(s));
    INFO(r.message());
    REQUIRE(r.ok());
    return std::move(*r);
  }

  std::unique_ptr<recourse::Runner> runner(const std::string& tool, const std::string& arguments) {
    return runner(spec(tool, arguments));
  }

  recourse::Engine engine;
  std::shared_ptr<recourse::MemoryStore> store;
  recourse::Workflow workflow;
  recourse::Health health;
};

}  // namespace test
